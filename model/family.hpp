#pragma once
// A model family as data: one entry per family says which modules a decoder layer has and how they are
// wired, and everything else reads it. io/model_config.cpp fills a ModelShape from a config through its
// family's entry; model/modules.cpp expands the shape into the one parameter table (names, shapes) that
// `describe`'s counts, the step features, the memory model and the LibTorch harness's allocation all walk
// (llm.c's fill_in_parameter_sizes); the harness's forward follows `block` and the attention flags.
// Adding a family: docs/families.md has the checklist.
#include <cstdint>
#include <string>
#include <vector>

namespace stepcast::model {

// Which keys of config.json describe the family (io/model_config.cpp has one reader per schema).
enum class ConfigSchema {
  llama,     // num_attention_heads, num_key_value_heads, head_dim, optional sliding_window / layer_types
  gemma4,    // Gemma-4 text: sliding/global layer_types, global_head_dim, attention_k_eq_v, MoE block
  qwen_moe,  // llama keys + num_experts, num_experts_per_tok, moe_intermediate_size, decoder_sparse_step,
             // mlp_only_layers, norm_topk_prob, shared_expert_intermediate_size (Qwen2-MoE, Qwen3-MoE)
  mixtral,   // llama keys + num_local_experts (OLMoE: num_experts), num_experts_per_tok (experts as wide as
             // intermediate_size), optional norm_topk_prob
  llama4,    // llama keys + num_local_experts, interleave_moe_layer_step / moe_layers, intermediate_size_mlp,
             // attention_chunk_size, no_rope_layers (Llama-4 text)
  deepseek,  // MLA (q_lora_rank, kv_lora_rank, qk_nope/rope_head_dim, v_head_dim), n_routed_experts,
             // n_shared_experts, first_k_dense_replace, moe_layer_freq, num_nextn_predict_layers
  gpt_neox,  // rotary_pct, use_parallel_residual, layer_norm_eps; fused query_key_value, ungated MLP
};

// How a decoder layer wires its norms around attention and the feed-forward part.
enum class BlockLayout {
  pre_norm,         // Llama: x + attn(norm(x)); h + mlp(norm(h))  (input_layernorm, post_attention_layernorm)
  gemma4_sandwich,  // Gemma-4: norms before and after attention and each feed-forward branch, dense MLP
                    // beside routed experts, a per-layer scalar (transformers' Gemma4TextDecoderLayer)
  sandwich,         // Gemma-2/3: x + post_norm(attn(pre_norm(x))); h + post_ff_norm(mlp(pre_ff_norm(h)));
                    // GLM-4 the same under other names, whose registration order (layer_norms) is not this one
  post_norm,        // OLMo-2: x + norm(attn(x)); h + norm(mlp(h))  (post_attention/post_feedforward_layernorm)
  parallel_residual,  // GPT-NeoX: x + attn(ln1(x)) + mlp(ln2(x)) when use_parallel_residual, else pre_norm
};

// What the config's `architectures` entry puts on top of the decoder stack.
enum class Head {
  lm_head,     // *ForCausalLM, *ForConditionalGeneration (or no `architectures`): vocab x hidden, tied or not
  none,        // *Model: an embedding / feature model, no output projection
  classifier,  // *ForSequenceClassification: `score`, num_labels x hidden, never tied
};

// Hugging Face's module names where a family departs from Llama's (`layers.N.<attention><q_proj>`).
struct ModuleNames {
  std::string attention = "self_attn.";       // GPT-NeoX: "attention."
  std::string fused_qkv;                      // q, k and v in one nn.Linear: Phi-3 "qkv_proj", GPT-NeoX
                                              // "query_key_value"; empty = q_proj, k_proj, v_proj
  std::string o_proj = "o_proj";              // GPT-NeoX: "dense"
  std::string mlp = "mlp.";                   // Llama-4: "feed_forward."
  std::string fused_gate_up;                  // gate and up in one nn.Linear [2I, h]: Phi-3 "gate_up_proj"
  std::string gate_proj = "gate_proj";        // empty = an ungated MLP (GPT-NeoX)
  std::string up_proj = "up_proj";            // GPT-NeoX: "dense_h_to_4h"
  std::string down_proj = "down_proj";        // GPT-NeoX: "dense_4h_to_h"
  std::string router_path = "mlp.";           // the router's parent and name: "mlp.gate" (Qwen-MoE, Mixtral,
  std::string router = "gate";                // DeepSeek), "router.proj" (Gemma-4), "feed_forward.router"
  std::string experts = "mlp.experts.";       // stacked experts (transformers 5): Gemma-4 "experts."
  std::string shared_expert = "mlp.shared_expert.";  // DeepSeek "mlp.shared_experts.", Llama-4 "feed_forward.shared_expert."
  std::string embedding = "embed_tokens";     // GPT-NeoX: "embed_in"
  std::string final_norm = "norm";            // GPT-NeoX: "final_layer_norm"
  std::string lm_head = "lm_head";            // GPT-NeoX: "embed_out"
};

struct Family {
  std::string name;                       // "llama", "gemma4_text"
  std::vector<std::string> model_types;   // config `model_type` values it covers
  std::string wrapper_model_type;         // a multimodal config whose text_config is this family ("gemma4")
  ConfigSchema schema = ConfigSchema::llama;
  BlockLayout block = BlockLayout::pre_norm;

