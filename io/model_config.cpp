#include "io/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "io/document.hpp"
#include "model/limits.hpp"
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
  if (s.family.vocab_default > 0 && !has_value(r, "vocab_size")) s.vocab_size = s.family.vocab_default;
  else r.read("vocab_size", s.vocab_size, true, 1);
  r.read("intermediate_size", s.intermediate_size, true, 1);
  r.read("rms_norm_eps", s.rms_norm_eps, false, 0.0);
  if (has_value(r, "norm_epsilon")) r.read("norm_epsilon", s.rms_norm_eps, false, 0.0);  // Starcoder2Config
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
    if (types[i] != "sliding_attention" && types[i] != "full_attention" && types[i] != "chunked_attention") {
      r.problem(r.node("layer_types")[i], "layer_types[" + std::to_string(i) + "] = '" + types[i] +
                                              "'. Violated constraint: sliding_attention, full_attention or "
                                              "chunked_attention (linear attention is not supported)");
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
  s.tie_word_embeddings = s.family.tie_default;
  if (has_value(r, "tie_word_embeddings")) r.read("tie_word_embeddings", s.tie_word_embeddings, false);
  if (has_value(r, "final_logit_softcapping")) r.read("final_logit_softcapping", s.final_logit_softcap, false, 0.0);
  s.hidden_activation = s.family.activation_default;
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
    a.qk_norm = s.family.qk_norm;
    a.rope_theta = rope_theta(r, type, sliding ? 10000.0 : 1000000.0);
    a.partial_rotary_factor = partial_rotary(r, type);
    s.layers.push_back(a);
  }
}

// Without layer_types, a family with a sliding pattern (Gemma-2: 2, Gemma-3: sliding_window_pattern, 6) makes
// every Nth layer global and the rest sliding, as transformers' Gemma2Config / Gemma3TextConfig do.
std::vector<std::string> default_layer_types(MapReader& r, const model::Family& f, int64_t num_layers) {
  int64_t pattern = f.sliding_pattern_default;
  if (pattern > 0 && has_value(r, "sliding_window_pattern")) r.read("sliding_window_pattern", pattern, false, 1);
  std::vector<std::string> types;
  for (int64_t i = 0; i < num_layers; ++i)
    types.push_back(pattern > 0 && (i + 1) % pattern != 0 ? "sliding_attention" : "full_attention");
  return types;
}

// SmolLM3Config without layer_types: with use_sliding_window and a sliding_window (`sliding`), the layers that skip
// RoPE slide: no_rope_layers[i] == 0 (a list at least as long as the stack), else every no_rope_layer_interval-th.
std::vector<std::string> nope_layer_types(MapReader& r, int64_t num_layers, bool sliding) {
  std::vector<std::string> types(static_cast<size_t>(num_layers), "full_attention");
  if (!sliding) return types;
  std::vector<int64_t> rope;
  int64_t interval = 4;
  if (has_value(r, "no_rope_layers")) {
    if (!r.read_list("no_rope_layers", rope, false, 0, 1)) return types;
    if (static_cast<int64_t>(rope.size()) < num_layers) {
      r.problem(r.node("no_rope_layers"), "no_rope_layers has " + std::to_string(rope.size()) +
                                              " entries. Violated constraint: >= num_hidden_layers (" +
                                              std::to_string(num_layers) + ")");
      return types;
    }
  } else if (has_value(r, "no_rope_layer_interval")) {
    r.read("no_rope_layer_interval", interval, false, 1);
  }
  for (int64_t i = 0; i < num_layers; ++i) {
    const bool uses_rope = rope.empty() ? (i + 1) % interval != 0 : rope[static_cast<size_t>(i)] == 1;
    if (!uses_rope) types[static_cast<size_t>(i)] = "sliding_attention";
  }
  return types;
}

