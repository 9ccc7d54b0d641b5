#pragma once
// How peft's LoRA adapters meet a bf16 base: the adapters' parameter dtype and, with torch.autocast, the precision
// their casts, GEMMs and elementwise work run in (docs/method.md, "LoRA under autocast", "bf16 adapters"). Step
// features, memory and launches read it from here.
#include <cstdint>
#include <string>
#include <vector>

namespace stepcast::model {

// The adapters' parameter dtype. float32 is peft's default (get_peft_model's autocast_adapter_dtype=True casts bf16
// adapters up); bfloat16 is autocast_adapter_dtype=False, or a model cast to bf16 after get_peft_model, as custom
// loops that train "pure bf16" do.
enum class AdapterDtype : uint8_t { float32, bfloat16 };
std::string adapter_dtype_name(AdapterDtype d);  // "float32", "bfloat16": the CLI's, the scenario's and the records' word
std::vector<std::string> adapter_dtype_names();
// The dtype a word names; anything else is an InputError naming `where` and the words.
AdapterDtype parse_adapter_dtype(const std::string& name, const std::string& where);
// Bytes an adapter parameter, its gradient and each AdamW moment take: 4 (fp32), 2 (bf16).
double adapter_param_bytes(AdapterDtype d);

// fp32 adapters on their own (peft's default: x cast to fp32, fp32 GEMMs, an fp32 add and a cast back), fp32
// adapters under torch.autocast(bf16) (bf16 GEMMs and output side, one more cast of the input), bf16 adapters (no
// casts; autocast changes nothing there).
enum class AdapterPath : uint8_t { fp32, autocast, bf16 };
AdapterPath adapter_path(bool autocast, AdapterDtype dtype);

}  // namespace stepcast::model
