#pragma once
// Features of a micro-batch: the analytic work that each calibrated coefficient multiplies. Built once
// per (shape, tier, GPU) with every per-shape constant precomputed, so that one evaluation is O(rows)
// arithmetic with no allocation (the planner evaluates millions of micro-batches).
//
// Step time (seconds) = sum_i c_i * x_i + max(0, c_stream * B - c_gemm * F_exp), where
//   x_fixed     = 1 per step (launches, optimizer, host work)
//   x_gemm      = TFLOPs of the dense bf16 GEMMs of the frozen base (attention projections, dense and shared-expert
//                 MLPs, MLA latent projections, LM head) on the R*W processed tokens (padding goes through every
//                 GEMM), times the pass multiplier (3: forward, two backward products; +1 forward when
//                 recomputing). A frozen weight has no weight gradient, so its real work is 2/3 of this: the
//                 multiplier is a convention that the efficiency absorbs (docs/method.md, "Per-category model")
//   x_lora_gemm = TFLOP-equivalents of the LoRA adapters' GEMMs (x A, (x A) B; fp32 under peft), times the same
//                 multiplier: their FLOPs 2 r (in + out) plus kappa x their bytes 4 (in + out) (the fp32 input read,
//                 the fp32 output written), a roofline with no overlap. A rank-r adapter GEMM does r/2 FLOPs per
//                 byte, under the fp32 ridge below r ~ 30: its time is nearly flat in r there, linear above
//                 (lora_gemm_ridge_flops_per_byte; docs/method.md, "LoRA by rank")
//   x_expert_gemm = TFLOP-equivalents of the routed experts, a roofline with no overlap (docs/method.md, "Experts
//                 by tokens per expert"): their and the router's FLOPs times the same multiplier, plus kappa_w x
//                 the expert weights the grouped GEMMs stream (B below), plus kappa_r x the routed token elements'
//                 bytes that the dispatch moves (T top_k (hidden + expert width) per MoE layer, gathered, masked,
//                 sorted and scattered; 2 reads + 1 recompute). An expert's GEMM does m FLOPs per weight byte for m
//                 tokens per expert, so its efficiency saturates as m / (m + kappa_w); files written before read
//                 FLOPs only (expert_work: per-flop)
//   x_memory    = GB moved by memory-bound kernels (norms, activations, residual adds, RoPE: model/work.hpp)
//                 times the pass multiplier; the rate absorbs what the count leaves out (LoRA's fp32 casts and
//                 dropout, copies, loss) in proportion
//   x_attention = TFLOPs of QK^T and PV on the non-math backends, per layer by its tier plan
//                 (causal half, W*min(W,window), or W*W with an explicit mask), width rounded up to the
//                 128-row tile, times 3.5 (forward + backward ~2.5x) (+1 recompute)
//                 (flash and cuDNN; layers on the memory-efficient CUTLASS kernels in x_attention_efficient)
//   x_attention_math = the same for layers that fall to the math backend (it materialises W x W)
//   x_attention_masked, x_attention_efficient_masked = x_attention and x_attention_efficient of the layers that
//                 carry an explicit mask (padding, a window the width reaches, packed rows under a block mask):
//                 W*W pairs at the masked kernel's own rate (docs/families.md, "The explicit-mask path")
//   x_mask      = GB that materialise the masks: the stack builds one R x W x W bool mask per masked layer type
//                 (1 byte an element) and SDPA turns it into an additive bias on every masked layer call (the
//                 `where` of convert_boolean_attn_mask: 1 byte read, 2 written), the CUTLASS kernel padding it to
//                 a multiple of 8 keys when W is not (2 read, 2 written); per forward (+1 recompute)
//   x_mask_path = has-explicit-mask-because-of-padding * the extra work of layers that lose is_causal
//                 (their full W*W minus causal half); a correction left for the data to select
//   x_host      = thousands of kernel launches per step (measured per tier by the harness's CUPTI count or the
//                 profiler; 1 = "1000 launches" when the count is unknown, so the coefficient is seconds per step)
//   expert streaming (files with expert_work: per-flop; the roofline above prices it otherwise):
//                 B = GB of expert weights read (distinct experts hit, E*(1-(1-k/E)^T) for T routed
//                 tokens, times layers, times 2 reads (+1 recompute)); F_exp = x_expert_gemm's expert part.
//                 A GEMM runs at max(FLOPs/rate, bytes/bandwidth): few tokens per expert are
//                 weight-streaming bound, which looks like a fixed cost that fades as the batch grows.
//
// The host issues those launches (Python, dispatcher, peft wrappers, driver) while the device runs them; the
// step is as slow as the slower side. Device time D = the sum above, host time H = c_host * x_host, and
//   step = (D^p + H^p)^(1/p)                                      (a smooth maximum; H = 0: step = D)
// with the overlap exponent p calibrated per tier: p = 1 is "the sides add up" (a synchronisation per op),
// p -> infinity is "perfect overlap" (the host runs ahead, the step is max(D, H)). Transformers + peft on the
// H200 is host-bound below ~2k tokens (docs/host.md).
//
// Peak memory (GiB) = base (weights + what trains: LoRA fp32 adapters with gradients and AdamW states, from
// the shape) + sum_j m_j * y_j with
//   y_fixed = 1 GiB (allocator slack, workspaces), y_activation = the activations the architecture implies
//   (model/memory.hpp architecture_memory: saved layer inputs + the larger of the logits path and one layer's
//   recompute working set + explicit masks, in GiB; m = 1 is the model as fitted on Gemma-4 H200 records),
//   y_token = R*W KiB and y_mask = R*W*W*masks bytes (the per-token and mask terms of coefficient files written
//   before the architecture model: optional corrections now), y_score = R*heads*W*W bytes summed over math
//   layers (materialised scores kept for backward).
// A run's micro-batch (model/run_memory.hpp RunPosition) has a base of the state alive then (AdamW's states
// only after the first optimizer step) and two more linear terms: y_run_token = R*W KiB on every micro-batch of
// a run, y_first_seen_token = R*W KiB on one whose shape is new to the process (what a run holds that a
// repeated probe step does not; docs/method.md, "Memory of a run"). The rest of the memory table prices other
// peaks than a micro-batch's allocated one: the optimizer step's temporaries (y = the trained parameters' GiB in
// their own dtype, the gradients'), the reserved memory's fragmentation share under each allocator, and the CUDA context (1 GiB).
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/adapters.hpp"
#include "model/batch.hpp"
#include "model/counts.hpp"
#include "model/gpus.hpp"
#include "model/memory_rates.hpp"
#include "model/run_memory.hpp"
#include "model/quantization.hpp"
#include "model/shape.hpp"
#include "model/tiers.hpp"

