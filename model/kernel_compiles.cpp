#include "model/kernel_compiles.hpp"

#include <set>
#include <utility>

namespace stepcast::model {

int kernel_compile_class(const MicroBatch& batch) {
  if (batch.packed) return 0;
  const int64_t w = batch.width;
  if (!batch.has_padding()) return w % 64 == 0 ? 7 : 8;
  int aligned = 1;  // classes 1..6: alignment 128, 64, 8, 4, 2, 1
  for (int64_t a : {128, 64, 8, 4, 2}) {
    if (w % a == 0) return aligned;
    ++aligned;
  }
  return 6;
}

std::vector<std::pair<int64_t, int64_t>> kernel_compile_heads(const ModelShape& shape, const TierRules& tier, int sm) {
  std::set<std::pair<int64_t, int64_t>> heads;
  for (const AttentionSpec& a : shape.layers)
    if (plan_layer(tier, a, /*padded_or_packed=*/true, sm, /*window_bites=*/false).backend == Backend::cudnn)
      heads.insert({a.head_dim, a.value_dim()});
  return {heads.begin(), heads.end()};
}

std::vector<std::pair<int64_t, int64_t>> kernel_compile_heads(const ModelShape& shape, const Transfer& transfer) {
  return kernel_compile_heads(shape, tier_from_label(transfer.coefficients.tier), transfer.gpu.sm);
}

double CompileClasses::charge(const MicroBatch& batch) {
  const int c = kernel_compile_class(batch);
  if (c == 0 || (seen_ & (1u << c)) != 0) return 0;
  seen_ |= 1u << c;
  ++compiled_;
  return cache_.seconds_per_class;
}

}  // namespace stepcast::model
