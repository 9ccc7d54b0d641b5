#include "model/quantization.hpp"

#include "model/errors.hpp"

namespace stepcast::model {

namespace {
constexpr double kPackedBytesPerWeight = 0.5;  // two 4-bit codes a byte
constexpr double kBlock = 64;                  // Params4bit's blocksize: one absmax per 64 weights
constexpr double kNestedBlock = 256;           // double quantization: one fp32 scale per 256 absmax
constexpr double kFp32 = 4, kInt8 = 1;
}  // namespace

std::string base_quant_name(BaseQuant q) {
  switch (q) {
    case BaseQuant::none: return "none";
    case BaseQuant::nf4: return "nf4";
    case BaseQuant::nf4_double: return "nf4-double-quant";
  }
  return "none";
}

namespace {
constexpr BaseQuant kAll[] = {BaseQuant::none, BaseQuant::nf4, BaseQuant::nf4_double};
}  // namespace

std::vector<std::string> base_quant_names() {
  std::vector<std::string> names;
  for (BaseQuant q : kAll) names.push_back(base_quant_name(q));
  return names;
}

BaseQuant parse_base_quant(const std::string& name, const std::string& where) {
  for (BaseQuant q : kAll)
    if (name == base_quant_name(q)) return q;
  throw InputError(where + " = '" + name + "'. Violated constraint: one of none, nf4, nf4-double-quant "
                   "(bitsandbytes' 4-bit NF4 base weights, with or without bnb_4bit_use_double_quant)");
}

bool quantized(const Module& m, BaseQuant q) {
  return q != BaseQuant::none && (m.kind == ModuleKind::linear || m.kind == ModuleKind::router);
}

double quantized_weight_bytes(double params, BaseQuant q) {
  if (q == BaseQuant::none) return 0;
  const double absmax = q == BaseQuant::nf4_double ? kInt8 / kBlock + kFp32 / (kBlock * kNestedBlock) : kFp32 / kBlock;
  return params * (kPackedBytesPerWeight + absmax);
}

double dequant_bytes(double params, BaseQuant q, int64_t compute_bytes) {
  if (q == BaseQuant::none) return 0;
  return quantized_weight_bytes(params, q) + params * static_cast<double>(compute_bytes);
}

int dequant_launches(BaseQuant q) {
  switch (q) {
    case BaseQuant::none: return 0;
    case BaseQuant::nf4: return 1;
    case BaseQuant::nf4_double: return 3;
  }
  return 0;
}

}  // namespace stepcast::model
