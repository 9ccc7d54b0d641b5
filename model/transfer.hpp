#pragma once
// Carrying calibrated coefficients to a GPU, tier or model they were not fitted on (docs/method.md, "Transfer").
//
// A compute coefficient in seconds per TFLOP is the inverse of an achieved rate; divided by the GPU's dense
// BF16 peak it is an efficiency, dimensionless:   efficiency = 1 / (c [s/TFLOP] x peak [TFLOP/s]).
// The expert-streaming coefficient (s/GB) is the same against memory bandwidth (GB/s). To another GPU a
// coefficient scales by the ratio of what the two GPUs' kernels of its category achieve, fitted to public
// measurements (model/gpu_efficiency.hpp: peak x the path's ceiling x the family's efficiency):
//   c_target = c_source x achieved_source / achieved_target
// (the LoRA adapters' fp32 GEMMs, for which nothing was published, by the ratio of FP32 peaks).
// The host-side terms (fixed seconds, seconds per thousand launches) are CPU and driver costs: they carry as they
// are to another GPU, and to another model by its kernel launches (model/launches.hpp): the launch count of the
// host term, and the part of fixed_s that is per launch (docs/method.md, "Launches"); so do the memory terms (bytes per token are the
// framework's, not the GPU's) and the run's one-off costs.
// What this leaves out (kernels tuned differently per arch, another attention backend's efficiency) is the
// transfer error measured in docs/method.md; it sets the width of a transferred prediction's interval.
#include <array>
#include <string>
#include <vector>

#include "model/coefficients.hpp"
#include "model/gpus.hpp"
#include "model/intervals.hpp"