// hidden_size / num_attention_heads where no head_dim is given; a remainder is an unbuildable config.
int64_t head_dim_of(MapReader& r, const model::ModelShape& s, int64_t heads) {
  int64_t head_dim = (heads > 0 && s.hidden_size > 0) ? s.hidden_size / heads : 0;
  if (has_value(r, "head_dim")) {
    r.read("head_dim", head_dim, false, 1);
  } else if (heads > 0 && s.hidden_size % heads != 0) {
    r.problem(r.node("num_attention_heads"), "num_attention_heads = " + std::to_string(heads) +
                                                 " does not divide hidden_size = " + std::to_string(s.hidden_size) +
                                                 ". Violated constraint: hidden_size % num_attention_heads == 0, "
                                                 "or an explicit head_dim");
  }
  return head_dim;
}

void parse_llama_family(MapReader& r, model::ModelShape& s) {
  const model::Family& f = s.family;
  read_common(r, s);
  int64_t layers = 0, heads = 0;
  r.read("num_hidden_layers", layers, true, 1, limits::kMaxLayers);
  r.read("num_attention_heads", heads, true, 1);
  int64_t kv_heads = heads;
  if (has_value(r, "num_key_value_heads")) r.read("num_key_value_heads", kv_heads, false, 1);
  const int64_t head_dim = head_dim_of(r, s, heads);
  s.tie_word_embeddings = f.tie_default;
  if (has_value(r, "tie_word_embeddings")) r.read("tie_word_embeddings", s.tie_word_embeddings, false);
  s.hidden_activation = f.activation_default;
  if (has_value(r, "hidden_act")) r.read("hidden_act", s.hidden_activation, false);
  if (has_value(r, "hidden_activation")) r.read("hidden_activation", s.hidden_activation, false);  // Gemma
  bool attention_bias = f.qkv_bias_default;
  if (has_value(r, "attention_bias")) r.read("attention_bias", attention_bias, false);
  s.mlp_bias = f.mlp_bias_default;
  if (has_value(r, "mlp_bias")) r.read("mlp_bias", s.mlp_bias, false);
  if (has_value(r, "use_bias")) {  // Starcoder2Config: one key for q/k/v/o and the MLP's biases
    r.read("use_bias", attention_bias, false);
    s.mlp_bias = attention_bias;
  }
  double theta = 10000.0, local_theta = 10000.0, pre_attn_scalar = 0, softcap = 0;
  if (has_value(r, "rope_theta")) r.read("rope_theta", theta, false, 0.0);
  local_theta = theta;
  if (has_value(r, "rope_local_base_freq")) r.read("rope_local_base_freq", local_theta, false, 0.0);  // Gemma-3
  if (has_value(r, "query_pre_attn_scalar")) r.read("query_pre_attn_scalar", pre_attn_scalar, false, 0.0);
  if (has_value(r, "attn_logit_softcapping")) r.read("attn_logit_softcapping", softcap, false, 0.0);
  if (has_value(r, "final_logit_softcapping")) r.read("final_logit_softcapping", s.final_logit_softcap, false, 0.0);
  // The share of head_dim that RoPE rotates: top-level partial_rotary_factor as transformers 4 saves it, or in a
  // flat rope_parameters as transformers 5 does; else the family's default (1, GLM-4 0.5). It changes no parameter,
  // only the RoPE pass of the memory-bound count.
  double rotary = f.partial_rotary_default;
  if (has_value(r, "partial_rotary_factor")) {
    r.read("partial_rotary_factor", rotary, false, 0.0, 1.0);
  } else if (has_value(r, "rope_parameters") && r.node("rope_parameters").IsMap() &&
             r.node("rope_parameters")["partial_rotary_factor"].IsDefined()) {
    MapReader rope = r.child("rope_parameters");
    rope.read("partial_rotary_factor", rotary, false, 0.0, 1.0);
  }
  int64_t window = 0;
  bool use_window = f.window_on_every_layer || f.sliding_pattern_default > 0;
  if (has_value(r, "use_sliding_window")) r.read("use_sliding_window", use_window, false);
  if (use_window && has_value(r, "sliding_window")) r.read("sliding_window", window, false, 1);
  std::vector<std::string> types = has_value(r, "layer_types") ? read_layer_types(r, layers)
                                   : f.window_on_nope_layers ? nope_layer_types(r, layers, window > 0)
                                                             : default_layer_types(r, f, layers);
  for (const auto& type : types) {
    model::AttentionSpec a;
    a.type = type;
    a.num_heads = heads;
    a.head_dim = head_dim;
    a.num_kv_heads = kv_heads;
    const bool sliding = type == "sliding_attention";
    a.window = (sliding || f.window_on_every_layer) ? window : 0;
    a.qkv_bias = attention_bias;
    a.o_bias = attention_bias && f.o_bias_with_qkv;
    a.qk_norm = f.qk_norm;
    a.rope_theta = sliding ? local_theta : theta;
    a.partial_rotary_factor = rotary;
    a.scale = pre_attn_scalar > 0 ? 1.0 / std::sqrt(pre_attn_scalar) : 0.0;
    a.logit_softcap = softcap;
    a.eager = f.eager_attention;
    s.layers.push_back(a);
  }
}

