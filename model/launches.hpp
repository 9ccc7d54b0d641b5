#pragma once
// Kernel launches of one training step, predicted from the model's module table (docs/method.md, "Launches").
//
// The host side of a step (Python, the dispatcher, peft's wrappers, the driver) costs about the same per
// kernel launch whatever the kernel does (docs/host.md), so a model with twice the launches pays about twice the
// host time. Launches are counted per module as the harness runs a step (forward, backward and the
// gradient-checkpointing forward: the harness always recomputes) and each kind of module gets one constant,
// fitted on the CUPTI tables of two models (Gemma-4 26B-A4B and Llama-3-8B, H200) and checked on three others
// (Mistral-7B, Mixtral-8x7B, Qwen3-30B-A3B): tests/model/launches_test.cpp.
#include <array>
#include <cstdint>
#include <string_view>

#include "model/adapters.hpp"
#include "model/counts.hpp"
#include "model/quantization.hpp"
#include "model/shape.hpp"
#include "model/tiers.hpp"

namespace stepcast::model {

// What launches kernels in a step, counted from expand_modules and the LoRA plan.
enum LaunchSource : int {
  kLaunchLora = 0,   // per LoRA-wrapped linear: its base GEMM, the adapter's fp32 GEMMs, casts, dropout, scale, add
  kLaunchNorm,       // per RMSNorm call (q/k norms and weightless norms included): its fp32 pow/mean/rsqrt/mul chain
  kLaunchMoeLayer,   // per layer with routed experts, grouped tier: router, top-k, sort, gather, grouped GEMMs, index_add
  kLaunchExpertHit,  // per (layer, expert) hit, loop tier: one GEMM triple and its gather/index_add per expert
  kLaunchSources
};
// Residual adds, RoPE, attention and the loss are not sources of their own: every model measured has about the
// same number per LoRA module (7 per layer in Llama and Gemma-4), so the LoRA and norm rows carry them.

struct LaunchSpec {
  std::string_view name;
  double per_unit;  // kernel launches (CUDA kernels + memcpy + memset) per step per unit
};

// Per-unit launches, fitted by least squares (tests/model/launches_test.cpp reproduces the fit's inputs).
extern const std::array<LaunchSpec, kLaunchSources> kLaunchTable;

// How many of each source a step of `shape` (its module table `modules`) under `tier` with the adapters `lora`
// has; kLaunchExpertHit is per expert hit, left at the count of (MoE layer, expert) pairs: multiply by the hit
// fraction for a given token count. The form without a LoRA plan wraps the family's default targets.
std::array<double, kLaunchSources> launch_units(const ModelShape& shape, const ModuleTable& modules,
                                               const TierRules& tier, const LoraPlan& lora);
std::array<double, kLaunchSources> launch_units(const ModelShape& shape, const TierRules& tier, int64_t lora_rank = 16);

// Launches torch.autocast(bf16) adds per LoRA-wrapped linear (LoraChoice::autocast), counted in the CUPTI tables of
// Llama-3-8B 2 x 4096 with and without autocast on one H100 (measurements/records/h100-autocast-lora/kernels: 12,699
// against 11,801 launches, 224 adapters: +4.0 each): 3 bf16 casts of inputs and 2 weight casts an adapter, one
// split-K reduction in 1.6 of the bf16 adapter GEMMs, against the fp32 result's casts back. Registered before it was
// counted, from peft's forward alone: +6 (the weights cast in both forward passes, no split-K).
constexpr double kAutocastLaunchesPerAdapter = 4.0;
// Launches bf16 adapters (AdapterDtype::bfloat16) take from each LoRA-wrapped linear, read from peft's forward and
// autograd, registered before any count: peft's fp32 plumbing goes, the input's cast to fp32 and the result's cast
// back in the forward and the recompute (4) and their backward with the fp32 add's gradient cast (3); the bf16
// adapter GEMMs bring autocast's split-K reductions (1.6 an adapter, in the autocast count above): -5.4.
constexpr double kBf16AdapterLaunchesPerAdapter = -7.0 + 1.6;

// Launches per nn.Linear of a full fine-tune (no adapters, every weight trains): its forward, recompute,
// input-gradient and weight-gradient GEMMs, plus the share of the layer's other kernels (residual adds, RoPE,
// attention, activation, copies) that the LoRA row carries per wrapped module. Counted in the CUPTI tables of
// Llama-3.2-1B 2 x 2048 on one H100, LoRA on all 112 linears against a full fine-tune
// (measurements/records/h100-full-finetune-foreach/kernels): 5,570 against 2,523 kernels, 27.2 fewer a linear than
// the LoRA row's 41.6. Both tables sit 343 launches under the model's, the same fixed part, so the per-linear
// difference is the count. Registered before it was counted at 16 (peft's forward: 4 GEMMs + a share of 12).
constexpr double kFullLaunchesPerLinear = 14.4;

// Predicted launches of one step with `tokens` routed tokens (R*W): the fraction of experts hit under uniform
// routing, 1-(1-k/E)^T, matters only for the loop tier.
class LaunchModel {
 public:
  // `full`: a full fine-tune (`lora` is then empty): kFullLaunchesPerLinear for every nn.Linear of the table.
  // `checkpointing` false on a recomputing tier: the recompute's launches go (recompute_free_share of the
  // elementwise kernels', model/features.hpp: most launches are small kernels).
  // `quant`: a QLoRA base (model/quantization.hpp): each 4-bit layer's dequantization kernels in each of its calls,
  // and peft's clone of a wrapped one's output in each forward.
  LaunchModel(const ModelShape& shape, const ModuleTable& modules, const TierRules& tier, const LoraPlan& lora,
              AdapterPath adapters = AdapterPath::fp32, bool full = false, bool checkpointing = true,
              BaseQuant quant = BaseQuant::none);
  LaunchModel(const ModelShape& shape, const TierRules& tier, int64_t lora_rank = 16);
  // Every expert hit: the count of a step with enough tokens (what a coefficient file's host term carries).
  double per_step_all_experts() const { return fixed_ + per_hit_pairs_; }
  double per_step(double tokens) const;

 private:
  double fixed_ = 0;          // launches that do not depend on the batch
  double per_hit_pairs_ = 0;  // launches per expert hit x (MoE layers x experts)
  double log_miss_ = 0;      // log(1 - k/E)
};

}  // namespace stepcast::model