namespace stepcast::model {

enum StepTerm : int {
  kFixed = 0, kGemm, kAttention, kAttentionMath, kMaskPath, kExpertStream, kHost,
  kLoraGemm, kExpertGemm, kMemoryBound, kAttentionEfficient,  // per category (docs/method.md, "Per-category model")
  kAttentionMasked, kAttentionEfficientMasked, kMaskBytes,     // the explicit-mask path (docs/families.md)
  kStepTerms
};
enum MemoryTerm : int {
  kMemFixed = 0, kMemToken, kMemMask, kMemScore, kMemActivation,
  kMemRunToken, kMemFirstSeenToken,                   // a run's micro-batches (allocated)
  kMemOptimizerTransient,                             // the optimizer step's peak (allocated)
  kMemFragmentation, kMemExpandableFragmentation,     // reserved, by allocator
  kMemContext,                                        // the card, outside the allocator
  kMemoryTerms
};

// How a term enters the step time or the memory (the formulas above).
enum class TermForm : uint8_t {
  linear,         // c * x on the device side; a memory term: in a micro-batch's allocated peak
  expert_stream,  // max(0, c * B - c_gemm * F_exp) on the device side: the expert weight-streaming floor
  host,           // c * x on the host side of the smooth maximum (not linear in the step: no rank test)
  optimizer_peak,  // memory: in the optimizer step's allocated peak only (calibrate/fit_run_memory.cpp)
  reserved,        // memory: in the reserved peak only (planner/memory_timeline.hpp)
  device,          // memory: on the card beside the allocator's reserved memory
};

// Which terms the fit always estimates and which ones it may hold at 0 (calibrate/select.hpp).
enum class TermRole : uint8_t {
  core,      // the shape's own work: fitted wherever a record exercises it
  optional,  // held at 0 unless the data select it (t-ratio, BIC, rank; docs/method.md)
};

// One calibrated term, declared once: the fit, the coefficient files and the step formula read it from here.
struct TermSpec {
  std::string_view name;     // key in coefficient files (the unit is part of it)
  std::string_view unit;     // of the coefficient
  std::string_view feature;  // what the coefficient multiplies (units in the header comment)
  TermRole role = TermRole::optional;
  TermForm form = TermForm::linear;
  double lower_bound = 0.0;  // every term is a cost: an estimate at the bound is dropped as "the data want it lower"
  bool takes_prior = true;   // --prior regularises it toward the same term of a shipped file
  bool in_first_files = true;  // false: coefficient files written before it existed lack it (read as not selected)
  int absent_reads_as = -1;     // >= 0: a file without this term reads it as a copy of that term (converted)
  // Fitted only where a --prior (the kernel tables, tools/kernel_efficiency.py) prices it: step totals cannot
  // tell its work from another term's that grows alike (the mask bytes grow as the masked W x W pairs).
  bool table_only = false;
};

// Rows in StepTerm order (static_asserts in features.cpp check it).
inline constexpr std::array<TermSpec, kStepTerms> kStepTermTable{{
    {"fixed_s", "s", "1 per step", TermRole::optional},
    {"gemm_s_per_tflop", "s/TFLOP", "GEMM TFLOPs of the R*W processed tokens x passes", TermRole::core},
    {"attention_s_per_tflop", "s/TFLOP", "QK^T + PV TFLOPs of non-math layers x passes", TermRole::core},
    {"attention_math_s_per_tflop", "s/TFLOP", "the same on math-backend layers", TermRole::core},
    {"mask_path_s_per_tflop", "s/TFLOP", "extra work of layers that lose is_causal to padding", TermRole::optional},
    {"expert_stream_s_per_gb", "s/GB", "GB of expert weights streamed", TermRole::optional, TermForm::expert_stream},
    {"host_s_per_klaunch", "s/1000 launches", "thousands of kernel launches per step", TermRole::optional,
     TermForm::host, 0.0, true, false},
    // Files written before the split priced LoRA and expert GEMMs at gemm_s_per_tflop: read so, they predict
    // as before. A missing memory rate reads as not selected (its work was inside the GEMM rate then).
    {"lora_gemm_s_per_tflop", "s/TFLOP", "LoRA adapter GEMM TFLOPs x passes", TermRole::optional, TermForm::linear,
     0.0, true, false, kGemm},
    {"expert_gemm_s_per_tflop", "s/TFLOP", "routed-expert and router GEMM TFLOPs x passes", TermRole::optional,
     TermForm::linear, 0.0, true, false, kGemm},
    {"memory_s_per_gb", "s/GB", "GB moved by memory-bound kernels x passes", TermRole::optional, TermForm::linear,
     0.0, true, false},
    {"attention_efficient_s_per_tflop", "s/TFLOP", "QK^T + PV TFLOPs of layers on the memory-efficient backend x passes",
     TermRole::optional, TermForm::linear, 0.0, true, false, kAttention},
    // The explicit-mask path, split by backend family: a masked kernel reads the additive bias on every tile and
    // runs at its own rate (cuDNN masked ~0.6x its causal rate per pair on the H200, the CUTLASS kernel ~1.1x:
    // docs/families.md). Files without them price masked layers at the unmasked rate, as they did.
    {"attention_masked_s_per_tflop", "s/TFLOP", "QK^T + PV TFLOPs of flash/cuDNN layers with an explicit mask x passes",
     TermRole::optional, TermForm::linear, 0.0, true, false, kAttention},
    {"attention_efficient_masked_s_per_tflop", "s/TFLOP",
     "QK^T + PV TFLOPs of memory-efficient layers with an explicit mask x passes", TermRole::optional,
     TermForm::linear, 0.0, true, false, kAttentionEfficient},
    {"mask_s_per_gb", "s/GB", "GB written and read materialising the explicit masks", TermRole::optional,
     TermForm::linear, 0.0, true, false, -1, true},
}};

// Rows in MemoryTerm order.
inline constexpr std::array<TermSpec, kMemoryTerms> kMemoryTermTable{{
    {"fixed_gib", "GiB", "1 GiB", TermRole::core},
    {"token_kib", "KiB/token", "R*W KiB", TermRole::optional},
    {"mask_bytes_per_element", "bytes/element", "R*W*W*masks bytes (as GiB)", TermRole::optional},
    {"score_bytes_per_element", "bytes/element", "R*heads*W*W bytes over math layers (as GiB)", TermRole::optional},
    {"activation_scale", "1", "architecture activations GiB (model/memory.hpp)", TermRole::core, TermForm::linear,
     0.0, true, false},
    // Files written before recorded runs had memory lack the rows below: read as not selected (docs/method.md,
    // "Memory of a run"). None takes a prior: a few runs pin them, and no shipped file carries them yet.
    {"run_token_kib", "KiB/token", "R*W KiB on a run's micro-batches", TermRole::optional, TermForm::linear, 0.0, false,
     false},
    {"first_seen_token_kib", "KiB/token", "R*W KiB on a run's micro-batch of a shape new to the process",
     TermRole::optional, TermForm::linear, 0.0, false, false},
    {"optimizer_transient_scale", "1", "GiB of the trained parameters in their dtype, at the optimizer step's peak",
     TermRole::optional, TermForm::optimizer_peak, 0.0, false, false},
    {"fragmentation_share", "1", "GiB of the largest earlier working set left cached (default allocator)",
     TermRole::optional, TermForm::reserved, 0.0, false, false},
    {"expandable_fragmentation_share", "1", "the same under expandable_segments:True", TermRole::optional,
     TermForm::reserved, 0.0, false, false},
    {"context_gib", "GiB", "1 GiB: CUDA context and libraries outside the allocator", TermRole::optional,
     TermForm::device, 0.0, false, false},
}};

// Names as they appear in coefficient files, with the unit of the coefficient (from the tables above).
const std::array<std::string, kStepTerms>& step_term_names();      // "fixed_s", "gemm_s_per_tflop", ...
const std::array<std::string, kMemoryTerms>& memory_term_names();  // "fixed_gib", "token_kib", ...
// A step or memory term that older coefficient files lack (TermSpec::in_first_files == false).
bool added_after_first_files(std::string_view name);

struct StepFeatures {
  std::array<double, kStepTerms> x{};  // x[kExpertStream] = B (GB streamed)
  double expert_tflop = 0;             // F_exp: the expert share of x[kGemm]
};

struct MemoryFeatures {
  double base_gib = 0;                   // from the shape, not fitted
  std::array<double, kMemoryTerms> y{};  // units in the header comment
  // The step's peak is at least base + floor + the fixed term: a trained embedding's backward (FeatureMaker::
  // embedding_backward_gib), GiB beyond the base; 0 where the embedding is frozen.
  double floor_gib = 0;
};

// The GiB of what trains, split by lifetime (model/run_memory.hpp RunMemory): LoRA's fp32 adapters, their
// gradients and AdamW's two states, or under full fine-tuning gradients and states in the weights' dtype.
struct TrainableGib {
  double params = 0;     // 0 under full fine-tuning (the weights are the parameters)
  double gradients = 0;
  double optimizer_states = 0;
  double total() const { return params + gradients + optimizer_states; }
};

// Device seconds of the terms `terms` (any table that starts with the StepTerm rows, so that c[kExpertGemm] is
// the expert GEMM rate), coefficients c and features x, one per term. Templated so that Ceres can differentiate it.
template <typename T, typename Terms>
T device_seconds(const Terms& terms, const T* c, const double* x, double expert_tflop) {
  T device = T(0);
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].form != TermForm::linear) continue;
    // A split-off rate held at 0 (not selected, or tied by the fit) is priced at the rate it was split from,
    // and so on up the chain (a masked efficient layer: the efficient rate, else the fused one).
    size_t k = i;
    while (!(c[k] > T(0)) && terms[k].absent_reads_as >= 0) k = static_cast<size_t>(terms[k].absent_reads_as);
    device += c[k] * x[i];
  }
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].form == TermForm::expert_stream) {
      // The expert GEMM rate; a fit that ties it to the GEMM rate holds it at 0 (calibrate/fit_step.cpp).
      const T& expert_rate = c[kExpertGemm] > T(0) ? c[kExpertGemm] : c[kGemm];
      const T stream = c[i] * x[i] - expert_rate * expert_tflop;
      if (stream > T(0)) device += stream;
    }
  return device;
}