void check_top_k(MapReader& r, const model::MoeSpec& m, const std::string& key) {
  if (m.num_experts > 0 && m.top_k > m.num_experts)
    r.problem(r.node(key), key + " = " + std::to_string(m.top_k) + ". Violated constraint: <= the number of experts (" +
                               std::to_string(m.num_experts) + ")");
}

// Layer indices a config lists (mlp_only_layers, moe_layers), each checked against num_hidden_layers.
std::vector<int64_t> read_layer_list(MapReader& r, const std::string& key, int64_t num_layers) {
  std::vector<int64_t> list;
  if (!has_value(r, key) || num_layers < 1) return list;
  r.read_list(key, list, false, 0, num_layers - 1);
  return list;
}

// Qwen2-MoE / Qwen3-MoE (transformers' Qwen2MoeDecoderLayer): layer i has experts unless it is in
// mlp_only_layers or (i + 1) % decoder_sparse_step != 0; those keep a dense MLP of intermediate_size.
void parse_qwen_moe(MapReader& r, model::ModelShape& s) {
  parse_llama_family(r, s);
  model::MoeSpec& m = s.moe;
  r.read("num_experts", m.num_experts, true, 1);
  r.read("num_experts_per_tok", m.top_k, true, 1);
  r.read("moe_intermediate_size", m.intermediate_size, true, 1);
  if (has_value(r, "shared_expert_intermediate_size"))
    r.read("shared_expert_intermediate_size", m.shared_intermediate_size, false, 0);
  if (has_value(r, "norm_topk_prob")) r.read("norm_topk_prob", m.norm_topk_prob, false);
  int64_t step = 1;
  if (has_value(r, "decoder_sparse_step")) r.read("decoder_sparse_step", step, false, 1);
  const std::vector<int64_t> mlp_only = read_layer_list(r, "mlp_only_layers", s.num_layers());
  for (int64_t i = 0; i < s.num_layers(); ++i)
    if (std::find(mlp_only.begin(), mlp_only.end(), i) != mlp_only.end() || (i + 1) % step != 0)
      m.dense_layers.push_back(i);
  check_top_k(r, m, "num_experts_per_tok");
}

// Mixtral and OLMoE: every layer's MLP is num_local_experts (OLMoE's config: num_experts) experts as wide as
// intermediate_size; no dense MLP.
void parse_mixtral(MapReader& r, model::ModelShape& s) {
  parse_llama_family(r, s);
  model::MoeSpec& m = s.moe;
  r.read(has_value(r, "num_experts") ? "num_experts" : "num_local_experts", m.num_experts, true, 1);
  r.read("num_experts_per_tok", m.top_k, true, 1);
  m.intermediate_size = s.intermediate_size;
  m.norm_topk_prob = true;  // MixtralSparseMoeBlock renormalises the top-k weights; OLMoE's config says false
  if (has_value(r, "norm_topk_prob")) r.read("norm_topk_prob", m.norm_topk_prob, false);
  s.intermediate_size = 0;
  check_top_k(r, m, "num_experts_per_tok");
}

