#include "model/launches.hpp"

#include <algorithm>
#include <cmath>

#include "model/counts.hpp"
#include "model/features.hpp"
#include "model/modules.hpp"

namespace stepcast::model {

// Launches = kernels + memcpy + memset per step in the CUPTI tables (measurements/records/*.kernels, H200,
// transformers + peft through the harness, gradient checkpointing on). Fitted (docs/method.md, "Launches"):
// moe_layer = the launches of kernel names that Llama-3-8B's tables never show (routing, sort, dispatch, grouped
// GEMMs) in Gemma-4's 7 grouped tables, 3 212 on average, per its 30 MoE layers; lora and norm solve Llama-3-8B
// (224 LoRA modules, 65 norms: 11 788 launches, 3 tables) and Gemma-4 grouped (205, 331, 30 MoE layers: 24 317,
// 7 tables) exactly; expert_hit is Gemma-4 loop's remainder (229 434, 2 tables) per its 30 x 128 expert pairs.
// Checked, not fitted: Mistral-7B -2 %, Qwen3-30B-A3B -9 %, Mixtral-8x7B -13 % (the names-only MoE count
// misses the generic casts and muls that routing also launches). tests/model/launches_test.cpp.
const std::array<LaunchSpec, kLaunchSources> kLaunchTable{{
    {"lora", 41.60},
    {"norm", 38.00},
    {"moe_layer", 107.1},
    {"expert_hit", 54.25},
}};

std::array<double, kLaunchSources> launch_units(const ModelShape& shape, const TierRules& tier, int64_t lora_rank) {
  const ModuleTable modules = expand_modules(shape);
  return launch_units(shape, modules, tier, plan_lora(modules, default_lora_targets(modules), lora_rank));
}

std::array<double, kLaunchSources> launch_units(const ModelShape& shape, const ModuleTable& modules,
                                               const TierRules& tier, const LoraPlan& lora) {
  std::array<double, kLaunchSources> n{};
  for (const Module& m : modules) {
    if (m.kind == ModuleKind::norm) n[kLaunchNorm] += 1;
    // Stacked experts come as two tensors per layer (gate_up and down): count the layer once.
    if (m.kind == ModuleKind::experts && m.short_name == "down_proj") {
      if (tier.experts == ExpertImpl::grouped) n[kLaunchMoeLayer] += 1;
      else n[kLaunchExpertHit] += static_cast<double>(m.copies);
    }
  }
  // Norms without a weight launch the same kernels: Gemma-4's v_norm on every layer and its router's norm on
  // every MoE layer (transformers' Gemma4 modules; 331 RMSNorm calls per forward in its CUPTI tables).
  const double layers = static_cast<double>(shape.num_layers());
  if (shape.family.v_norm) n[kLaunchNorm] += layers;
  const double moe_layers = n[kLaunchMoeLayer] + n[kLaunchExpertHit] / std::max<double>(1, shape.moe.num_experts);
  if (shape.family.router_scales) n[kLaunchNorm] += moe_layers;
  n[kLaunchLora] = static_cast<double>(lora.modules);
  return n;
}

LaunchModel::LaunchModel(const ModelShape& shape, const TierRules& tier, int64_t lora_rank) {
  const ModuleTable modules = expand_modules(shape);
  *this = LaunchModel(shape, modules, tier, plan_lora(modules, default_lora_targets(modules), lora_rank));
}

LaunchModel::LaunchModel(const ModelShape& shape, const ModuleTable& modules, const TierRules& tier, const LoraPlan& lora,
                         AdapterPath adapters, bool full, bool checkpointing, BaseQuant quant) {
  const auto n = launch_units(shape, modules, tier, lora);
  for (int i = 0; i < kLaunchSources; ++i)
    if (i != kLaunchExpertHit) fixed_ += n[i] * kLaunchTable[i].per_unit;
  if (adapters == AdapterPath::autocast) fixed_ += n[kLaunchLora] * kAutocastLaunchesPerAdapter;
  if (adapters == AdapterPath::bf16) fixed_ += n[kLaunchLora] * kBf16AdapterLaunchesPerAdapter;
  if (full)
    for (const Module& m : modules)
      if (m.kind == ModuleKind::linear) fixed_ += static_cast<double>(m.copies) * kFullLaunchesPerLinear;
  per_hit_pairs_ = n[kLaunchExpertHit] * kLaunchTable[kLaunchExpertHit].per_unit;
  if (quant != BaseQuant::none) {
    // Counted as the harness counts: forward, recompute and input gradient, the recompute's share dropped below.
    for (const Module& m : modules) {
      if (!quantized(m, quant)) continue;
      const bool wrapped = std::find(lora.targets.begin(), lora.targets.end(), m.short_name) != lora.targets.end();
      fixed_ += 3.0 * dequant_launches(quant) + (wrapped ? 2.0 : 0.0);
    }
  }
  if (drops_recompute(tier, checkpointing)) {
    const double share = recompute_free_share(kElementwiseBackwardPerForward);
    fixed_ *= share;
    per_hit_pairs_ *= share;
  }
  if (shape.moe.num_experts > 0 && shape.moe.top_k < shape.moe.num_experts)
    log_miss_ = std::log1p(-static_cast<double>(shape.moe.top_k) / static_cast<double>(shape.moe.num_experts));
}

double LaunchModel::per_step(double tokens) const {
  const double hit_fraction = log_miss_ < 0 ? 1.0 - std::exp(tokens * log_miss_) : 1.0;
  return fixed_ + per_hit_pairs_ * hit_fraction;
}

}  // namespace stepcast::model
