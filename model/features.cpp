#include "model/features.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "model/coefficients.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/memory.hpp"
#include "model/modules.hpp"
#include "model/work.hpp"

namespace stepcast::model {

namespace {
constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kGiB = 1073741824.0;
constexpr double kKiB = 1024.0;
constexpr int64_t kTileRows = 128;  // query/key tile of the fused attention kernels (64-128 rows)
}  // namespace

static_assert(kStepTermTable[kGemm].name == "gemm_s_per_tflop" && kStepTermTable[kHost].name == "host_s_per_klaunch" &&
                  kStepTermTable[kMemoryBound].name == "memory_s_per_gb" &&
                  kStepTermTable[kAttentionMasked].name == "attention_masked_s_per_tflop" &&
                  kStepTermTable[kMaskBytes].name == "mask_s_per_gb",
              "kStepTermTable rows follow StepTerm");
static_assert(kMemoryTermTable[kMemToken].name == "token_kib" && kMemoryTermTable[kMemScore].name == "score_bytes_per_element" &&
                  kMemoryTermTable[kMemRunToken].name == "run_token_kib" && kMemoryTermTable[kMemContext].name == "context_gib",
              "kMemoryTermTable rows follow MemoryTerm");

namespace {
template <size_t N>
std::array<std::string, N> names_of(const std::array<TermSpec, N>& table) {
  std::array<std::string, N> names;
  for (size_t i = 0; i < N; ++i) names[i] = std::string(table[i].name);
  return names;
}
}  // namespace

const std::array<std::string, kStepTerms>& step_term_names() {
  static const std::array<std::string, kStepTerms> names = names_of(kStepTermTable);
  return names;
}

const std::array<std::string, kRunTerms>& run_term_names() {
  static const std::array<std::string, kRunTerms> names{"first_seen_s", "run_start_s", "optimizer_step_s"};
  return names;
}

const std::array<std::string, kMemoryTerms>& memory_term_names() {
  static const std::array<std::string, kMemoryTerms> names = names_of(kMemoryTermTable);
  return names;
}

bool added_after_first_files(std::string_view name) {
  const auto late = [name](const TermSpec& t) { return t.name == name && !t.in_first_files; };
  return std::any_of(kStepTermTable.begin(), kStepTermTable.end(), late) ||
         std::any_of(kMemoryTermTable.begin(), kMemoryTermTable.end(), late);
}

StepTerm attention_term(const LayerPlan& plan) {
  if (plan.eager) return kGemm;  // QK^T and PV as bf16 batched matmuls (cuBLAS), not an SDPA kernel
  if (plan.backend == Backend::math) return kAttentionMath;
  const bool masked = plan.explicit_mask && !plan.varlen;
  if (plan.backend == Backend::efficient) return masked ? kAttentionEfficientMasked : kAttentionEfficient;
  return masked ? kAttentionMasked : kAttention;
}

bool pays_unaligned_bias(const LayerPlan& plan, int64_t width) {
  const bool bias = plan.explicit_mask && !plan.varlen && plan.backend == Backend::cudnn;
  return bias && width % kCudnnBiasAlignedWidth != 0;
}

double unaligned_bias_factor(const LayerPlan& plan, int64_t width, double forward_passes, double passes) {
  if (!pays_unaligned_bias(plan, width) || passes <= 0) return 1.0;
  return (kCudnnUnalignedBiasForward * forward_passes + kCudnnUnalignedBiasBackward * (passes - forward_passes)) /
         passes;
}

double mask_bytes(const LayerPlan& plan, int64_t layers, double rows, int64_t width) {
  if (!plan.explicit_mask || plan.varlen) return 0.0;
  const double w = static_cast<double>(width);
  const double elements = rows * w * w;  // one (R, 1, W, W) mask, broadcast over the heads
  constexpr double kBuildBytes = 1;      // the stack's bool mask, once per layer type
  constexpr double kBiasBytes = 3;       // convert_boolean_attn_mask's where: bool read, bf16 bias written
  // Eager: masking_utils' eager_mask turns the bool mask into the additive one once per layer type; each layer's add
  // reads it inside the eager passes (kEagerScoreBytesForward).
  if (plan.eager) return elements * (kBuildBytes + kBiasBytes);
  constexpr double kPadBytes = 4;        // preprocess_mask's pad to 8 keys: bf16 read and written
  double per_call = kBiasBytes;
  if (plan.backend == Backend::efficient && width % 8 != 0) per_call += kPadBytes;
  return elements * (kBuildBytes + per_call * static_cast<double>(layers));
}

int64_t round_to_tile(int64_t width) { return (width + kTileRows - 1) / kTileRows * kTileRows; }

double tiled_pairs(const AttentionSpec& layer, int64_t width, ScoreWork work) {
  return attended_pairs(layer, round_to_tile(width), work);
}

double batch_pairs(const AttentionSpec& layer, const MicroBatch& batch, const LayerPlan& plan) {
  double pairs = 0;
  if (!plan.varlen) return static_cast<double>(batch.num_rows()) * tiled_pairs(layer, batch.width, plan.work);
  if (batch.document_lengths.empty()) {
    for (int64_t r : batch.rows) pairs += tiled_pairs(layer, r, plan.work);
  } else {
    for (int32_t l : batch.document_lengths) pairs += tiled_pairs(layer, l, plan.work);
  }
  return pairs;
}

namespace {

// The weighted memory-bound bytes a token that the adapters' precision adds to the fp32 path's
// (kLoraElementwiseBytes, with its dropout taken out where there is none): autocast's extra casts and bf16 output
// side, or bf16 adapters' missing casts (docs/method.md, "LoRA under autocast", "bf16 adapters").
double lora_precision_bytes_per_token(const LoraPlan& lora, const LoraChoice& choice) {
  const AdapterPath path = adapter_path(choice);
  if (lora.rank <= 0 || path == AdapterPath::fp32) return 0.0;
  const auto in = static_cast<double>(lora.in_features);
  const auto out = static_cast<double>(lora.in_out_features - lora.in_features);
  const double input = path == AdapterPath::bf16
                           ? (choice.dropout > 0 ? kBf16LoraInputBytes : kBf16LoraInputBytesNoDropout)
                           : kAutocastLoraInputBytes;
  return input * in + kAutocastLoraOutputBytes * out;
}

}  // namespace

double lora_gemm_bytes(const LoraPlan& lora, bool autocast) {
  const double bytes = autocast ? 2.0 : 4.0;  // fp32 input read and output written, or bf16 under autocast
  return lora.rank > 0 ? bytes * static_cast<double>(lora.in_out_features) : 0.0;
}

double lora_per_flop_to_roofline(int64_t rank, const GpuInfo& gpu) {
  if (rank <= 0) return 1.0;
  const double flops = 2.0 * static_cast<double>(rank);
  return flops / (flops + 4.0 * lora_gemm_ridge_flops_per_byte(gpu));
}

double lora_gemm_ridge_flops_per_byte(const GpuInfo& gpu) {
  const GpuPeaks& p = gpu.peaks;
  const double ridge = p.fp32_tflops > 0 && p.memory_gbs > 0 ? p.fp32_tflops * 1e3 / p.memory_gbs : kH200Fp32Ridge;
  return ridge * kLoraGemmComputeShare / kLoraGemmBandwidthShare;
}

namespace {
double bf16_ridge(const GpuInfo& gpu) {
  const GpuPeaks& p = gpu.peaks;
  return p.bf16_tflops > 0 && p.memory_gbs > 0 ? p.bf16_tflops * 1e3 / p.memory_gbs : kH200Bf16Ridge;
}
}  // namespace

// In the fp32 rate's units (lora_gemm_s_per_tflop): the FLOPs, plus kappa x the bytes. Under autocast the FLOPs
// run on the bf16 tensor cores, so they count at the fp32 / bf16 peak ratio (1/14.8 on the H200), and the bytes
// are bf16.
double lora_work_per_token(double flops, const LoraPlan& lora, bool autocast, const GpuInfo& gpu) {
  const GpuPeaks& p = gpu.peaks;
  const double fp32_per_bf16 =
      p.fp32_tflops > 0 && p.bf16_tflops > 0 ? p.fp32_tflops / p.bf16_tflops : kH200Fp32Ridge / kH200Bf16Ridge;
  return (autocast ? fp32_per_bf16 : 1.0) * flops + lora_gemm_ridge_flops_per_byte(gpu) * lora_gemm_bytes(lora, autocast);
}

double weight_gradient_factor(bool recompute) {
  const double r = recompute ? 1.0 : 0.0;
  return (3.0 + r) / (2.0 + r);
}

double weight_gradient_factor(const TierRules& tier) { return weight_gradient_factor(recomputes(tier)); }

double weight_gradient_factor(const TierRules& tier, const LoraChoice& lora) {
  return weight_gradient_factor(step_recomputes(tier, lora));
}

double recompute_free_share(double backward_per_forward) {
  return (backward_per_forward + 1.0) / (backward_per_forward + 2.0);
}

bool step_recomputes(const TierRules& tier, const LoraChoice& lora) { return recomputes(tier) && lora.checkpointing; }

bool drops_recompute(const TierRules& tier, bool checkpointing) { return recomputes(tier) && !checkpointing; }

AdapterPath adapter_path(const LoraChoice& lora) { return adapter_path(lora.autocast, lora.adapter_dtype); }

double adamw_bytes_per_param(int64_t param_bytes) {
  constexpr double kAdamwElementPasses = 20;  // the foreach AdamW passes listed in model/features.hpp
  constexpr double kClipElementPasses = 3;    // clip_grad_norm_: the norm's read, the scale's read and write
  return (kAdamwElementPasses + kClipElementPasses) * static_cast<double>(param_bytes);
}

LoraPlan plan_lora(const ModuleTable& modules, const LoraChoice& lora) {
  if (lora.full) return {};
  return plan_lora(modules, lora.targets.empty() ? default_lora_targets(modules) : lora.targets, lora.rank);
}

ExpertWork expert_work_from(const std::string& name) {
  if (name == "per-flop") return ExpertWork::per_flop;
  if (name == "roofline") return ExpertWork::roofline;
  throw InputError("expert work '" + name + "'. Violated constraint: per-flop or roofline");
}

MemoryWork memory_work_from(const std::string& name) {
  if (name == "plain") return MemoryWork::plain;
  if (name == "weighted") return MemoryWork::weighted;
  throw InputError("memory work '" + name + "'. Violated constraint: plain or weighted");
}

double expert_stream_ridge_flops_per_byte(const GpuInfo& gpu) {
  return bf16_ridge(gpu) * kExpertGemmComputeShare / kExpertStreamBandwidthShare;
}

double expert_route_ridge_flops_per_byte(const GpuInfo& gpu) {
  return bf16_ridge(gpu) * kExpertGemmComputeShare / kExpertRouteBandwidthShare;
}

FeatureMaker::FeatureMaker(const ModelShape& shape, const TierRules& tier, const GpuInfo& gpu, int64_t lora_rank)
    : FeatureMaker(shape, tier, gpu, LoraChoice{lora_rank, {}}) {}

FeatureMaker::FeatureMaker(const ModelShape& shape, const TierRules& tier, const GpuInfo& gpu, const LoraChoice& lora_choice)
    : FeatureMaker(shape, expand_modules(shape), tier, gpu, lora_choice) {}

FeatureMaker::FeatureMaker(const ModelShape& shape, const ModuleTable& modules, const TierRules& tier, const GpuInfo& gpu,
                           const LoraChoice& lora_choice, ExpertWork expert_work, MemoryWork memory_work)
    : tier_(tier), gpu_(gpu), expert_work_(expert_work), memory_work_(memory_work) {
  if (!shape.quantization.empty())  // pricing it as bf16 would be a silently wrong answer (docs/families.md)
    throw InputError(shape.quantization_where + ": quantization_config (quant_method '" + shape.quantization +
                     "') keeps the base weights quantized in training (their memory, the dequantization each pass), "
                     "which stepcast does not model from the config. Violated constraint: no quantization_config (to price the "
                     "model as loaded in its " + shape.dtype + ", remove the key from a copy of config.json; for "
                     "bitsandbytes 4-bit NF4 add --quantize-base, docs/method.md \"QLoRA\")");
  const int sm = tier.kernel_sm > 0 ? tier.kernel_sm : gpu.sm;
  std::vector<std::array<int64_t, 5>> signatures;  // cuDNN graph signatures met, in order: their index is the id
  for (const auto& g : layers_by_type(shape)) {
    LayerType t;
    t.spec = g.spec;
    t.count = static_cast<int64_t>(g.indices.size());
    for (int path = 0; path < 3; ++path)
      for (int wide = 0; wide < 2; ++wide) {
        const bool bites = wide == 1;
        const LayerPlan& p = t.plan[path][wide] = plan_path(tier, g.spec, static_cast<AttentionPath>(path), sm, bites);
        if (p.backend != Backend::cudnn) continue;
        const std::array<int64_t, 5> sig{g.spec.head_dim, g.spec.value_dim(), g.spec.num_heads,
                                         p.expand_kv ? g.spec.num_heads : g.spec.num_kv_heads, p.explicit_mask};
        const auto it = std::find(signatures.begin(), signatures.end(), sig);
        const auto id = static_cast<size_t>(it - signatures.begin());
        if (it == signatures.end() && signatures.size() < 32) signatures.push_back(sig);
        t.graph[path][wide] = static_cast<int8_t>(std::min<size_t>(id, 31));
      }
    types_.push_back(t);
  }
  full_ = lora_choice.full;
  const LoraPlan lora = plan_lora(modules, lora_choice);
  const TokenWork work = token_work(shape, modules, lora);
  dense_flops_per_token_ = work.dense_gemm_flops + work.shared_expert_flops + work.latent_proj_flops;
  lora_flops_per_token_ = lora_work_per_token(work.lora_gemm_flops, lora, adapter_path(lora_choice) != AdapterPath::fp32, gpu);
  expert_flops_per_token_ = work.expert_gemm_flops;
  router_flops_per_token_ = work.router_flops;
  // Norms, activations, residual adds and RoPE; weighted, also an eager norm's extra passes and LoRA's own
  // elementwise bytes (kNormPasses, kLoraElementwiseBytes: docs/method.md, "Memory-bound work").
  memory_bytes_per_token_ = work.elementwise_bytes;
  const bool no_dropout = lora_choice.dropout <= 0 && lora.rank > 0;
  if (memory_work_ == MemoryWork::weighted) {
    memory_bytes_per_token_ += (kNormPasses - 1.0) * work.norm_bytes;
    if (lora.rank > 0) memory_bytes_per_token_ += kLoraElementwiseBytes * static_cast<double>(lora.in_out_features);
    if (no_dropout) memory_bytes_per_token_ -= kLoraDropoutBytesPerInputWeighted * static_cast<double>(lora.in_features);
    memory_bytes_per_token_ += lora_precision_bytes_per_token(lora, lora_choice);
  } else if (no_dropout) {
    memory_bytes_per_token_ -= kLoraDropoutBytesPerInput * static_cast<double>(lora.in_features);
  }
  for (const Module& m : modules)
    if (m.kind == ModuleKind::experts) {
      expert_bytes_ += static_cast<double>(m.weight_params() / m.copies * dtype_bytes(shape.dtype));
    }
  num_experts_ = static_cast<double>(shape.moe.num_experts);
  if (shape.moe.num_experts > 0 && shape.moe.top_k < shape.moe.num_experts)
    log_miss_ = std::log1p(-static_cast<double>(shape.moe.top_k) / num_experts_);
  const double recompute = tier.recompute ? 1.0 : 0.0;
  gemm_passes_ = lora_passes_ = memory_passes_ = 3.0 + recompute;
  attention_passes_ = 3.5 + recompute;
  attention_forward_passes_ = 1.0 + recompute;
  stream_passes_ = 2.0 + recompute;
  if (drops_recompute(tier, lora_choice.checkpointing)) drop_recompute();
  if (full_) {
    // Every base weight trains: its weight-gradient GEMM on top of the frozen passes (weight_gradient_factor). The
    // experts' and the router's too; the streamed expert weights are read no more often.
    const double factor = weight_gradient_factor(tier, lora_choice);
    dense_flops_per_token_ *= factor;
    expert_flops_per_token_ *= factor;
    router_flops_per_token_ *= factor;
    optimizer_update_bytes_ = static_cast<double>(count_params(shape, modules).total) * adamw_bytes_per_param(dtype_bytes(shape.dtype));
  }
  // The roofline's constants are grouped GEMMs' (at::_grouped_mm); a loop of per-expert GEMMs keeps the FLOP count.
  if (tier.experts != ExpertImpl::grouped) expert_work_ = ExpertWork::per_flop;
  if (expert_work_ == ExpertWork::roofline && num_experts_ > 0) {
    expert_stream_kappa_ = expert_stream_ridge_flops_per_byte(gpu);
    const double routed_bytes = work.routed_elements * static_cast<double>(dtype_bytes(shape.dtype));
    route_tflop_per_token_ = expert_route_ridge_flops_per_byte(gpu) * routed_bytes * stream_passes_ / kTera;
    // The routed rows' activations are part of that routed work (the constants were fitted so), not of the
    // memory-bound count, whose rate the dense families' tables set.
    memory_bytes_per_token_ -= work.routed_activation_bytes;
  }
  mask_passes_ = 1.0 + recompute;
  eager_score_bytes_ = kEagerScoreBytesForward * static_cast<double>(dtype_bytes(shape.dtype)) / 2.0;
  eager_softcap_bytes_ = kEagerSoftcapBytesForward * static_cast<double>(dtype_bytes(shape.dtype)) / 2.0;
  set_quantized_base(modules, tier, lora_choice);
  set_memory_rates(shape, modules, tier, lora_choice);
}

// Each call of a 4-bit layer (the forward, the recompute under checkpointing, the input gradient) dequantizes its whole
// weight to the compute dtype; peft's bnb Linear4bit clones the base output in each forward (model/quantization.hpp).
void FeatureMaker::set_quantized_base(const ModuleTable& modules, const TierRules& tier, const LoraChoice& lora) {
  if (lora.base_quant == BaseQuant::none) return;
  if (lora.full)
    throw InputError("a full fine-tune over a " + base_quant_name(lora.base_quant) + " base. Violated constraint: "
                     "4-bit bitsandbytes weights are frozen (QLoRA trains adapters): drop --full or the quantization");
  const double forwards = step_recomputes(tier, lora) ? 2.0 : 1.0;
  const LoraPlan plan = plan_lora(modules, lora);
  double params = 0;
  for (const Module& m : modules) {
    if (!quantized(m, lora.base_quant)) continue;
    params += static_cast<double>(m.weight_params());
    if (plan.rank > 0 && std::find(plan.targets.begin(), plan.targets.end(), m.short_name) != plan.targets.end())
      clone_bytes_per_token_ += 2.0 * static_cast<double>(kDequantComputeBytes * m.out_features) * forwards;  // read + write
  }
  dequant_gb_ = dequant_bytes(params, lora.base_quant, kDequantComputeBytes) * (forwards + 1.0) / kGiga;
}

// Checkpointing off (LoraChoice::checkpointing): each term loses its second forward (recompute_free_share). The
// streamed expert weights are read by the forward, the recompute and the input gradient: the frozen GEMMs' share.
void FeatureMaker::drop_recompute() {
  gemm_passes_ *= recompute_free_share(kFrozenGemmBackwardPerForward);
  stream_passes_ *= recompute_free_share(kFrozenGemmBackwardPerForward);
  lora_passes_ *= recompute_free_share(kTrainedGemmBackwardPerForward);
  attention_passes_ *= recompute_free_share(kAttentionBackwardPerForward);
  memory_passes_ *= recompute_free_share(kElementwiseBackwardPerForward);
}

void FeatureMaker::set_memory_rates(const ModelShape& shape, const ModuleTable& modules, const TierRules& tier,
                                    const LoraChoice& lora) {
  TrainingSetup setup;
  setup.lora_rank = lora.rank;
  setup.lora_targets = lora.targets;
  setup.full = lora.full;
  setup.ce_chunked = tier.ce_chunked;
  setup.softcap_in_model_dtype = tier.stack == Stack::hf_peft;
  setup.peft_layers = tier.stack == Stack::hf_peft;
  setup.lora_dropout = lora.dropout;
  setup.lora_autocast = lora.autocast;
  setup.lora_dtype = lora.adapter_dtype;
  // Activations in the weights' dtype; under autocast in bf16 (fp32 master weights of a full fine-tune included).
  setup.activation_bytes = lora.autocast ? 2 : dtype_bytes(shape.dtype);
  setup.recompute = !drops_recompute(tier, lora.checkpointing);
  setup.eager_attention = tier.eager_attn;
  setup.base_quant = lora.base_quant;
  const ArchitectureMemoryRates rates = architecture_rates(shape, modules, setup);
  weights_gib_ = rates.weight_bytes / kGiB;
  lora_gib_ = rates.trainable_bytes / kGiB;
  trainable_ = {rates.trainable_param_bytes / kGiB, rates.gradient_bytes / kGiB, rates.optimizer_state_bytes / kGiB};
  activation_rates_ = rates;
  const bool layer_peak = rates.working_set_bytes_per_token > rates.logits_bytes_per_token;
  probe_trainable_gib_ = trainable_.params + (layer_peak ? trainable_.gradients : 0.0);
  if (lora.full) {
    const double table = static_cast<double>(shape.vocab_size) * static_cast<double>(shape.hidden_size) / kGiB;
    const bool reduced = dtype_bytes(shape.dtype) < 4;  // an fp32 master table's gradient is the fp32 buffer
    embedding_backward_first_gib_ = reduced ? 4 * table : 0.0;
    embedding_backward_accumulating_gib_ = reduced ? 6 * table : 4 * table;
  }
  mask_bytes_ = rates.mask_bytes;
  // repeat_kv's copies of k and v beside the kv heads' (where the path expands): in the recomputed layer at the
  // peak, or without recompute saved by every layer's SDPA.
  if (tier.stack == Stack::hf_peft && (layer_peak || !setup.recompute))
    for (const LayerType& t : types_) {
      const double bytes = static_cast<double>(setup.activation_bytes * (t.spec.num_heads - t.spec.num_kv_heads) *
                                               (t.spec.head_dim + t.spec.value_dim()));
      expanded_kv_bytes_per_token_ = setup.recompute ? std::max(expanded_kv_bytes_per_token_, bytes)
                                                     : expanded_kv_bytes_per_token_ + bytes * static_cast<double>(t.count);
    }
}

StepFeatures FeatureMaker::step(const MicroBatch& batch) const {
  StepFeatures f;
  const double rows = static_cast<double>(batch.rows.size());
  const double tokens = rows * static_cast<double>(batch.width);
  const AttentionPath path = attention_path(batch);
  f.x[kFixed] = 1.0;
  f.x[kHost] = launches_k_;
  f.x[kGemm] = tokens * dense_flops_per_token_ * gemm_passes_ / kTera;
  f.x[kLoraGemm] = tokens * lora_flops_per_token_ * lora_passes_ / kTera;
  f.expert_tflop = tokens * expert_flops_per_token_ * gemm_passes_ / kTera;
  f.x[kExpertGemm] = f.expert_tflop + tokens * router_flops_per_token_ * gemm_passes_ / kTera;
  f.x[kMemoryBound] = tokens * (memory_bytes_per_token_ * memory_passes_ + clone_bytes_per_token_) / kGiga + dequant_gb_;
  for (const LayerType& t : types_) {
    const LayerPlan& plan = t.at(path, batch.width);
    const LayerPlan& plain = t.at(AttentionPath::plain, batch.width);
    // 2 heads (qk_dim + v_dim) per (query, key) pair: MLA's q/k heads (nope + rope) are wider than its v heads.
    const double per_pair = AttentionWork{std::string(), t.count, t.spec}.flops_per_pair() *
                            static_cast<double>(t.count) * attention_passes_ / kTera;
    const double work = per_pair * batch_pairs(t.spec, batch, plan) *
                        unaligned_bias_factor(plan, batch.width, attention_forward_passes_, attention_passes_);
    f.x[attention_term(plan)] += work;
    if (plan.eager) {  // the passes over the materialised scores, heads x W x (W + 1) a row (the sink column included)
      const double bytes = eager_score_bytes_ + (t.spec.logit_softcap > 0 ? eager_softcap_bytes_ : 0.0);
      f.x[kMemoryBound] += rows * static_cast<double>(t.spec.num_heads * t.count) * static_cast<double>(batch.width) *
                           static_cast<double>(batch.width + 1) * bytes * memory_passes_ / kGiga;
    }
    if (plan.explicit_mask && !plain.explicit_mask)
      f.x[kMaskPath] += work - per_pair * rows * tiled_pairs(t.spec, batch.width, plain.work);
    f.x[kMaskBytes] += mask_bytes(plan, t.count, rows, batch.width) * mask_passes_ / kGiga;
  }
  if (num_experts_ > 0) {
    // Distinct experts hit per layer by T routed tokens under uniform routing: E*(1-(1-k/E)^T).
    const double hit = num_experts_ * (1.0 - std::exp(tokens * log_miss_));
    const double streamed_bytes = hit * expert_bytes_ * stream_passes_;
    if (expert_work_ == ExpertWork::roofline)  // the roofline prices the streamed weights: no floor beside it
      f.x[kExpertGemm] += expert_stream_kappa_ * streamed_bytes / kTera + tokens * route_tflop_per_token_;
    else
      f.x[kExpertStream] = streamed_bytes / kGiga;
  }
  return f;
}

uint32_t FeatureMaker::cudnn_graphs(const MicroBatch& batch) const {
  const AttentionPath path = attention_path(batch);
  uint32_t graphs = 0;
  for (const LayerType& t : types_) {
    const int id = t.graph_at(path, batch.width);
    if (id >= 0) graphs |= 1u << id;
  }
  return graphs;
}

MemoryFeatures FeatureMaker::memory(const MicroBatch& batch) const {
  MemoryFeatures m;
  m.base_gib = base_gib();
  const double rows = static_cast<double>(batch.rows.size());
  const double w = static_cast<double>(batch.width);
  const AttentionPath path = attention_path(batch);
  m.y[kMemFixed] = 1.0;
  m.y[kMemToken] = rows * w * kKiB / kGiB;
  double masks = 0;  // one boolean mask per layer type that has an explicit mask (HF builds one per type)
  for (const LayerType& t : types_) {
    const LayerPlan& plan = t.at(path, batch.width);
    if (plan.explicit_mask) masks += 1;
    // SDPA's math backend; eager scores are in the architecture's activations below.
    if (plan.backend == Backend::math && !plan.eager)
      m.y[kMemScore] += rows * static_cast<double>(t.spec.num_heads * t.count) * w * w / kGiB;
  }
  m.y[kMemMask] = rows * w * w * masks / kGiB;
  const double tokens = rows * w, scores = rows * w * (w + 1);
  m.y[kMemActivation] = activation_rates_.step_bytes(tokens, scores) / kGiB + m.y[kMemMask] * mask_bytes_;
  if (expanded_kv_bytes_per_token_ > 0 &&
      std::any_of(types_.begin(), types_.end(), [&](const LayerType& t) { return t.at(path, batch.width).expand_kv; }))
    m.y[kMemActivation] += rows * w * expanded_kv_bytes_per_token_ / kGiB;
  m.floor_gib = embedding_backward_gib(true);  // steady training: an earlier gradient waits to be added
  return m;
}

namespace {

std::string mask_words(const FeatureMaker::LayerType& t, const MicroBatch& batch, const LayerPlan& plan) {
  const AttentionPath path = attention_path(batch);
  if (plan.varlen && batch.has_padding() && !batch.packed) return "varlen (padding removed, no mask)";
  if (plan.varlen) return "varlen (documents by cumulative offsets, no mask)";
  if (plan.eager && !batch.packed && !batch.has_padding())
    return t.spec.window > 0 ? "eager sliding-window mask (always built)" : "eager causal mask (always built)";
  if (!plan.explicit_mask) {
    return path == AttentionPath::plain && batch.packed ? "none (is_causal; documents attend across)"
                                                        : "none (is_causal)";
  }
  if (batch.packed) return "block mask (packed documents)";
  const bool local = window_needs_mask(local_attention_size(t.spec), batch.width);
  const std::string local_kind = t.spec.window > 0 ? "sliding-window" : "chunk";
  if (local && batch.has_padding()) return local_kind + " + padding mask";
  if (local) return local_kind + " mask (width " + std::to_string(batch.width) + " >= " +
                    std::to_string(local_attention_size(t.spec)) + ")";
  if (batch.has_padding()) return "padding mask";
  return "explicit mask (the tier's mask-explicit)";
}

// Two decimals (model/ sits below report/, whose report::fixed it cannot call).
std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string kv_words(const AttentionSpec& spec, const LayerPlan& plan, const TierRules& tier) {
  if (spec.num_kv_heads <= 0 || spec.num_kv_heads == spec.num_heads) return "MHA";
  if (plan.expand_kv) return "repeat_kv";
  return tier.flash_attn ? "native (flash-attn)" : "enable_gqa";  // flash-attn takes fewer K/V heads itself
}

std::string work_words(const LayerPlan& plan) {
  switch (plan.work) {
    case ScoreWork::causal: return plan.varlen ? "causal half per document" : "causal half";
    case ScoreWork::causal_window: return plan.varlen ? "W x min(W, window) per document" : "W x min(W, window)";
    case ScoreWork::full_square: return "W x W";
  }
  return "";
}

std::string why_words(const FeatureMaker& f, const AttentionSpec& spec, const LayerPlan& plan, int sm) {
  const TierRules& tier = f.tier();
  if (plan.eager && !spec.eager)
    return "eager: the tier's attn_implementation=\"eager\" (eager_attention_forward on every layer); eager_mask "
           "always, repeat_kv, W x W scores materialised in the activations' dtype";
  if (plan.eager)
    return "eager: transformers' default for this family (its model class declares _supports_sdpa = False), on every "
           "tier; eager_mask always, repeat_kv, W x (W + 1) scores with the sink column materialised in the "
           "activations' dtype";
  if (!tier.known) return "unknown tier '" + tier.label + "': one attention rate, the data decide";
  if (tier.flash_attn)
    return "transformers' flash_attention_2: the flash-attn package (no mask; padded or packed rows unpadded to its "
           "varlen entry point; window and GQA native)";
  if (!tier.auto_backend) return "forced by the tier (" + attention_name(tier) + ")";
  if (plan.varlen) return "varlen entry point: flash for one head width <= 256, else the CUTLASS kernel";
  return backend_reason(spec, plan.explicit_mask, !plan.expand_kv, sm);
}

}  // namespace

std::vector<LayerPath> attention_paths(const FeatureMaker& f, const MicroBatch& batch) {
  const int sm = f.tier().kernel_sm > 0 ? f.tier().kernel_sm : f.gpu().sm;
  const AttentionPath path = attention_path(batch);
  std::vector<LayerPath> out;
  for (const auto& t : f.layer_types()) {
    LayerPath p;
    p.type = t.spec.type;
    p.layers = t.count;
    p.spec = t.spec;
    p.plan = t.at(path, batch.width);
    p.mask = mask_words(t, batch, p.plan);
    if (pays_unaligned_bias(p.plan, batch.width))
      p.mask += "; odd width " + std::to_string(batch.width) + ": cuDNN's slower bias path, forward x" +
                fixed2(kCudnnUnalignedBiasForward) + ", backward x" + fixed2(kCudnnUnalignedBiasBackward);
    p.kv = kv_words(t.spec, p.plan, f.tier());
    p.why = why_words(f, t.spec, p.plan, sm);
    p.work = work_words(p.plan);
    p.pairs = batch_pairs(t.spec, batch, p.plan);
    p.forward_tflop = AttentionWork{p.type, t.count, t.spec}.flops_per_pair() * static_cast<double>(t.count) * p.pairs / kTera;
    p.term = std::string(kStepTermTable[attention_term(p.plan)].name);
    if (p.plan.eager) p.term += " (QK^T, PV) + memory_s_per_gb (the passes over the scores)";
    p.mask_gb = mask_bytes(p.plan, t.count, static_cast<double>(batch.num_rows()), batch.width) / kGiga;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<PaddedShare> padded_shares(const FeatureMaker& f, const MicroBatch& batch) {
  const StepFeatures all = f.step(batch);
  // Each row alone at its own length: no padding, no padding mask (a window the row reaches keeps its mask).
  StepFeatures own;
  for (int64_t r : batch.rows) {
    if (r <= 0) continue;
    MicroBatch one;
    one.rows = {r};
    one.width = r;
    const StepFeatures x = f.step(one);
    for (int i = 0; i < kStepTerms; ++i) own.x[i] += x.x[i];
  }
  const double real_share = static_cast<double>(batch.real_tokens()) / static_cast<double>(batch.padded_tokens());
  std::vector<PaddedShare> out;
  for (int i : {kGemm, kLoraGemm, kExpertGemm, kMemoryBound}) {
    const double work = all.x[i];
    out.push_back({std::string(kStepTermTable[i].name), work, work * (1.0 - real_share)});
  }
  double attention = 0, unpadded = 0;
  for (int i : {kAttention, kAttentionMasked, kAttentionEfficient, kAttentionEfficientMasked, kAttentionMath}) {
    attention += all.x[i];
    unpadded += own.x[i];
  }
  out.push_back({"attention (all backends), TFLOP x passes", attention, std::max(0.0, attention - unpadded)});
  out.push_back({std::string(kStepTermTable[kMaskBytes].name), all.x[kMaskBytes],
                 std::max(0.0, all.x[kMaskBytes] - own.x[kMaskBytes])});
  return out;
}

MemoryFeatures FeatureMaker::memory(const MicroBatch& batch, const RunPosition& at) const {
  MemoryFeatures m = memory(batch);
  if (!at.in_run) {
    m.base_gib = probe_base_gib();
    // A probe frees its gradients between repetitions: at the end of its backward every gradient is alive (those
    // the base leaves out too) and the embedding's first one is being cast.
    m.floor_gib = trainable_.gradients - (probe_trainable_gib_ - trainable_.params) + embedding_backward_gib(false);
    return m;
  }
  // The state of model/run_memory.hpp RunMemory::state_gib: AdamW's states only once a step has made them.
  m.base_gib = weights_gib_ + trainable_.params + trainable_.gradients +
               (at.after_optimizer_step ? trainable_.optimizer_states : 0.0);
  m.y[kMemRunToken] = m.y[kMemToken];
  if (at.first_seen) m.y[kMemFirstSeenToken] = m.y[kMemToken];
  m.floor_gib = embedding_backward_gib(true);  // the base counts every gradient alive (conservative, as the state)
  return m;
}

}  // namespace stepcast::model