// Llama-4 text (transformers' Llama4TextConfig): MoE layers (moe_layers, else every
// interleave_moe_layer_step-th) hold num_local_experts experts and one shared expert, both as wide as
// intermediate_size; the others a dense MLP of intermediate_size_mlp. RoPE layers (no_rope_layers[i] = 1,
// else all but every 4th) attend within attention_chunk_size chunks; the NoPE layers attend globally.
void parse_llama4(MapReader& r, model::ModelShape& s) {
  parse_llama_family(r, s);
  model::MoeSpec& m = s.moe;
  const int64_t n = s.num_layers();
  r.read("num_local_experts", m.num_experts, true, 1);
  r.read("num_experts_per_tok", m.top_k, true, 1);
  m.intermediate_size = m.shared_intermediate_size = s.intermediate_size;
  s.intermediate_size = 0;
  if (has_value(r, "intermediate_size_mlp")) r.read("intermediate_size_mlp", s.intermediate_size, false, 1);
  int64_t step = 1;
  if (has_value(r, "interleave_moe_layer_step")) r.read("interleave_moe_layer_step", step, false, 1);
  std::vector<int64_t> moe_layers = read_layer_list(r, "moe_layers", n);
  if (!has_value(r, "moe_layers"))
    for (int64_t i = step - 1; i < n; i += step) moe_layers.push_back(i);
  for (int64_t i = 0; i < n; ++i)
    if (std::find(moe_layers.begin(), moe_layers.end(), i) == moe_layers.end()) m.dense_layers.push_back(i);
  int64_t chunk = 0;
  if (has_value(r, "attention_chunk_size")) r.read("attention_chunk_size", chunk, false, 1);
  std::vector<int64_t> rope;
  if (has_value(r, "no_rope_layers") && r.node("no_rope_layers").size() > 0) {
    r.read_list("no_rope_layers", rope, false, 0, 1);
    if (static_cast<int64_t>(rope.size()) != n)
      r.problem(r.node("no_rope_layers"), "no_rope_layers has " + std::to_string(rope.size()) +
                                              " entries. Violated constraint: == num_hidden_layers (" +
                                              std::to_string(n) + ")");
  }
  for (int64_t i = 0; i < n; ++i) {
    const bool uses_rope = static_cast<int64_t>(rope.size()) == n ? rope[static_cast<size_t>(i)] == 1 : (i + 1) % 4 != 0;
    model::AttentionSpec& a = s.layers[static_cast<size_t>(i)];
    if (uses_rope && chunk > 0) {
      a.type = "chunked_attention";
      a.chunk = chunk;
    }
  }
  check_top_k(r, m, "num_experts_per_tok");
}

// DeepSeek-V2 / V3 (multi-head latent attention): q/k heads of qk_nope_head_dim + qk_rope_head_dim, v heads of
// v_head_dim; layer i has n_routed_experts experts and n_shared_experts shared ones (each
// moe_intermediate_size wide) when i >= first_k_dense_replace and i % moe_layer_freq == 0, else a dense MLP.
void parse_deepseek(MapReader& r, model::ModelShape& s) {
  parse_llama_family(r, s);
  int64_t q_lora = 0, kv_lora = 0, nope = 0, rope = 0, v_dim = 0;
  if (has_value(r, "q_lora_rank")) r.read("q_lora_rank", q_lora, false, 1);
  r.read("kv_lora_rank", kv_lora, true, 1);
  r.read("qk_nope_head_dim", nope, true, 0);
  r.read("qk_rope_head_dim", rope, true, 0);
  r.read("v_head_dim", v_dim, true, 1);
  if (nope + rope < 1) r.problem(r.node("qk_rope_head_dim"), "qk_nope_head_dim + qk_rope_head_dim = 0. Violated constraint: >= 1");
  for (model::AttentionSpec& a : s.layers) {
    a.head_dim = nope + rope;
    a.v_head_dim = v_dim;
    a.rope_head_dim = rope;
    a.q_lora_rank = q_lora;
    a.kv_lora_rank = kv_lora;
    a.num_kv_heads = a.num_heads;  // kv_b_proj gives every head its own k and v
  }
  model::MoeSpec& m = s.moe;
  int64_t shared = 0, first_dense = 0, freq = 1;
  if (has_value(r, "n_routed_experts")) r.read("n_routed_experts", m.num_experts, false, 1);
  if (m.num_experts > 0) {
    r.read("num_experts_per_tok", m.top_k, true, 1);
    r.read("moe_intermediate_size", m.intermediate_size, true, 1);
  }
  if (has_value(r, "n_shared_experts")) r.read("n_shared_experts", shared, false, 0);
  if (has_value(r, "first_k_dense_replace")) r.read("first_k_dense_replace", first_dense, false, 0, s.num_layers());
  if (has_value(r, "moe_layer_freq")) r.read("moe_layer_freq", freq, false, 1);
  if (has_value(r, "norm_topk_prob")) r.read("norm_topk_prob", m.norm_topk_prob, false);
  if (has_value(r, "num_nextn_predict_layers")) r.read("num_nextn_predict_layers", s.mtp_layers, false, 0, 16);
  m.shared_intermediate_size = shared * m.intermediate_size;
  for (int64_t i = 0; i < s.num_layers(); ++i)
    if (i < first_dense || i % freq != 0) m.dense_layers.push_back(i);
  // transformers' DeepseekV3TopkRouter keeps e_score_correction_bias as a buffer on every MoE layer.
  m.router_bias_buffer = s.model_type == "deepseek_v3";
  check_top_k(r, m, "num_experts_per_tok");
}