  ModuleNames names;

  // Hidden-sized norms of a decoder layer, in Hugging Face's order and names; more when it has experts.
  std::vector<std::string> layer_norms = {"input_layernorm", "post_attention_layernorm"};
  std::vector<std::string> expert_layer_norms;

  // Attention.
  bool qk_norm = false;                 // RMSNorm over head_dim on q and k (Gemma-3/4, Qwen3)
  bool qk_norm_whole = false;           // ... over all heads at once, [heads x head_dim] (OLMo-2)
  bool v_norm = false;                  // scale-free RMSNorm on v (Gemma-4)
  double attention_scale = 0;           // softmax scale; 0 = 1/sqrt(head_dim), Gemma-4: 1
  bool qkv_bias_default = false;        // when the config has no attention_bias (Qwen2: true)
  bool o_bias_with_qkv = true;          // o_proj has a bias when q/k/v do (Qwen2: never)
  bool window_on_every_layer = false;   // sliding_window applies to all layers by default (Mistral)
  bool window_on_nope_layers = false;   // without layer_types, use_sliding_window with a sliding_window makes the
                                        // layers without RoPE slide (no_rope_layers[i] == 0, else every
                                        // no_rope_layer_interval-th), the others full (SmolLM3Config)
  bool attention_sinks = false;         // a learned per-head sink logit, `self_attn.sinks` [heads], joins each row's
                                        // softmax (GPT-OSS)
  bool eager_attention = false;         // transformers' default attn_implementation falls back to eager: the model
                                        // class declares _supports_sdpa = False (GPT-OSS: SDPA cannot add the sinks),
                                        // so every layer materialises its scores (docs/families.md, "Eager attention")

  // Experts (MoE): transformers' fused layout, gate and up in one [E, 2I, h] tensor, down in [E, h, I].
  bool router_scales = false;           // a hidden-sized scale and a per-expert scale beside the router
  bool dense_beside_experts = false;    // a dense MLP on every layer, experts beside it (Gemma-4)
  bool shared_expert_gate = false;      // a sigmoid gate nn.Linear(h, 1) on the shared expert (Qwen2-MoE)
  bool expert_bias = false;             // biases on the router ([E]) and the experts (gate_up [E, 2I], down [E, h]):
                                        // GPT-OSS's GptOssTopKRouter and GptOssExperts

  // Embeddings and the rest.
  bool scaled_embedding = false;        // embeddings times sqrt(hidden) (Gemma)
  bool tie_default = false;             // tie_word_embeddings when the config does not say
  std::string activation_default = "silu";
  bool norm_bias = false;               // LayerNorm with a bias (GPT-NeoX) instead of RMSNorm
  bool mlp_bias_default = false;        // MLP biases when the config is silent (GPT-NeoX: yes)
  double partial_rotary_default = 1.0;  // partial_rotary_factor when the config has none (GLM-4: 0.5, Glm4Config)
  int64_t vocab_default = 0;            // vocab_size when the config omits it (Gemma-3: 262208); 0 = required
  int64_t sliding_pattern_default = 0;  // without layer_types: every Nth layer global, the rest sliding
                                        // (Gemma-2: 2, Gemma-3: 6, its `sliding_window_pattern`; OLMo-3: 4); 0 = none
  bool layer_scalar_buffer = false;     // a persistent per-layer scalar buffer (in the state dict)
};

// The families this build knows, built in and registered, in order.
const std::vector<Family>& families();
// Adds a family at run time (a front end's own, or a test's). Throws stepcast::InputError when one of its
// model_types is already taken.
void register_family(const Family& family);
// The family whose model_types (or wrapper) hold `model_type`; nullptr for none.
const Family* find_family(const std::string& model_type);
// Every model_type and wrapper the families accept, sorted, for messages.
std::vector<std::string> known_model_types();

}  // namespace stepcast::model