template <typename T, typename Terms>
T host_seconds(const Terms& terms, const T* c, const double* x) {
  T host = T(0);
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].form == TermForm::host) host += c[i] * x[i];
  return host;
}

// (a^p + b^p)^(1/p) for a, b >= 0, p >= 1, scaled by the larger side so that no power overflows.
template <typename T>
T smooth_max(const T& a, const T& b, double p) {
  using std::pow;
  const T big = a > b ? a : b;
  if (!(big > T(0))) return big;
  return big * pow(pow(a / big, p) + pow(b / big, p), 1.0 / p);
}

// Step seconds for coefficients c and overlap exponent p.
template <typename T, typename Terms>
T step_seconds(const Terms& terms, const T* c, const double* x, double expert_tflop, double p) {
  const T device = device_seconds(terms, c, x, expert_tflop);
  const T host = host_seconds(terms, c, x);
  return host > T(0) ? smooth_max(device, host, p) : device;
}

// The same over the model's own table, c indexed by StepTerm.
template <typename T>
T device_seconds(const T* c, const StepFeatures& f) {
  return device_seconds(kStepTermTable, c, f.x.data(), f.expert_tflop);
}
template <typename T>
T host_seconds(const T* c, const StepFeatures& f) {
  return host_seconds(kStepTermTable, c, f.x.data());
}
template <typename T>
T step_seconds(const T* c, const StepFeatures& f, double p) {
  return step_seconds(kStepTermTable, c, f.x.data(), f.expert_tflop, p);
}