// GPT-NeoX / Pythia (transformers' GPTNeoXConfig): LayerNorms with biases, fused query_key_value, an ungated
// GELU MLP, rotary on rotary_pct of each head, and (use_parallel_residual) attention and MLP side by side.
void parse_gpt_neox(MapReader& r, model::ModelShape& s) {
  const model::Family& f = s.family;
  read_common(r, s);
  int64_t layers = 0, heads = 0;
  r.read("num_hidden_layers", layers, true, 1, limits::kMaxLayers);
  r.read("num_attention_heads", heads, true, 1);
  const int64_t head_dim = head_dim_of(r, s, heads);
  s.tie_word_embeddings = f.tie_default;
  if (has_value(r, "tie_word_embeddings")) r.read("tie_word_embeddings", s.tie_word_embeddings, false);
  s.hidden_activation = f.activation_default;
  if (has_value(r, "hidden_act")) r.read("hidden_act", s.hidden_activation, false);
  if (has_value(r, "layer_norm_eps")) r.read("layer_norm_eps", s.rms_norm_eps, false, 0.0);
  bool bias = f.qkv_bias_default;
  if (has_value(r, "attention_bias")) r.read("attention_bias", bias, false);
  s.mlp_bias = f.mlp_bias_default;
  s.parallel_residual = true;
  if (has_value(r, "use_parallel_residual")) r.read("use_parallel_residual", s.parallel_residual, false);
  double rotary = 0.25, theta = 10000.0;
  // rotary_pct 0: no rotary at all (positions come from elsewhere, e.g. MPT's learned table: docs/gpus.md).
  if (has_value(r, "rotary_pct") && r.read("rotary_pct", rotary, false, -1.0, 1.0) && rotary < 0.0)
    r.problem(r.node("rotary_pct"), "rotary_pct = " + std::to_string(rotary) + ". Violated constraint: >= 0");
  if (has_value(r, "rotary_emb_base")) r.read("rotary_emb_base", theta, false, 0.0);
  for (int64_t i = 0; i < layers; ++i) {
    model::AttentionSpec a;
    a.num_heads = a.num_kv_heads = heads;
    a.head_dim = head_dim;
    a.qkv_bias = a.o_bias = bias;
    a.rope_theta = theta;
    a.partial_rotary_factor = rotary;
    s.layers.push_back(a);
  }
}

