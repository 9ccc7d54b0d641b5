#include "io/model_config.hpp"

#include <cstdlib>
#include <filesystem>

#include "io/document.hpp"
#include "io/limits.hpp"
#include "io/shape_limits.hpp"
#include "model/errors.hpp"

#ifndef STEPCAST_MODELS_DIR
#define STEPCAST_MODELS_DIR "scenarios/models"
#endif

namespace stepcast::io {
namespace {

namespace fs = std::filesystem;

// HF configs may write `null` for "not set": treat null as absent.
bool has_value(MapReader& r, const std::string& key) { return r.has(key) && !r.node(key).IsNull(); }

void read_common(MapReader& r, model::ModelShape& s) {
  r.read("hidden_size", s.hidden_size, true, 1);
  r.read("vocab_size", s.vocab_size, true, 1);
  r.read("intermediate_size", s.intermediate_size, true, 1);
  r.read("rms_norm_eps", s.rms_norm_eps, false, 0.0);
  r.read("max_position_embeddings", s.max_position_embeddings, false, 1);
  if (has_value(r, "torch_dtype")) r.read("torch_dtype", s.dtype, false);
  if (has_value(r, "dtype")) r.read("dtype", s.dtype, false);
}

std::vector<std::string> read_layer_types(MapReader& r, int64_t num_layers) {
  std::vector<std::string> types;
  if (!has_value(r, "layer_types")) return std::vector<std::string>(static_cast<size_t>(num_layers), "full_attention");
  if (!r.read_list("layer_types", types, true)) return {};
  if (static_cast<int64_t>(types.size()) != num_layers) {
    r.problem(r.node("layer_types"), "layer_types has " + std::to_string(types.size()) +
                                         " entries. Violated constraint: == num_hidden_layers (" +
                                         std::to_string(num_layers) + ")");
    return {};
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != "sliding_attention" && types[i] != "full_attention") {
      r.problem(r.node("layer_types")[i], "layer_types[" + std::to_string(i) + "] = '" + types[i] +
                                              "'. Violated constraint: sliding_attention or full_attention");
      return {};
    }
  }
  return types;
}

double partial_rotary(MapReader& r, const std::string& type) {
  if (!has_value(r, "rope_parameters")) return 1.0;
  YAML::Node rope = r.node("rope_parameters");
  YAML::Node per_type = rope[type];
  if (per_type.IsMap() && per_type["partial_rotary_factor"].IsDefined()) return per_type["partial_rotary_factor"].as<double>(1.0);
  return 1.0;
}

double rope_theta(MapReader& r, const std::string& type, double fallback) {
  if (!has_value(r, "rope_parameters")) return fallback;
  YAML::Node per_type = r.node("rope_parameters")[type];
  if (per_type.IsMap() && per_type["rope_theta"].IsDefined()) return per_type["rope_theta"].as<double>(fallback);
  return fallback;
}

void parse_gemma4(MapReader& r, model::ModelShape& s) {
  read_common(r, s);
  int64_t layers = 0, heads = 0, head_dim = 0, kv_heads = 0, window = 0;
  r.read("num_hidden_layers", layers, true, 1, limits::kMaxLayers);
  r.read("num_attention_heads", heads, true, 1);
  r.read("head_dim", head_dim, true, 1);
  r.read("num_key_value_heads", kv_heads, true, 1);
  int64_t global_head_dim = head_dim, global_kv_heads = kv_heads;
  if (has_value(r, "global_head_dim")) r.read("global_head_dim", global_head_dim, false, 1);
  if (has_value(r, "num_global_key_value_heads")) r.read("num_global_key_value_heads", global_kv_heads, false, 1);
  bool k_eq_v = false, moe = false;
  if (has_value(r, "attention_k_eq_v")) r.read("attention_k_eq_v", k_eq_v, false);
  if (has_value(r, "enable_moe_block")) r.read("enable_moe_block", moe, false);
  s.tie_word_embeddings = true;  // Gemma's default
  if (has_value(r, "tie_word_embeddings")) r.read("tie_word_embeddings", s.tie_word_embeddings, false);
  if (has_value(r, "final_logit_softcapping")) r.read("final_logit_softcapping", s.final_logit_softcap, false, 0.0);
  s.hidden_activation = "gelu_pytorch_tanh";
  if (has_value(r, "hidden_activation")) r.read("hidden_activation", s.hidden_activation, false);
  bool attention_bias = false;
  if (has_value(r, "attention_bias")) r.read("attention_bias", attention_bias, false);
  int64_t kv_shared = 0, per_layer_input = 0;
  if (has_value(r, "num_kv_shared_layers")) r.read("num_kv_shared_layers", kv_shared, false, 0);
  if (has_value(r, "hidden_size_per_layer_input")) r.read("hidden_size_per_layer_input", per_layer_input, false, 0);
  if (kv_shared > 0 || per_layer_input > 0)
    r.problem("num_kv_shared_layers / hidden_size_per_layer_input > 0 (Gemma-4 E-series layout). "
              "Violated constraint: not supported yet, both must be 0");
  std::vector<std::string> types = read_layer_types(r, layers);
  bool any_sliding = false;
  for (const auto& t : types) any_sliding |= t == "sliding_attention";
  if (any_sliding) r.read("sliding_window", window, true, 1);
  if (moe) {
    r.read("num_experts", s.moe.num_experts, true, 1);
    r.read("top_k_experts", s.moe.top_k, true, 1);
    r.read("moe_intermediate_size", s.moe.intermediate_size, true, 1);
    if (s.moe.top_k > s.moe.num_experts && s.moe.num_experts > 0)
      r.problem(r.node("top_k_experts"), "top_k_experts = " + std::to_string(s.moe.top_k) +
                                             ". Violated constraint: <= num_experts");
  }
  for (const auto& type : types) {
    const bool sliding = type == "sliding_attention";
    model::AttentionSpec a;
    a.type = type;
    a.num_heads = heads;
    a.head_dim = sliding ? head_dim : global_head_dim;
    a.num_kv_heads = (!sliding && k_eq_v) ? global_kv_heads : kv_heads;
    a.has_v_proj = sliding || !k_eq_v;
    a.window = sliding ? window : 0;
    a.qkv_bias = a.o_bias = attention_bias;
    a.qk_norm = true;
    a.rope_theta = rope_theta(r, type, sliding ? 10000.0 : 1000000.0);
    a.partial_rotary_factor = partial_rotary(r, type);
    s.layers.push_back(a);
  }
  s.norms_per_layer = moe ? 7 : 4;
  s.router_scales = moe;
  s.layer_scalar_buffer = true;
}

void parse_llama_family(MapReader& r, model::ModelShape& s) {
  read_common(r, s);
  int64_t layers = 0, heads = 0;
  r.read("num_hidden_layers", layers, true, 1, limits::kMaxLayers);
  r.read("num_attention_heads", heads, true, 1);
  int64_t kv_heads = heads;
  if (has_value(r, "num_key_value_heads")) r.read("num_key_value_heads", kv_heads, false, 1);
  int64_t head_dim = (heads > 0 && s.hidden_size > 0) ? s.hidden_size / heads : 0;
  if (has_value(r, "head_dim")) r.read("head_dim", head_dim, false, 1);
  if (has_value(r, "tie_word_embeddings")) r.read("tie_word_embeddings", s.tie_word_embeddings, false);
  if (has_value(r, "hidden_act")) r.read("hidden_act", s.hidden_activation, false);
  bool attention_bias = s.model_type == "qwen2";  // Qwen2 always has q,k,v biases
  if (has_value(r, "attention_bias")) r.read("attention_bias", attention_bias, false);
  if (has_value(r, "mlp_bias")) r.read("mlp_bias", s.mlp_bias, false);
  double theta = 10000.0;
  if (has_value(r, "rope_theta")) r.read("rope_theta", theta, false, 0.0);
  int64_t window = 0;
  bool use_window = s.model_type == "mistral";
  if (has_value(r, "use_sliding_window")) r.read("use_sliding_window", use_window, false);
  if (use_window && has_value(r, "sliding_window")) r.read("sliding_window", window, false, 1);
  std::vector<std::string> types = read_layer_types(r, layers);
  for (const auto& type : types) {
    model::AttentionSpec a;
    a.type = type;
    a.num_heads = heads;
    a.head_dim = head_dim;
    a.num_kv_heads = kv_heads;
    a.window = (type == "sliding_attention" || s.model_type == "mistral") ? window : 0;
    a.qkv_bias = attention_bias;
    a.o_bias = attention_bias && s.model_type != "qwen2";  // Qwen2's o_proj has no bias
    a.qk_norm = s.model_type == "qwen3";
    a.rope_theta = theta;
    s.layers.push_back(a);
  }
  s.norms_per_layer = 2;
}

}  // namespace