// Which adapters train: rank r on the nn.Linear modules whose short names are `targets` (empty = the shape's
// own default_lora_targets, peft's all-linear); rank 0 = full fine-tuning. A measurement record names its own.
// The fp32 adapter GEMMs' time on the H200 at ranks 16, 64 and 256 (their kernels in the tables of
// measurements/records/h200-lora-rank, Llama-3-8B 2 x 4096): F / 53.9 TFLOP/s + B / 2.56 TB/s for F FLOPs and B
// bytes as x_lora_gemm counts them, i.e. 80 % of the fp32 peak and 53 % of the bandwidth (scenarios/gpus.yaml). A
// GPU's kappa is its fp32 ridge (peak_fp32_tflops / memory_bandwidth_gbs) times 0.80 / 0.53; the H200's is 21.1.
constexpr double kLoraGemmComputeShare = 0.80;
constexpr double kLoraGemmBandwidthShare = 0.53;
constexpr double kH200Fp32Ridge = 67.0e3 / 4800.0;  // FLOP per byte, for a GPU whose table lacks the figures
// peft's LoRA dropout (fused_dropout_kernel on each adapter's fp32 input, forward and recompute, and its mask's
// multiply in backward) in memory-bound bytes a pass per adapter input element, at the rate memory_s_per_gb prices
// them. Every calibration record ran dropout 0.05, so the rate holds it; lora_dropout 0 takes it out. Measured:
// Mistral-7B 2 x 2048 and 4 x 2048 with and without dropout, 43 and 88 ms apart (measurements/records/
// h200-lora-rank): 8.5 ps per adapter input element (1.245 M a token: 38,912 a layer x 32) = 0.54 bytes a pass x
// 3 passes at the H200 default's 0.00525 s/GB.
constexpr double kLoraDropoutBytesPerInput = 0.54;
double lora_gemm_bytes(const LoraPlan& lora, bool autocast = false);  // 4 (2 under autocast) (in + out) a token
double lora_gemm_ridge_flops_per_byte(const GpuInfo& gpu);      // kappa
// x_lora_gemm's work a token: `flops` (2 r (in + out)) plus kappa x the GEMMs' bytes; under autocast the FLOPs are
// bf16 tensor-core ones, counted at the GPU's fp32 / bf16 peak ratio.
double lora_work_per_token(double flops, const LoraPlan& lora, bool autocast, const GpuInfo& gpu);
// A per-FLOP adapter rate fitted at `rank` times this is the roofline rate that prices rank-`rank` adapters the same:
// the work per (in + out) element is 2 r FLOPs before, 2 r + 4 kappa after.
double lora_per_flop_to_roofline(int64_t rank, const GpuInfo& gpu);

// Routed experts on the H200 (transformers + peft, grouped_mm; the kernel tables of measurements/records/
// h200-moe-kernels, -families-runs and -families-runs-deepseek, 6 unpadded tables of 4 MoE families at 128 to 2048
// tokens per expert): grouped GEMM FLOPs at 82 % of the BF16 peak, the streamed expert weights at 71 % of the
// bandwidth and the routed token elements' bytes at 1.57 % of it, counted once per stream pass (2 on this tier).
// The routed work is the dispatch kernels (gathers, masked_fill, index backward, sort, top-k) and the memory-bound
// time a MoE table has beyond its count at the dense tables' rate (the routed activations, the weighted combine):
// least squares in relative error, experts + memory-bound within 4.5 % on every table (tools/kernel_efficiency.py
// attributes the same way). A GPU's kappa_w and kappa_r are its BF16 ridge (peak_bf16_tflops /
// memory_bandwidth_gbs) times 0.82 / 0.71 and 0.82 / 0.0157 (docs/method.md, "Experts by tokens per expert").
constexpr double kExpertGemmComputeShare = 0.82;
constexpr double kExpertStreamBandwidthShare = 0.71;
constexpr double kExpertRouteBandwidthShare = 0.0157;
constexpr double kH200Bf16Ridge = 989.4e3 / 4800.0;  // FLOP per byte, for a GPU whose table lacks the figures
// What x_expert_gemm counts: FLOPs only (coefficient files written before the roofline), or the roofline.
enum class ExpertWork : uint8_t { per_flop, roofline };
// A coefficient file's `expert_work` ("per-flop" or "roofline"); anything else is an InputError.
ExpertWork expert_work_from(const std::string& name);
double expert_stream_ridge_flops_per_byte(const GpuInfo& gpu);  // kappa_w
double expert_route_ridge_flops_per_byte(const GpuInfo& gpu);   // kappa_r

