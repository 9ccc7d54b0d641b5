#pragma once
// The shape of a decoder-only language model, as the cost model sees it: plain structs with defaults
// (Timeloop's specs), built by the config parser in io/ from a config and its family's entry, and consumed by
// everything else (the counts, the features, the memory model and the harness).
#include <cstdint>
#include <string>
#include <vector>

#include "model/family.hpp"

namespace stepcast::model {

// One attention layer type (Gemma-4 has two: "sliding_attention" and "full_attention").
struct AttentionSpec {
  std::string type = "full_attention";
  int64_t num_heads = 0;
  int64_t head_dim = 0;
  int64_t num_kv_heads = 0;
  int64_t window = 0;             // keys a query may see; 0 = unlimited (plain causal)
  bool has_v_proj = true;         // false where K = V (Gemma-4 `attention_k_eq_v` on full layers)
  bool qkv_bias = false;          // Qwen2 has biases on q, k, v
  bool o_bias = false;
  bool qk_norm = false;           // RMSNorm over head_dim on q and k (Gemma-3/4, Qwen3)
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;  // Gemma-4 full layers rotate 1/4 of head_dim
};

// Routed experts beside (Gemma-4) or instead of the dense MLP.
struct MoeSpec {
  int64_t num_experts = 0;        // 0 = no experts
  int64_t top_k = 0;
  int64_t intermediate_size = 0;  // width of one expert's MLP
};

struct ModelShape {
  std::string name;               // a label: the config file's stem unless given
  std::string model_type;         // Hugging Face `model_type`: gemma4_text, llama, mistral, qwen2, qwen3
  int64_t hidden_size = 0;
  int64_t vocab_size = 0;
  int64_t intermediate_size = 0;  // dense gated MLP width (gate, up, down); 0 = none
  bool mlp_bias = false;
  std::vector<AttentionSpec> layers;  // one entry per decoder layer, in order
  MoeSpec moe;
  bool tie_word_embeddings = false;
  double final_logit_softcap = 0.0;   // 0 = none
  double rms_norm_eps = 1e-6;
  std::string hidden_activation = "silu";
  std::string dtype = "bfloat16";     // the weights' dtype in the config (`torch_dtype` / `dtype`)
  int64_t max_position_embeddings = 0;
  // The family's description (model/family.hpp): which modules a layer has and how they are wired.
  Family family;

  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
};

// Bytes of one element of a dtype named as Hugging Face / PyTorch name it ("bfloat16", "float32", ...).
// Throws stepcast::InputError for a name it does not know.
int64_t dtype_bytes(const std::string& dtype);

}  // namespace stepcast::model