namespace stepcast::model {

// Where a prediction's coefficients come from, most trusted first.
enum class Provenance { calibrated, transferred_model, transferred_gpu, transferred_tier, extrapolated_shape };
std::string provenance_name(Provenance p);  // "calibrated", "transferred-gpu", ...

// The sizes a GPU transfer reads the public efficiency curves at (model/gpu_efficiency.hpp); 0 = the default:
// GEMM cbrt(m n k) 4096 (a few thousand tokens through a few-thousand-wide projection), attention the geometric
// mean of the coefficients' fitted widths (4096 when unknown), memory 256 MiB a kernel (the curves' plateau).
struct TransferSizes {
  double gemm_dim = 0;
  double attention_seqlen = 0;
  double memory_bytes = 0;
};

// What the user asks to predict; an empty field means "the coefficients' own".
struct TransferAsk {
  std::string model;  // the model's name (ModelShape::name)
  std::string gpu;    // a name or alias in scenarios/gpus.yaml
  std::string tier;   // a tier label
  // Kernel launches per step of the coefficients' model and of the asked one (model/launches.hpp), 0 = unknown.
  // A model transfer with both known re-prices the host side by them; else the host side carries as it is.
  double source_launches = 0;
  double target_launches = 0;
  TransferSizes sizes{};
  // The attention kernels the stack runs when they are not its arch's (scenarios/gpus.yaml archs): "flash2" for
  // FlashAttention 2 (transformers' flash_attention_2, the flash-attn package; mma.sync code on every arch) or
  // "cudnn"; empty: the arch's. Carried by the public curves of the two families on the GPU predicted.
  std::string attention_kernels{};
};

// The attention kernel families a stack may name (TransferAsk::attention_kernels) and the path each issues on
// `arch` (flash2: mma everywhere; cudnn: the arch's native path). Throws InputError for another name.
KernelChoice attention_kernels(const std::string& family, const std::string& arch);

struct Transfer {
  Coefficients coefficients;            // what to predict with: the GPU's peaks applied, model/gpu/tier as asked
  GpuInfo gpu;                          // the GPU predicted
  std::vector<Provenance> provenance;   // {calibrated} when nothing was transferred
  std::vector<std::string> changes;     // "GPU 'NVIDIA H200' -> 'NVIDIA L40S'", one per transferred part
  // The first output line: "transferred: GPU 'A' -> 'B' (sm90 -> sm89: ...), ..." or "calibrated: ...", then,
  // for a GPU transfer, one indented line per category factor and the interval's band (gpu_evidence).
  std::string summary() const;
  bool transferred() const { return !changes.empty(); }
  // Relative half-width of the 90 % step interval of the transfers, padded and unpadded, the sum of each kind's
  // measured held-out error (model/intervals.hpp kIntervalTable, docs/method.md "Intervals"), plus the
  // extrapolated-shape error where at_shape adds it. A transferred step's interval is this, at least the stack's
  // error for the step's side (step_half_width).
  HalfWidth transfer_half_width;
  // The same for a whole run's wall clock: a model transfer's run error (kModelTransferRun) in place of its step
  // error, the other kinds as for a step (predict::Predictor::wall_clock_half_width).
  HalfWidth run_half_width;
  // Adds one transferred kind's measured errors: its step error and its run error (the same where a kind has no
  // run figure of its own), so the two half-widths always grow together.
  void add_error(const HalfWidth& step, const HalfWidth& run) {
    transfer_half_width += step;
    run_half_width += run;
  }
  void add_error(const HalfWidth& both) { add_error(both, both); }
  // The host side's stack, where it is not the one the coefficients were fitted with (model/stacks.hpp): its
  // measured error bounds a calibrated prediction's interval from below.
  StackError stack_error;
  // Why the predicted shape lies outside the coefficients' fitted domain; empty inside it or when unknown.
  std::string extrapolation;
  // A GPU transfer: per category, the factor applied and the public data it rests on (docs/gpus.md), and the
  // measured error band of the GPUs' distance; empty otherwise. Printed after the summary.
  std::vector<std::string> gpu_evidence;
};

// "domain: rows 1-8, width 1024-16384, tokens 1024-16384 (the step fit's records)", or "domain: unknown"
// for a coefficient file written before calibrate recorded it.
std::string domain_text(const ShapeDomain& d);

// `t` for one micro-batch of rows x width: outside the fitted domain (padded tokens or width above or below it)
// it gains the provenance extrapolated-shape, its `extrapolation` reason, and the interval widens by the
// held-out error measured for such shapes (docs/method.md, "Intervals"). Unchanged inside or for an unknown domain.
Transfer at_shape(const Transfer& t, int64_t rows, int64_t width);

// The relative half-width h of the 90 % step interval of a micro-batch (`padded`: a row shorter than the width),
// each kind from its own measured held-out errors (docs/method.md, "Intervals"): transferred, the transfers'
// (transfer_half_width); calibrated, the file's held-out errors (HeldOut), or for a file without them 1.645 x the
// fit's residual RMS and the coefficients' standard errors (sum of x_i * sigma_i over the features); plus the
// extrapolated-shape error outside the fitted domain.
double step_half_width(const Transfer& t, const StepFeatures& f, double step_s, bool padded);
// The 90 % step interval [step / (1 + h), step x (1 + h)] in seconds. Returns false (no interval) when the step
// is not positive.
bool step_interval(const Transfer& t, const StepFeatures& f, double step_s, bool padded, double& lo, double& hi);

// Efficiency of every step term that has one (compute terms against the BF16 peak, the expert stream against
// memory bandwidth); 0 for the host-side terms and for terms not selected.
std::array<double, kStepTerms> step_efficiencies(const Coefficients& c, const GpuInfo& gpu);

// The coefficients for `ask`. A model, GPU or tier that differs from the coefficients' needs `allowed`
// (--transfer): without it, throws InputError naming every mismatch. A GPU transfer needs both GPUs' peak
// BF16 rate (and bandwidth where the expert floor is selected) in scenarios/gpus.yaml, else InputError.
Transfer transfer_coefficients(const Coefficients& c, const TransferAsk& ask, bool allowed);

}  // namespace stepcast::model
