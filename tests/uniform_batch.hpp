#pragma once
// A micro-batch of `rows` rows of `width` real tokens each (no padding): the model tests' common question.
#include <cstdint>

#include "model/batch.hpp"

namespace stepcast::testing {
inline model::MicroBatch uniform_batch(int64_t rows, int64_t width) {
  model::MicroBatch b;
  b.rows.assign(static_cast<size_t>(rows), width);
  b.width = width;
  return b;
}
}  // namespace stepcast::testing
