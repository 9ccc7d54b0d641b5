#pragma once
// Features of a micro-batch: the analytic work that each calibrated coefficient multiplies. Built once
// per (shape, tier, GPU) with every per-shape constant precomputed, so that one evaluation is O(rows)
// arithmetic with no allocation (the planner evaluates millions of micro-batches).
//
// Step time (seconds) = sum_i c_i * x_i + max(0, c_stream * B - c_gemm * F_exp), where
//   x_fixed     = 1 per step (launches, optimizer, host work)
//   x_gemm      = TFLOPs of every GEMM (dense, LoRA, router, experts top-k, LM head) on the R*W processed
//                 tokens (padding goes through every GEMM), times the pass multiplier (3: forward, two
//                 backward products; +1 forward when recomputing)
//   x_attention = TFLOPs of QK^T and PV on the non-math backends, per layer by its tier plan
//                 (causal half, W*min(W,window), or W*W with an explicit mask), width rounded up to the
//                 128-row tile, times 3.5 (forward + backward ~2.5x) (+1 recompute)
//   x_attention_math = the same for layers that fall to the math backend (it materialises W x W)
//   x_mask_path = has-explicit-mask-because-of-padding * the extra work of layers that lose is_causal
//                 (their full W*W minus causal half); free for the data to price the padding penalty
//   x_host      = thousands of kernel launches per step (measured per tier by the harness's CUPTI count or the
//                 profiler; 1 = "1000 launches" when the count is unknown, so the coefficient is seconds per step)
//   expert streaming: B = GB of expert weights read (distinct experts hit, E*(1-(1-k/E)^T) for T routed
//                 tokens, times layers, times 2 reads (+1 recompute)); F_exp = the expert part of x_gemm.
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
// Peak memory (GiB) = base (weights + LoRA params and grads, from the shape) + sum_j m_j * y_j with
//   y_fixed = 1 GiB (allocator slack, optimizer state, workspaces), y_token = R*W KiB (saved activations,
//   logits and CE per processed token), y_mask = R*W*W*masks bytes (explicit boolean masks),
//   y_score = R*heads*W*W bytes summed over math layers (materialised scores kept for backward).
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/batch.hpp"
#include "model/shape.hpp"
#include "model/tiers.hpp"

namespace stepcast::model {

enum StepTerm : int { kFixed = 0, kGemm, kAttention, kAttentionMath, kMaskPath, kExpertStream, kHost, kStepTerms };
enum MemoryTerm : int { kMemFixed = 0, kMemToken, kMemMask, kMemScore, kMemoryTerms };

// Names as they appear in coefficient files, with the unit of the coefficient.
const std::array<std::string, kStepTerms>& step_term_names();      // "fixed_s", "gemm_s_per_tflop", ...
const std::array<std::string, kMemoryTerms>& memory_term_names();  // "fixed_gib", "token_kib", ...

struct StepFeatures {
  std::array<double, kStepTerms> x{};  // x[kExpertStream] = B (GB streamed)
  double expert_tflop = 0;             // F_exp: the expert share of x[kGemm]
};

struct MemoryFeatures {
  double base_gib = 0;                   // from the shape, not fitted
  std::array<double, kMemoryTerms> y{};  // units in the header comment
};

// Device seconds: every term but the host one.
template <typename T>
T device_seconds(const T* const* c, const StepFeatures& f) {
  T linear = T(0);
  for (int i = 0; i < kStepTerms; ++i)
    if (i != kExpertStream && i != kHost) linear += *c[i] * f.x[i];
  const T stream = *c[kExpertStream] * f.x[kExpertStream] - *c[kGemm] * f.expert_tflop;
  return stream > T(0) ? linear + stream : linear;
}

template <typename T>
T host_seconds(const T* const* c, const StepFeatures& f) {
  return *c[kHost] * f.x[kHost];
}

// (a^p + b^p)^(1/p) for a, b >= 0, p >= 1, scaled by the larger side so that no power overflows.
template <typename T>
T smooth_max(const T& a, const T& b, double p) {
  using std::pow;
  const T big = a > b ? a : b;
  if (!(big > T(0))) return big;
  return big * pow(pow(a / big, p) + pow(b / big, p), 1.0 / p);
}

// Step seconds for coefficients c (indexed by StepTerm) and overlap exponent p. Templated so that Ceres
// can differentiate it.
template <typename T>
T step_seconds(const T* const* c, const StepFeatures& f, double p) {
  const T device = device_seconds(c, f);
  const T host = host_seconds(c, f);
  return host > T(0) ? smooth_max(device, host, p) : device;
}

class FeatureMaker {
 public:
  FeatureMaker(const ModelShape& shape, const TierRules& tier, const GpuInfo& gpu, int64_t lora_rank = 16);

  StepFeatures step(const MicroBatch& batch) const;
  // Kernel launches of one step of this tier (0: unknown, the host term is off).
  void set_launches_per_step(double launches) { launches_k_ = launches / 1000.0; }
  MemoryFeatures memory(const MicroBatch& batch) const;
  const TierRules& tier() const { return tier_; }
  const GpuInfo& gpu() const { return gpu_; }
  double base_gib() const { return weights_gib_ + lora_gib_; }
  double weights_gib() const { return weights_gib_; }
  double lora_gib() const { return lora_gib_; }

  struct LayerType {
    AttentionSpec spec;
    int64_t count = 0;
    // [padded or packed][window bites]: the harness's plan at the same width (window_needs_mask).
    LayerPlan plan[2][2];
    const LayerPlan& at(bool masked, int64_t width) const {
      return plan[masked ? 1 : 0][window_needs_mask(spec.window, width) ? 1 : 0];
    }
  };
  const std::vector<LayerType>& layer_types() const { return types_; }

 private:
  TierRules tier_;
  GpuInfo gpu_;
  std::vector<LayerType> types_;
  double gemm_flops_per_token_ = 0;    // forward, all GEMMs incl. experts top-k and LoRA
  double expert_flops_per_token_ = 0;  // forward, experts top-k only
  double expert_bytes_ = 0;            // one expert's weights, summed over the layers, bytes
  double num_experts_ = 0;
  double log_miss_ = 0;                // log(1 - k/E): a token misses a given expert
  double gemm_passes_ = 3;
  double attention_passes_ = 3.5;
  double stream_passes_ = 2;
  double weights_gib_ = 0;
  double lora_gib_ = 0;
  double launches_k_ = 0;
};

// Pairs computed by a kernel for one row, width rounded up to the kernel's 128-row tile.
double tiled_pairs(const AttentionSpec& layer, int64_t width, ScoreWork work);
int64_t round_to_tile(int64_t width);

}  // namespace stepcast::model
