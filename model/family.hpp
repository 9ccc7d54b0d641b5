#pragma once
// A model family as data: one entry per family says which modules a decoder layer has and how they are
// wired, and everything else reads it. io/model_config.cpp fills a ModelShape from a config through its
// family's entry; model/modules.cpp expands the shape into the one parameter table (names, shapes) that
// `describe`'s counts, the step features, the memory model and the LibTorch harness's allocation all walk
// (llm.c's fill_in_parameter_sizes); the harness's forward follows `block` and the attention flags.
// Adding a family: docs/families.md has the checklist.
#include <string>
#include <vector>

namespace stepcast::model {

// Which keys of config.json describe the family (io/model_config.cpp has one reader per schema).
enum class ConfigSchema {
  llama,   // num_attention_heads, num_key_value_heads, head_dim, optional sliding_window / layer_types
  gemma4,  // Gemma-4 text: sliding/global layer_types, global_head_dim, attention_k_eq_v, MoE block
};

// How a decoder layer wires its norms around attention and the feed-forward part.
enum class BlockLayout {
  pre_norm,         // Llama: x + attn(norm(x)); h + mlp(norm(h))  (input_layernorm, post_attention_layernorm)
  gemma4_sandwich,  // Gemma-4: norms before and after attention and each feed-forward branch, dense MLP
                    // beside routed experts, a per-layer scalar (transformers' Gemma4TextDecoderLayer)
};

struct Family {
  std::string name;                       // "llama", "gemma4_text"
  std::vector<std::string> model_types;   // config `model_type` values it covers
  std::string wrapper_model_type;         // a multimodal config whose text_config is this family ("gemma4")
  ConfigSchema schema = ConfigSchema::llama;
  BlockLayout block = BlockLayout::pre_norm;

  // Hidden-sized norms of a decoder layer, in Hugging Face's order and names; more when it has experts.
  std::vector<std::string> layer_norms = {"input_layernorm", "post_attention_layernorm"};
  std::vector<std::string> expert_layer_norms;

  // Attention.
  bool qk_norm = false;                 // RMSNorm over head_dim on q and k (Gemma-3/4, Qwen3)
  bool v_norm = false;                  // scale-free RMSNorm on v (Gemma-4)
  double attention_scale = 0;           // softmax scale; 0 = 1/sqrt(head_dim), Gemma-4: 1
  bool qkv_bias_default = false;        // when the config has no attention_bias (Qwen2: true)
  bool o_bias_with_qkv = true;          // o_proj has a bias when q/k/v do (Qwen2: never)
  bool window_on_every_layer = false;   // sliding_window applies to all layers by default (Mistral)

  // Experts (MoE): transformers' fused layout, gate and up in one [E, 2I, h] tensor, down in [E, h, I].
  bool router_scales = false;           // a hidden-sized scale and a per-expert scale beside the router

  // Embeddings and the rest.
  bool scaled_embedding = false;        // embeddings times sqrt(hidden) (Gemma)
  bool tie_default = false;             // tie_word_embeddings when the config does not say
  std::string activation_default = "silu";
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