// What x_memory_bound counts (docs/method.md, "Memory-bound work"). `plain`, in files written before it: one
// read + write of each element of the norms, residual adds, RoPE and activations, at a rate that also carried the
// adapters' elementwise work of the families it was fitted on. `weighted`: the same count, plus an eager norm's
// extra passes and LoRA's own elementwise bytes per adapter in/out element, so that the rate is the model's
// elementwise rate and which modules LoRA wraps is priced. Measured on 24 transformers + peft kernel tables of 9
// families (measurements/records/h200-*/kernels; LoRA on all linear layers, attention only and MLP only on
// Llama-3-8B and OLMo-2-7B, measurements/records/h200-lora-targets): least squares in relative error of the
// non-dispatch memory-bound time on norm elements, other elements, adapter in+out elements and routed elements
// gives 82.5, 6.65, 19.8 and 26.8 ps a token each (MAPE 4.3 %, max 10.8 %, against 14.5 % and 55 % with one
// count and the adapters left in the rate). In passes of the other elements: a norm element 12.4 (transformers'
// RMSNorm upcasts to fp32 and runs pow, mean, rsqrt, two multiplies and a cast, and their backward, as separate
// kernels), an adapter in+out element 11.9 bytes (peft's fp32 cast, dropout, scale and add). The two target
// swaps alone give 15.4 ps an adapter input and 20.6 ps an output element on both families.
enum class MemoryWork : uint8_t { plain, weighted };
// A coefficient file's `memory_work` ("plain" or "weighted"); anything else is an InputError.
MemoryWork memory_work_from(const std::string& name);
constexpr double kNormPasses = 12.4;            // passes a norm element costs, weighted count
constexpr double kLoraElementwiseBytes = 11.9;  // bytes a pass per adapter (in + out) element, weighted count
// kLoraDropoutBytesPerInput's 8.5 ps per adapter input element in the weighted count's bytes: 3 passes at its rate
// of 0.554 ms/GB (6.65 ps per other element, 4 bytes a pass, 3 passes).
constexpr double kLoraDropoutBytesPerInputWeighted = 5.1;
// Under autocast (LoraChoice::autocast), read from peft's lora.Linear.forward and autograd's backward, raw bytes a
// token moves per adapter element over forward, recompute and backward (dropout on): the fp32 path moves 51 per
// input element (the fp32 cast 6, dropout 9, per pass; their backward 15 and the gradient's accumulation 6) and 68
// per output element (scale 8, the fp32 add 10 and the cast back 6, per pass; their backward 20). Autocast adds
// the cast of the dropped input to bf16 (6 a pass) and its backward (6): +18 an input element; the scale and the
// add stay bf16 and the cast back is a no-op: 24 an output element (-44). In the weighted count's bytes: the
// fp32 path's 11.9 per (in + out) element stands for 59.5 raw bytes (51 and 68 averaged; their 0.75 ratio is the
// measured 15.4 / 20.6 ps), so 1 raw byte is 11.9 / 59.5 weighted. Derived, not fitted: checked by
// measurements/campaigns/autocast-lora.yaml.
constexpr double kAutocastLoraInputBytes = kLoraElementwiseBytes * 18.0 / 59.5;
constexpr double kAutocastLoraOutputBytes = kLoraElementwiseBytes * -44.0 / 59.5;
// bf16 adapters (LoraChoice::adapter_dtype), read from the same forward and backward: x is bf16 and so is lora_A,
// so peft's input cast (6 a pass) and its backward (6) are gone, and dropout reads and writes bf16 (5 a pass and 5
// in backward against 9 and 9): an input element moves 21 raw bytes with dropout (-30) and 6 without (the
// gradient's accumulation alone, against 24: -18). The output side is autocast's: bf16 scale and add, no cast back
// (-44). Derived, not fitted: checked by measurements/campaigns/h100-bf16-adapters.yaml.
constexpr double kBf16LoraInputBytes = kLoraElementwiseBytes * -30.0 / 59.5;
constexpr double kBf16LoraInputBytesNoDropout = kLoraElementwiseBytes * -18.0 / 59.5;


struct LoraChoice {
  int64_t rank = 16;
  std::vector<std::string> targets;
  // peft's lora_dropout. Every record this project measured used 0.05 (the campaigns' default); 0 makes peft's
  // dropout an nn.Identity: no mask and no second fp32 copy of each adapter's input (model/memory.hpp).
  double dropout = 0.05;
  // The step runs under torch.autocast(bfloat16), as the HF Trainer and TRL do with bf16=True (accelerate wraps
  // the model's forward). peft's adapters stay fp32 parameters, but autocast casts each adapter's input and
  // weights to bf16, so x A and (x A) B run as bf16 tensor-core GEMMs and the adapter's output side stays bf16
  // (docs/method.md, "LoRA under autocast"). The base path is unchanged: bf16 weights, and transformers' norms,
  // RoPE and loss upcast explicitly either way. Every record before 2026-12-06 ran without it.
  bool autocast = false;
  // Full fine-tuning: no adapters (rank and targets are ignored), every parameter trains in the weights' dtype.
  // Each base GEMM then also computes its weight gradient, and AdamW updates every parameter (docs/method.md,
  // "Full fine-tuning").
  bool full = false;
  // Gradient checkpointing (every record of transformers + peft ran it). false: each layer keeps its activations for
  // the backward instead of recomputing them (--no-checkpointing; docs/method.md, "Checkpointing off"). Under a tier
  // that does not recompute, false changes nothing.
  bool checkpointing = true;
  // QLoRA: the base's nn.Linear weights in bitsandbytes' 4-bit NF4 (model/quantization.hpp): their memory, a
  // dequantization per call of each (forward, recompute, backward) and peft's clone of their outputs.
  BaseQuant base_quant = BaseQuant::none;
  // bf16 adapters: their parameters, gradients and AdamW states in bf16, and no fp32 casts or copies around them
  // (docs/method.md, "bf16 adapters"). Under autocast too, this decides: autocast's casts of bf16 are no-ops.
  AdapterDtype adapter_dtype = AdapterDtype::float32;
};

