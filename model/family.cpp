#include "model/family.hpp"

#include <algorithm>

#include "model/errors.hpp"

namespace stepcast::model {
namespace {

Family gemma4_text() {
  Family f;
  f.name = "gemma4_text";
  f.model_types = {"gemma4_text"};
  f.wrapper_model_type = "gemma4";
  f.schema = ConfigSchema::gemma4;
  f.block = BlockLayout::gemma4_sandwich;
  f.layer_norms = {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm"};
  f.expert_layer_norms = {"post_feedforward_layernorm_1", "post_feedforward_layernorm_2",
                          "pre_feedforward_layernorm_2"};
  f.qk_norm = true;
  f.v_norm = true;
  f.attention_scale = 1.0;  // transformers' Gemma4 attention: scaling = 1 (q and k are normed)
  f.router_scales = true;
  f.scaled_embedding = true;
  f.tie_default = true;
  f.activation_default = "gelu_pytorch_tanh";
  f.layer_scalar_buffer = true;
  return f;
}

Family llama_like(const std::string& model_type) {
  Family f;
  f.name = model_type;
  f.model_types = {model_type};
  return f;
}

std::vector<Family> built_in() {
  std::vector<Family> table{gemma4_text(), llama_like("llama"), llama_like("mistral"), llama_like("qwen2"),
                            llama_like("qwen3")};
  table[2].window_on_every_layer = true;  // Mistral: sliding_window on every layer unless use_sliding_window=false
  table[3].qkv_bias_default = true;       // Qwen2: biases on q, k, v ...
  table[3].o_bias_with_qkv = false;       // ... never on o_proj
  table[4].qk_norm = true;                // Qwen3: q_norm, k_norm
  return table;
}

std::vector<Family>& table() {
  static std::vector<Family> families = built_in();
  return families;
}

}  // namespace

const std::vector<Family>& families() { return table(); }

const Family* find_family(const std::string& model_type) {
  for (const Family& f : table()) {
    if (std::find(f.model_types.begin(), f.model_types.end(), model_type) != f.model_types.end()) return &f;
    if (!f.wrapper_model_type.empty() && f.wrapper_model_type == model_type) return &f;
  }
  return nullptr;
}

void register_family(const Family& family) {
  std::vector<std::string> taken;
  for (const auto& t : family.model_types)
    if (find_family(t) != nullptr) taken.push_back(t);
  if (!taken.empty())
    throw InputError("family '" + family.name + "': model_type '" + taken.front() +
                     "' already belongs to a family. Violated constraint: each model_type in one family");
  if (family.model_types.empty())
    throw InputError("family '" + family.name + "' has no model_types. Violated constraint: at least one");
  table().push_back(family);
}

std::vector<std::string> known_model_types() {
  std::vector<std::string> names;
  for (const Family& f : table()) {
    names.insert(names.end(), f.model_types.begin(), f.model_types.end());
    if (!f.wrapper_model_type.empty()) names.push_back(f.wrapper_model_type);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace stepcast::model
