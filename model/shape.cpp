#include "model/shape.hpp"

#include <algorithm>

#include "model/errors.hpp"

namespace stepcast::model {

bool ModelShape::has_experts(int64_t layer) const {
  return moe.num_experts > 0 && !std::binary_search(moe.dense_layers.begin(), moe.dense_layers.end(), layer);
}

bool ModelShape::has_dense_mlp(int64_t layer) const {
  return intermediate_size > 0 && (!has_experts(layer) || family.dense_beside_experts);
}

int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "bfloat16" || dtype == "float16" || dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "float32" || dtype == "fp32") return 4;
  if (dtype == "float8_e4m3fn" || dtype == "float8_e5m2" || dtype == "fp8" || dtype == "int8") return 1;
  if (dtype == "float64") return 8;
  throw InputError("unknown dtype '" + dtype +
                   "'. Violated constraint: one of bfloat16, float16, float32, float8_e4m3fn, float8_e5m2, int8, float64");
}

}  // namespace stepcast::model