// How the choice's adapters meet the bf16 base (model/adapters.hpp); their GEMMs run on the bf16 tensor cores on
// every path but fp32.
AdapterPath adapter_path(const LoraChoice& lora);

// Checkpointing off on a recomputing tier: every rate was fitted on steps that ran each layer's forward twice, so a
// term keeps the share of its work that is not the second forward, (b + 1) / (b + 2) for a term whose backward
// does b forwards' worth of it. Estimates from the kernels' arithmetic, registered before any check:
inline constexpr double kFrozenGemmBackwardPerForward = 1.0;   // a frozen weight: the input-gradient GEMM only
inline constexpr double kTrainedGemmBackwardPerForward = 2.0;  // a trained one (LoRA adapters): input and weight
inline constexpr double kAttentionBackwardPerForward = 2.5;    // flash backward: 5 matmuls of QK^T, PV's 2
inline constexpr double kElementwiseBackwardPerForward = 1.5;  // reads the saved input and the gradient, writes one
double recompute_free_share(double backward_per_forward);
// Whether a step recomputes: the tier's rule (model::recomputes), unless the choice turns checkpointing off.
bool step_recomputes(const TierRules& tier, const LoraChoice& lora);
// Whether `checkpointing` false takes out a recompute the tier's rates were fitted with (recompute_free_share).
bool drops_recompute(const TierRules& tier, bool checkpointing);

// A trained weight adds its weight-gradient GEMM to the frozen weight's forward, recompute and input-gradient
// GEMMs: (3 + recompute) real passes against (2 + recompute). The dense and expert rates were fitted on frozen
// bases, whose real work is 2 + recompute passes of the 3 + recompute the features count (the convention above), so
// a trained base is the frozen one's x_gemm times this ratio: 4/3 under gradient checkpointing, 3/2 without.
double weight_gradient_factor(bool recompute);
// The same for a tier: transformers + peft labels carry no `ckpt`, but every record of that stack (and the executor's
// default) ran reentrant gradient checkpointing, so they recompute.
double weight_gradient_factor(const TierRules& tier);
// The same for a step of `lora` under `tier`: 3/2 where the choice turns checkpointing off (step_recomputes).
double weight_gradient_factor(const TierRules& tier, const LoraChoice& lora);

// Bytes per trained parameter that one optimizer step moves, for a parameter of `param_bytes` (2: bf16): PyTorch's
// foreach AdamW (torch.optim.AdamW's default on CUDA, as the HF Trainer's adamw_torch and this project's executor
// run it), pass by pass over (p, g, m, v) in the parameter's dtype: the decoupled weight decay p *= 1 - lr wd (r p,
// w p), m.lerp_(g) (r m g, w m), v *= b2 (r v, w v), v.addcmul_(g, g) (r v g, w v), s = sqrt(v) (r v, w s), s /= c2
// (r s, w s), s += eps (r s, w s), p.addcdiv_(m, s) (r p m s, w p): 20 element passes; then clip_grad_norm_'s
// foreach norm (r g) and scale (r g, w g): 3 more. 23 x param_bytes, 46 bytes for bf16.
double adamw_bytes_per_param(int64_t param_bytes);

// The adapters a choice wraps: its targets (empty: the family's default, peft's all-linear) at its rank; none under
// full fine-tuning.
LoraPlan plan_lora(const ModuleTable& modules, const LoraChoice& lora);

class FeatureMaker {
 public:
  FeatureMaker(const ModelShape& shape, const TierRules& tier, const GpuInfo& gpu, int64_t lora_rank = 16);
  FeatureMaker(const ModelShape& shape, const TierRules& tier, const GpuInfo& gpu, const LoraChoice& lora);
  // The same from the shape's module table, expanded once by the caller (model/modules.hpp).
  FeatureMaker(const ModelShape& shape, const ModuleTable& modules, const TierRules& tier, const GpuInfo& gpu,
               const LoraChoice& lora, ExpertWork expert_work = ExpertWork::roofline,
               MemoryWork memory_work = MemoryWork::plain);

