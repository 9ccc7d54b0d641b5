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
  f.names.router_path = "router.";
  f.names.router = "proj";
  f.names.experts = "experts.";
  f.qk_norm = true;
  f.v_norm = true;
  f.attention_scale = 1.0;  // transformers' Gemma4 attention: scaling = 1 (q and k are normed)
  f.router_scales = true;
  f.dense_beside_experts = true;
  f.scaled_embedding = true;
  f.tie_default = true;
  f.activation_default = "gelu_pytorch_tanh";
  f.layer_scalar_buffer = true;
  return f;
}

Family llama_like(const std::string& model_type, ConfigSchema schema = ConfigSchema::llama) {
  Family f;
  f.name = model_type;
  f.model_types = {model_type};
  f.schema = schema;
  return f;
}

// Gemma, Gemma-2, Gemma-3 (transformers' Gemma*Config defaults): embeddings x sqrt(hidden), tied, GELU(tanh);
// Gemma-2/3 wrap attention and the MLP in norms before and after, alternate sliding and global layers.
Family gemma(const std::string& model_type, int generation) {
  Family f = llama_like(model_type);
  f.scaled_embedding = true;
  f.tie_default = true;
  f.activation_default = "gelu_pytorch_tanh";
  if (generation == 1) return f;
  f.block = BlockLayout::sandwich;
  f.layer_norms = {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm"};
  f.sliding_pattern_default = generation == 2 ? 2 : 6;
  if (generation == 3) {
    f.qk_norm = true;
    f.vocab_default = 262208;  // Gemma3TextConfig's default; the published text_config omits it
    f.wrapper_model_type = "gemma3";
  }
  return f;
}

Family qwen_moe(const std::string& model_type) {
  Family f = llama_like(model_type, ConfigSchema::qwen_moe);
  if (model_type == "qwen2_moe") {
    f.qkv_bias_default = true;  // Qwen2MoeAttention: bias on q, k, v, never on o_proj
    f.o_bias_with_qkv = false;
    f.shared_expert_gate = true;
  } else {
    f.qk_norm = true;  // Qwen3MoeAttention: q_norm, k_norm
  }
  return f;
}

Family mixtral() {
  Family f = llama_like("mixtral", ConfigSchema::mixtral);
  f.window_on_every_layer = true;  // MixtralConfig.sliding_window, as Mistral's
  return f;
}

Family llama4_text() {
  Family f = llama_like("llama4_text", ConfigSchema::llama4);
  f.wrapper_model_type = "llama4";
  f.names.mlp = "feed_forward.";
  f.names.router_path = "feed_forward.";
  f.names.router = "router";
  f.names.experts = "feed_forward.experts.";
  f.names.shared_expert = "feed_forward.shared_expert.";
  return f;
}

Family deepseek(const std::string& model_type) {
  Family f = llama_like(model_type, ConfigSchema::deepseek);
  f.names.shared_expert = "mlp.shared_experts.";
  return f;
}

Family phi3() {
  Family f = llama_like("phi3");
  f.names.fused_qkv = "qkv_proj";
  f.names.fused_gate_up = "gate_up_proj";
  f.window_on_every_layer = true;  // Phi3Config.sliding_window applies to every layer
  return f;
}

Family olmo2() {
  Family f = llama_like("olmo2");
  f.block = BlockLayout::post_norm;
  f.layer_norms = {"post_attention_layernorm", "post_feedforward_layernorm"};
  f.qk_norm_whole = true;  // Olmo2Attention: q_norm over heads x head_dim, k_norm over kv_heads x head_dim
  return f;
}

// OLMo-3 (transformers' Olmo3ForCausalLM): OLMo-2's modules, post-norm block and q/k norms over the whole
// projections, plus sliding-window attention: the layers layer_types calls sliding_attention attend within
// sliding_window (4096 published), the others fully; without layer_types, Olmo3Config makes every 4th layer full
// and the other three sliding. YaRN (rope_scaling) only rescales RoPE's frequencies: no count, no kernel shape.
Family olmo3() {
  Family f = olmo2();
  f.name = "olmo3";
  f.model_types = {"olmo3"};
  f.sliding_pattern_default = 4;
  return f;
}

// OLMoE (transformers' OlmoeForCausalLM): Llama's pre-norm block, q/k norms over the whole projections as OLMo-2's,
// and on every layer Mixtral's routed experts (num_experts of them, as wide as intermediate_size), no shared expert.
Family olmoe() {
  Family f = llama_like("olmoe", ConfigSchema::mixtral);
  f.qk_norm_whole = true;
  return f;
}

Family gpt_neox() {
  Family f = llama_like("gpt_neox", ConfigSchema::gpt_neox);
  f.block = BlockLayout::parallel_residual;
  f.names.attention = "attention.";
  f.names.fused_qkv = "query_key_value";
  f.names.o_proj = "dense";
  f.names.gate_proj = "";
  f.names.up_proj = "dense_h_to_4h";
  f.names.down_proj = "dense_4h_to_h";
  f.names.embedding = "embed_in";
  f.names.final_norm = "final_layer_norm";
  f.names.lm_head = "embed_out";
  f.qkv_bias_default = true;  // GPTNeoXConfig.attention_bias = True
  f.mlp_bias_default = true;  // nn.Linear defaults in GPTNeoXMLP
  f.norm_bias = true;         // nn.LayerNorm
  f.activation_default = "gelu";
  return f;
}

// Granite 3.x (transformers' GraniteForCausalLM): Llama's modules and wiring, plus four scalars of the config
// (embedding_multiplier, residual_multiplier on both residual branches, attention_multiplier as the softmax scale,
// logits_scaling): elementwise multiplies by a Python float, which save nothing for the backward and add two
// hidden-wide passes a layer to the memory-bound work (not counted: within that count's error, docs/families.md).
Family granite() { return llama_like("granite"); }

// SmolLM3 (transformers' SmolLM3ForCausalLM): Llama's modules and wiring, tied embeddings by default. Its
// no_rope_layers (every 4th layer, no_rope_layer_interval) skip RoPE on q and k: no parameter, no GEMM and the same
// attention kernel shape, only RoPE's elementwise pass on those layers, which the memory-bound count keeps (as for
// Llama-4's NoPE layers; docs/families.md). The sliding window is off in the published config (use_sliding_window:
// false, sliding_window: null); turned on, layer_types says which layers slide, else the NoPE layers do.
Family smollm3() {
  Family f = llama_like("smollm3");
  f.tie_default = true;  // SmolLM3Config.tie_word_embeddings = True
  f.window_on_nope_layers = true;
  return f;
}

// GLM-4 dense, the 0414 models (transformers' Glm4ForCausalLM): q_proj, k_proj, v_proj with biases (attention_bias,
// on unless the config says otherwise) and o_proj without; Phi-3's fused gate_up_proj; and Gemma-2's sandwich block
// under GLM's names: input_layernorm before attention, post_self_attn_layernorm on its output before the residual
// add, post_attention_layernorm before the MLP, post_mlp_layernorm on its output (listed in transformers' order,
// which is not the wiring's). RoPE turns half of each head (partial_rotary_factor, 0.5 when the config is silent);
// untied embeddings. No window, no q/k norms (docs/families.md).
Family glm4() {
  Family f = llama_like("glm4");
  f.block = BlockLayout::sandwich;
  f.layer_norms = {"input_layernorm", "post_attention_layernorm", "post_self_attn_layernorm", "post_mlp_layernorm"};
  f.names.fused_gate_up = "gate_up_proj";
  f.qkv_bias_default = true;  // Glm4Config.attention_bias = True
  f.o_bias_with_qkv = false;
  f.partial_rotary_default = 0.5;
  return f;
}

// GPT-OSS (transformers' GptOssForCausalLM): Llama's pre-norm block with q/k/v/o biases (attention_bias, on when the
// config is silent) and a learned sink logit per head in every softmax (`self_attn.sinks`); on every layer
// num_local_experts experts as wide as intermediate_size (Mixtral's schema) with biases on the router and on the
// experts' fused gate_up_proj and down_proj; sliding_attention layers (every other one from layer 0 without
// layer_types, GptOssConfig) attend within sliding_window (128). The model class declares _supports_sdpa = False, so
// transformers' default attention is eager: scores materialised, W x W on every layer, whatever the window
// (docs/families.md, "Eager attention"). The experts' clamped SwiGLU, (up + 1) * gate * sigmoid(1.702 gate) with both
// clamped at 7, has a gated MLP's shapes; its clamps and +1 are elementwise passes the memory-bound count leaves out.
// Weights are priced in the config's dtype (bf16 to fine-tune): the released MXFP4 experts are for inference.
Family gpt_oss() {
  Family f = llama_like("gpt_oss", ConfigSchema::mixtral);
  f.names.router = "router";
  f.qkv_bias_default = true;  // GptOssConfig.attention_bias = True
  f.attention_sinks = true;
  f.eager_attention = true;
  f.expert_bias = true;
  f.sliding_pattern_default = 2;  // GptOssConfig.layer_types: sliding, full, sliding, ...
  return f;
}

// StarCoder2 (transformers' Starcoder2ForCausalLM, Mistral's model with StarCoder's modules): LayerNorms with biases
// (norm_epsilon), q/k/v/o and an ungated GELU(tanh) MLP, mlp.c_fc -> mlp.c_proj, all with biases (use_bias, on when the
// config is silent); Llama's pre-norm block; sliding_window, when not null, on every layer (Mistral's mask); tied
// embeddings unless the config says otherwise (PretrainedConfig's default).
Family starcoder2() {
  Family f = llama_like("starcoder2");
  f.names.gate_proj = "";
  f.names.up_proj = "c_fc";
  f.names.down_proj = "c_proj";
  f.qkv_bias_default = true;  // Starcoder2Config.use_bias = True
  f.mlp_bias_default = true;
  f.norm_bias = true;         // nn.LayerNorm
  f.activation_default = "gelu_pytorch_tanh";
  f.window_on_every_layer = true;
  f.tie_default = true;
  return f;
}

std::vector<Family> built_in() {
  std::vector<Family> table{gemma4_text(), llama_like("llama"), llama_like("mistral"), llama_like("qwen2"),
                            llama_like("qwen3")};
  table[2].window_on_every_layer = true;  // Mistral: sliding_window on every layer unless use_sliding_window=false
  table[2].wrapper_model_type = "mistral3";  // Mistral-3 (Small 3.1): a multimodal wrapper, text_config mistral
  table[3].qkv_bias_default = true;       // Qwen2: biases on q, k, v ...
  table[3].o_bias_with_qkv = false;       // ... never on o_proj
  table[4].qk_norm = true;                // Qwen3: q_norm, k_norm
  for (Family f : {qwen_moe("qwen2_moe"), qwen_moe("qwen3_moe"), mixtral(), llama4_text(), deepseek("deepseek_v2"),
                   deepseek("deepseek_v3"), gemma("gemma", 1), gemma("gemma2", 2), gemma("gemma3_text", 3), phi3(),
                   olmo2(), olmoe(), gpt_neox(), granite(), olmo3(), smollm3(), glm4(), gpt_oss(), starcoder2()})
    table.push_back(f);
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