model::ModelShape load_model_config(const std::string& path) {
  YAML::Node root = load_json_file(path);
  Diagnostics diagnostics;
  model::ModelShape shape;
  shape.name = fs::path(path).stem().string();
  MapReader top(root, path, "", diagnostics);
  std::string model_type;
  top.read("model_type", model_type, true);
  if (model_type == "gemma4" && top.has("text_config")) {
    MapReader text = top.child("text_config");
    shape.model_type = "gemma4_text";
    parse_gemma4(text, shape);
  } else if (model_type == "gemma4_text") {
    shape.model_type = model_type;
    parse_gemma4(top, shape);
  } else if (model_type == "llama" || model_type == "mistral" || model_type == "qwen2" || model_type == "qwen3") {
    shape.model_type = model_type;
    parse_llama_family(top, shape);
  } else if (!model_type.empty()) {
    top.problem(top.node("model_type"), "model_type = '" + model_type +
                                            "'. Violated constraint: one of gemma4, gemma4_text, llama, mistral, qwen2, qwen3");
  }
  if (diagnostics.empty()) check_shape_limits(shape, root, path, diagnostics);
  diagnostics.throw_if_any();
  return shape;
}

std::string resolve_model_path(const std::string& name_or_path) {
  if (fs::exists(name_or_path)) return name_or_path;
  const char* env = std::getenv("STEPCAST_MODELS_DIR");
  const fs::path dir = env != nullptr ? fs::path(env) : fs::path(STEPCAST_MODELS_DIR);
  for (const fs::path& candidate : {dir / name_or_path, dir / (name_or_path + ".json")})
    if (fs::exists(candidate)) return candidate.string();
  throw InputError("model '" + name_or_path + "': no such file, and no " + (dir / (name_or_path + ".json")).string() +
                   ". Violated constraint: a config.json path or a name under " + dir.string());
}

model::ModelShape load_model(const std::string& name_or_path) {
  return load_model_config(resolve_model_path(name_or_path));
}

}  // namespace stepcast::io