  StepFeatures step(const MicroBatch& batch) const;
  // Kernel launches of one step of this tier (0: unknown, the host term is off).
  void set_launches_per_step(double launches) { launches_k_ = launches / 1000.0; }
  MemoryFeatures memory(const MicroBatch& batch) const;
  // A micro-batch at `at` in a run: the state alive then as its base, and the run-only terms' features.
  MemoryFeatures memory(const MicroBatch& batch, const RunPosition& at) const;
  // The execution graphs cuDNN's SDPA builds for `batch` when its rows x width is new to the process, as a set of
  // signature ids (bit i): one per distinct (q/k and v head sizes, query heads, K/V heads as passed, explicit mask
  // or is_causal) among the layer types whose plan runs cuDNN. cuDNN caches one graph per shape and signature, at
  // 0.09 s forward + 0.05 s backward of host time each (measured, docs/host.md "What a first-seen shape pays
  // for"); flash, efficient and math kernels, varlen ones included, take the shape as arguments and build none
  // (packed varlen runs pay no first-seen time: docs/planner.md "Packing, measured").
  uint32_t cudnn_graphs(const MicroBatch& batch) const;
  const TierRules& tier() const { return tier_; }
  const GpuInfo& gpu() const { return gpu_; }
  // A micro-batch of steady training: the weights and everything that trains (adapters, gradients, AdamW states).
  double base_gib() const { return weights_gib_ + lora_gib_; }
  // A step outside a run (a probe: forward, backward, zero_grad, no optimizer step): the weights, the adapters and,
  // where a recomputed layer is the peak, the gradients of the layers above it; no AdamW states. Where the loss's
  // backward is the peak, no adapter has a gradient yet (zero_grad(set_to_none=True) freed them). Measured: Llama-3-8B
  // probes at LoRA rank 256 peak 7.3 GiB under the steady state (measurements/records/h200-lora-rank). A run's
  // state is model/run_memory.hpp's RunMemory::state_gib.
  double probe_base_gib() const { return weights_gib_ + probe_trainable_gib_; }
  // Under full fine-tuning the input embedding trains, and its backward ends on a floor (docs/method.md, "Fitting a
  // run's memory"): embedding_dense_backward accumulates a bf16 / fp16 table's gradient in an fp32 V x h buffer
  // (4 V h bytes) and casts it (2 V h more while an earlier gradient waits to be added; a first gradient becomes
  // .grad, counted with the gradients). An fp32 table's new gradient is the buffer itself: 0 first, 4 V h after.
  // GiB beyond the state with every gradient alive; 0 when the embedding is frozen (LoRA).
  double embedding_backward_gib(bool accumulating) const {
    return accumulating ? embedding_backward_accumulating_gib_ : embedding_backward_first_gib_;
  }
  double weights_gib() const { return weights_gib_; }
  double lora_gib() const { return lora_gib_; }  // what trains (fp32 adapters, their gradients, AdamW states)
  bool full() const { return full_; }
  // Full fine-tuning: bytes one optimizer step moves over every parameter (adamw_bytes_per_param); 0 under LoRA,
  // whose fitted optimizer_step_s holds its adapters' update.
  double optimizer_update_bytes() const { return optimizer_update_bytes_; }
  const TrainableGib& trainable() const { return trainable_; }

  struct LayerType {
    AttentionSpec spec;
    int64_t count = 0;
    // [AttentionPath][window bites]: the harness's plan at the same width (window_needs_mask).
    LayerPlan plan[3][2];
    int8_t graph[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};  // the cuDNN graph signature id of each plan; -1: none
    const LayerPlan& at(AttentionPath path, int64_t width) const {
      return plan[static_cast<int>(path)][window_needs_mask(local_attention_size(spec), width) ? 1 : 0];
    }
    int graph_at(AttentionPath path, int64_t width) const {
      return graph[static_cast<int>(path)][window_needs_mask(local_attention_size(spec), width) ? 1 : 0];
    }
    const LayerPlan& at(bool masked, int64_t width) const {
      return at(masked ? AttentionPath::explicit_mask : AttentionPath::plain, width);
    }
  };
  const std::vector<LayerType>& layer_types() const { return types_; }

 private:
  // Weights, what trains and the activation rates from the architecture (model/memory.hpp).
  void drop_recompute();
  void set_memory_rates(const ModelShape& shape, const ModuleTable& modules, const TierRules& tier,
                        const LoraChoice& lora);

  TierRules tier_;
  GpuInfo gpu_;
  std::vector<LayerType> types_;
  double dense_flops_per_token_ = 0;   // forward, dense base GEMMs (model/work.hpp)
  double lora_flops_per_token_ = 0;    // forward, LoRA adapters
  double expert_flops_per_token_ = 0;  // forward, experts top-k only
  double router_flops_per_token_ = 0;  // forward, router projections
  double memory_bytes_per_token_ = 0;  // forward, bytes of the memory-bound kernels
  double expert_bytes_ = 0;            // one expert's weights, summed over the layers, bytes
  double num_experts_ = 0;
  double log_miss_ = 0;                // log(1 - k/E): a token misses a given expert
  ExpertWork expert_work_ = ExpertWork::roofline;
  MemoryWork memory_work_ = MemoryWork::plain;
  double expert_stream_kappa_ = 0;           // kappa_w, FLOP-equivalents per streamed weight byte
  double route_tflop_per_token_ = 0;         // kappa_r x routed bytes of one token, all MoE layers and passes, TFLOP
  double gemm_passes_ = 3;
  double lora_passes_ = 3;    // the adapters' GEMMs (gemm_passes_ but for checkpointing off: they train)
  double memory_passes_ = 3;  // the memory-bound work (gemm_passes_ but for checkpointing off)
  double attention_passes_ = 3.5;
  double attention_forward_passes_ = 1;  // of which forwards: 1, +1 recomputing
  double stream_passes_ = 2;
  double mask_passes_ = 1;  // forwards that build and convert the masks: 1, +1 recomputing
  double weights_gib_ = 0;
  double lora_gib_ = 0;
  double probe_trainable_gib_ = 0;  // what trains, alive at a probe step's peak (base_gib)
  double embedding_backward_first_gib_ = 0;         // embedding_backward_gib(false)
  double embedding_backward_accumulating_gib_ = 0;  // embedding_backward_gib(true)
  TrainableGib trainable_;
  // architecture_rates: saved inputs + max(logits, working set), and eager attention's scores, which grow as
  // W x (W + 1) (docs/families.md, "Eager attention")
  ArchitectureMemoryRates activation_rates_;
  double eager_score_bytes_ = 0;  // memory-bound bytes of one forward over one eager layer's scores, per row x W x (W + 1)
  double eager_softcap_bytes_ = 0;  // and the cap's, on a layer whose scores are capped
  double mask_bytes_ = 0;                  // architecture_rates: per element of an explicit mask
  // transformers + peft with a recomputed layer as the peak: SDPA saves the k and v that repeat_kv expanded to every
  // query head, on a path that expands them (an explicit mask: padding, a window the width reaches); bytes a token.
  double expanded_kv_bytes_per_token_ = 0;
  double launches_k_ = 0;
  bool full_ = false;
  double optimizer_update_bytes_ = 0;
  // QLoRA (LoraChoice::base_quant): the dequantizations of one micro-batch, GB whatever its tokens, and peft's clone
  // of each wrapped 4-bit layer's output, bytes a token over the step's forwards.
  double dequant_gb_ = 0;
  double clone_bytes_per_token_ = 0;
  void set_quantized_base(const ModuleTable& modules, const TierRules& tier, const LoraChoice& lora);
};