void read_family_config(MapReader& r, model::ModelShape& s) {
  switch (s.family.schema) {
    case model::ConfigSchema::gemma4: parse_gemma4(r, s); return;
    case model::ConfigSchema::llama: parse_llama_family(r, s); return;
    case model::ConfigSchema::qwen_moe: parse_qwen_moe(r, s); return;
    case model::ConfigSchema::mixtral: parse_mixtral(r, s); return;
    case model::ConfigSchema::llama4: parse_llama4(r, s); return;
    case model::ConfigSchema::deepseek: parse_deepseek(r, s); return;
    case model::ConfigSchema::gpt_neox: parse_gpt_neox(r, s); return;
  }
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// `architectures` names the class transformers builds, and so the head on the decoder stack: a causal LM
// (or a multimodal one) has the LM head, a bare *Model none (an embedding model), a sequence classifier a
// `score` of num_labels outputs. Without the key a config is taken as a causal LM, what a fine-tune trains.
void read_head(MapReader& top, model::ModelShape& s) {
  if (!has_value(top, "architectures")) return;
  std::vector<std::string> archs;
  if (!top.read_list("architectures", archs, false) || archs.empty()) return;
  const std::string& a = archs.front();
  if (ends_with(a, "ForCausalLM") || ends_with(a, "ForConditionalGeneration") || ends_with(a, "LMHeadModel")) {
    s.head = model::Head::lm_head;
  } else if (ends_with(a, "ForSequenceClassification")) {
    s.head = model::Head::classifier;
    s.num_labels = 2;  // PretrainedConfig's default
    if (has_value(top, "id2label") && top.node("id2label").IsMap()) s.num_labels = static_cast<int64_t>(top.node("id2label").size());
    if (has_value(top, "num_labels")) top.read("num_labels", s.num_labels, false, 1);
  } else if (ends_with(a, "Model")) {
    s.head = model::Head::none;
  } else {
    top.problem(top.node("architectures")[0],
                "architectures[0] = '" + limits::cut(a) + "'. Violated constraint: a class ending in ForCausalLM, "
                "ForConditionalGeneration, LMHeadModel, ForSequenceClassification or Model");
  }
}

}  // namespace

namespace {

// A pre-quantized checkpoint (bitsandbytes, GPTQ, AWQ, FP8 blocks...) names its method in quantization_config.
void read_quantization(MapReader& top, const std::string& path, model::ModelShape& s) {
  if (!has_value(top, "quantization_config")) return;
  const YAML::Node q = top.node("quantization_config");
  s.quantization = q.IsMap() && q["quant_method"].IsScalar() ? q["quant_method"].as<std::string>() : "unnamed";
  s.quantization_where = where(path, q.Mark());
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
  const model::Family* family = model_type.empty() ? nullptr : model::find_family(model_type);
  if (family != nullptr) {
    shape.family = *family;
    // A multimodal wrapper (gemma4) describes its language model in text_config.
    const bool wrapped = model_type == family->wrapper_model_type && top.has("text_config");
    MapReader r = wrapped ? top.child("text_config") : top;
    shape.model_type = wrapped ? family->model_types.front() : model_type;
    read_family_config(r, shape);
    read_head(top, shape);
    read_quantization(top, path, shape);
  } else if (!model_type.empty()) {
    std::string known;
    for (const auto& t : model::known_model_types()) known += (known.empty() ? "" : ", ") + t;
    // Say what to do next: a family is one table entry (docs/families.md, "Adding a family"), and a model wired
    // exactly as Llama can be priced as one meanwhile.
    top.problem(top.node("model_type"), "model_type = '" + model_type + "'. Violated constraint: one of " + known +
                                            " (another family needs its entry: docs/families.md, \"Adding a family\"; "
                                            "a model wired exactly as Llama, with q/k/v/o_proj, gate/up/down_proj and "
                                            "two RMSNorms a layer, is priced as one with model_type \"llama\" in a "
                                            "copy of its config)");
  }
  if (diagnostics.empty()) check_shape_limits(shape, root, path, diagnostics);
  diagnostics.throw_if_any();
  return shape;
}

namespace {

// The local Hugging Face hub cache, as huggingface_hub finds it: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
fs::path hf_hub_cache() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  if (!env("HF_HUB_CACHE").empty()) return env("HF_HUB_CACHE");
  if (!env("HF_HOME").empty()) return fs::path(env("HF_HOME")) / "hub";
  if (!env("XDG_CACHE_HOME").empty()) return fs::path(env("XDG_CACHE_HOME")) / "huggingface" / "hub";
  return fs::path(env("HOME")) / ".cache" / "huggingface" / "hub";
}

// `org/name`: one slash between two non-empty parts, neither "." nor "..".
bool is_repo_id(const std::string& s) {
  const size_t slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.find('/', slash + 1) != std::string::npos)
    return false;
  const std::string org = s.substr(0, slash), name = s.substr(slash + 1);
  return org != "." && org != ".." && name != "." && name != "..";
}

