#include "model/adapters.hpp"

#include "model/errors.hpp"

namespace stepcast::model {

std::string adapter_dtype_name(AdapterDtype d) { return d == AdapterDtype::bfloat16 ? "bfloat16" : "float32"; }

std::vector<std::string> adapter_dtype_names() {
  return {adapter_dtype_name(AdapterDtype::float32), adapter_dtype_name(AdapterDtype::bfloat16)};
}

AdapterDtype parse_adapter_dtype(const std::string& name, const std::string& where) {
  for (AdapterDtype d : {AdapterDtype::float32, AdapterDtype::bfloat16})
    if (name == adapter_dtype_name(d)) return d;
  throw InputError(where + " = '" + name + "'. Violated constraint: float32 (peft's default: bf16 adapters cast up "
                   "to fp32) or bfloat16 (get_peft_model(autocast_adapter_dtype=False), or a model cast to bf16)");
}

double adapter_param_bytes(AdapterDtype d) { return d == AdapterDtype::bfloat16 ? 2.0 : 4.0; }

AdapterPath adapter_path(bool autocast, AdapterDtype dtype) {
  if (dtype == AdapterDtype::bfloat16) return AdapterPath::bf16;
  return autocast ? AdapterPath::autocast : AdapterPath::fp32;
}

}  // namespace stepcast::model