// Pairs computed by a kernel for one row, width rounded up to the kernel's 128-row tile.
double tiled_pairs(const AttentionSpec& layer, int64_t width, ScoreWork work);
// Pairs computed for a whole micro-batch on one layer under `plan`: rows x tiled_pairs at the width, or,
// for varlen, each document tiled on its own (sum of L_i^2, causal halves; each row is one document when
// the batch carries no document lengths).
double batch_pairs(const AttentionSpec& layer, const MicroBatch& batch, const LayerPlan& plan);
int64_t round_to_tile(int64_t width);
// The step term a layer's attention work goes to under `plan`: math, or the flash/cuDNN or the memory-efficient
// family, masked or not (docs/families.md, "The explicit-mask path").
StepTerm attention_term(const LayerPlan& plan);
// cuDNN's flash SDPA fed an additive bias (an explicit mask) at an odd width runs the same kernels slower per
// QK^T + PV FLOP: the forward 1.82x, the backward 1.28x (the H200's kernel tables at 2 x 3945 against 2 x 4096, both
// padded, scaled by W^2: Qwen3-8B 1.78 / 1.26, OLMoE-1B-7B 1.86 / 1.29; measurements/records/h200-width-alignment).
// Timed steps: the odd widths 3841, 3945 and 2047 pay (H200), 3945 and 2047 (H100); the even 3840, 3968, 4032, 2048
// (H200) and 3936, 3944, 3946, 3952, 3968, 2048 (H100, measurements/records/h100-aligned-widths) pay nothing, nor do
// unpadded (is_causal, no bias) widths. A bf16 bias row of an odd width is not 4-byte aligned. docs/families.md,
// "Odd widths".
constexpr int64_t kCudnnBiasAlignedWidth = 2;
constexpr double kCudnnUnalignedBiasForward = 1.82;
constexpr double kCudnnUnalignedBiasBackward = 1.28;
// transformers' eager_attention_forward over materialised bf16 scores, bytes read and written per score element in
// one forward (GPT-OSS's, docs/families.md "Eager attention"): the QK^T matmul writes them (2), `* scaling` (4),
// `+ attention_mask` (6: both read), the concatenation with the sink column (4), the row max (2), the shift by it
// (4), the softmax (4) and the contiguous copy of its first W columns that the PV matmul reads (4). Like every
// memory-bound byte (x_memory) the forward's count is multiplied by the passes; the matmuls are GEMMs.
constexpr double kEagerScoreBytesForward = 30;
// Gemma-2's eager_attention_forward caps the scores before the mask (attn_logit_softcapping, AttentionSpec::
// logit_softcap): `/ softcap`, `tanh`, `* softcap`, each reading and writing them (4 bytes an element each).
constexpr double kEagerSoftcapBytesForward = 12;
// Whether a layer under `plan` at `width` takes that path: cuDNN fed an explicit (non-varlen) mask, an odd width.
bool pays_unaligned_bias(const LayerPlan& plan, int64_t width);
// The factor on a layer's attention work under `plan` at `width` (1 but for cuDNN with a bias at an odd width),
// for `forward_passes` of its `passes` (the rest are the backward's).
double unaligned_bias_factor(const LayerPlan& plan, int64_t width, double forward_passes, double passes);
// Bytes one forward moves materialising the explicit mask of `layers` layers of one type under `plan` for
// `rows` rows of `width`: the stack's bool mask, SDPA's additive bias per layer call, the CUTLASS pad (0
// without an explicit mask, and for varlen).
double mask_bytes(const LayerPlan& plan, int64_t layers, double rows, int64_t width);

// What one layer type does for one micro-batch, in words and numbers (`stepcast describe --width W --rows ...`):
// the mask the stack builds, how K/V meet the query heads, the backend and the rule that decided it, and the
// work (docs/families.md, "The attention path, from the sources").
struct LayerPath {
  std::string type;
  int64_t layers = 0;
  AttentionSpec spec;
  LayerPlan plan;
  std::string mask;      // "none (is_causal)", "padding mask", "sliding-window mask", "block mask", "varlen", ...
  std::string kv;        // "MHA", "enable_gqa", "repeat_kv", "native (flash-attn)"
  std::string why;       // the backend rule that decided (backend_reason), or why no rule applies
  std::string work;      // "causal half", "W x W", "W x min(W, window)"
  double pairs = 0;      // (query, key) pairs computed for the whole micro-batch, per layer
  double forward_tflop = 0;  // QK^T + PV forward TFLOPs of all `layers` layers
  std::string term;      // the step term that prices it
  double mask_gb = 0;    // GB one forward moves materialising its masks
};
std::vector<LayerPath> attention_paths(const FeatureMaker& f, const MicroBatch& batch);

// The work of one step term for a micro-batch and the part of it that padded positions cause: GEMMs and
// memory-bound kernels run over every one of R x W positions (padding and the logits of labels -100 included);
// attention's padded part is its work beyond each row's own unpadded causal work.
struct PaddedShare {
  std::string term;
  double work = 0;
  double padded = 0;  // of `work`, same unit
};
std::vector<PaddedShare> padded_shares(const FeatureMaker& f, const MicroBatch& batch);

}  // namespace stepcast::model