// models--org--name/snapshots/<rev>/config.json: the revision refs/main names, else the snapshot most
// recently written that holds a config.json. Empty when there is none.
std::string config_in_hf_cache(const fs::path& repo_dir) {
  std::error_code ec;
  const fs::path snapshots = repo_dir / "snapshots";
  std::ifstream main_ref(repo_dir / "refs" / "main");
  std::string revision;
  if (main_ref >> revision && fs::exists(snapshots / revision / "config.json", ec))
    return (snapshots / revision / "config.json").string();
  fs::path newest;
  fs::file_time_type newest_time{};
  for (const auto& e : fs::directory_iterator(snapshots, ec)) {
    const fs::path config = e.path() / "config.json";
    if (!fs::exists(config, ec)) continue;
    const auto t = fs::last_write_time(config, ec);
    if (newest.empty() || t > newest_time) {
      newest = config;
      newest_time = t;
    }
  }
  return newest.string();
}

fs::path models_dir() {
  const char* env = std::getenv("STEPCAST_MODELS_DIR");
  return env != nullptr ? fs::path(env) : fs::path(STEPCAST_MODELS_DIR);
}

}  // namespace

std::string resolve_model_path(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_directory(name_or_path, ec)) {
    const fs::path config = fs::path(name_or_path) / "config.json";
    if (fs::exists(config, ec)) return config.string();
    throw InputError("model '" + name_or_path + "': a directory without a config.json. Violated constraint: a model "
                     "directory holds the Hugging Face config.json");
  }
  if (fs::exists(name_or_path, ec)) return name_or_path;
  const fs::path dir = models_dir();
  for (const fs::path& candidate : {dir / name_or_path, dir / (name_or_path + ".json")})
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  if (is_repo_id(name_or_path)) {
    const size_t slash = name_or_path.find('/');
    const fs::path repo_dir = hf_hub_cache() / ("models--" + name_or_path.substr(0, slash) + "--" + name_or_path.substr(slash + 1));
    const std::string config = config_in_hf_cache(repo_dir);
    if (!config.empty()) return config;
    throw InputError("model '" + name_or_path + "': not in the local Hugging Face cache (no " +
                     (repo_dir / "snapshots" / "<revision>" / "config.json").string() +
                     "; the cache is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub). Violated "
                     "constraint: a config.json path, a model directory, a name under " + dir.string() +
                     ", or an org/name already downloaded (huggingface-cli download " + name_or_path + " config.json)");
  }
  throw InputError("model '" + name_or_path + "': no such file or directory, and no " + (dir / (name_or_path + ".json")).string() +
                   ". Violated constraint: a config.json path, a model directory, a name under " + dir.string() +
                   ", or an org/name in the local Hugging Face cache");
}

// A model's name is its file's stem, except that a config.json takes its directory's name, and an org/name
// from the cache its name (a snapshot directory is named by a commit hash).
std::string model_name(const std::string& name_or_path, const std::string& resolved) {
  std::error_code ec;
  if (!fs::exists(name_or_path, ec) && is_repo_id(name_or_path)) return name_or_path.substr(name_or_path.find('/') + 1);
  const fs::path p(resolved);
  if (p.filename() != "config.json") return p.stem().string();
  const fs::path parent = fs::absolute(p, ec).parent_path();
  return parent.filename().string();
}

model::ModelShape load_model(const std::string& name_or_path) {
  const std::string path = resolve_model_path(name_or_path);
  model::ModelShape shape = load_model_config(path);
  shape.name = model_name(name_or_path, path);
  return shape;
}

}  // namespace stepcast::io
