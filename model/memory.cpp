#include "model/memory.hpp"

#include <string>

#include "model/errors.hpp"

namespace stepcast::model {

namespace {
constexpr double kGiB = 1073741824.0;
// A term beyond 2^60 bytes (1 EiB) is refused, never cast: six such terms still sum inside int64
// (docs/reliability.md), and a NaN or negative term means an input the readers should have refused.
constexpr double kMaxTermBytes = 1152921504606846976.0;
int64_t bytes_of(double gib) {
  const double bytes = gib * kGiB + 0.5;
  if (!(bytes >= 0 && bytes < kMaxTermBytes))
    throw InputError("a memory term of " + std::to_string(bytes / kGiB / 1e9) +
                     " billion GiB. Violated constraint: finite, >= 0, < 1 EiB");
  return static_cast<int64_t>(bytes);
}
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
