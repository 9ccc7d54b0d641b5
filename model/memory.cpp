#include "model/memory.hpp"

namespace stepcast::model {

namespace {
constexpr double kGiB = 1073741824.0;
int64_t bytes_of(double gib) { return static_cast<int64_t>(gib * kGiB + 0.5); }
}  // namespace

int64_t MemoryTable::total_bytes() const {
  int64_t total = 0;
  for (const auto& item : items) total += item.bytes;
  return total;
}

MemoryTable memory_table(const FeatureMaker& features, const MemoryFeatures& y, const std::array<double, kMemoryTerms>& m) {
  MemoryTable t;
  t.items.push_back({"weights", bytes_of(features.weights_gib()), "run"});
  t.items.push_back({"lora_params_and_grads_fp32", bytes_of(features.lora_gib()), "run"});
  t.items.push_back({"fixed_slack_optimizer_workspaces", bytes_of(m[kMemFixed] * y.y[kMemFixed]), "run"});
  t.items.push_back({"activations_logits_ce_per_token", bytes_of(m[kMemToken] * y.y[kMemToken]), "step"});
  t.items.push_back({"explicit_attention_masks", bytes_of(m[kMemMask] * y.y[kMemMask]), "step"});
  t.items.push_back({"math_attention_scores", bytes_of(m[kMemScore] * y.y[kMemScore]), "step"});
  return t;
}

}  // namespace stepcast::model
