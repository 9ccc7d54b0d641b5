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
  double scale = 0;               // softmax scale; 0 = the family's (Gemma-2/3: query_pre_attn_scalar^-1/2)
  double logit_softcap = 0;       // tanh cap on the scores (Gemma-2 attn_logit_softcapping); 0 = none
  int64_t chunk = 0;              // chunked attention (Llama-4): queries see keys of their own chunk only
  bool eager = false;             // transformers' eager attention (Family::eager_attention): scores materialised
  // Multi-head latent attention (DeepSeek-V2/V3): head_dim is q/k's (nope + rope), v_head_dim v's.
  int64_t v_head_dim = 0;         // 0 = head_dim
  int64_t q_lora_rank = 0;        // q through a low-rank q_a_proj / q_b_proj; 0 = one q_proj
  int64_t kv_lora_rank = 0;       // > 0 = MLA: kv_a_proj_with_mqa to kv_lora_rank + rope_head_dim, kv_b_proj up
  int64_t rope_head_dim = 0;      // MLA's qk_rope_head_dim: the part of q/k that is rotated (shared by heads in k)

  bool mla() const { return kv_lora_rank > 0; }
  int64_t value_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
};

// Routed experts beside (Gemma-4) or instead of the dense MLP.
struct MoeSpec {
  int64_t num_experts = 0;        // 0 = no experts
  int64_t top_k = 0;
  int64_t intermediate_size = 0;  // width of one expert's MLP
  int64_t shared_intermediate_size = 0;  // shared expert(s) every token passes through; 0 = none
  bool norm_topk_prob = false;    // top-k weights renormalised to sum 1 (routing arithmetic only)
  bool router_bias_buffer = false;  // DeepSeek-V3's e_score_correction_bias: a buffer per MoE layer
  std::vector<int64_t> dense_layers;  // layers with a dense MLP instead of experts (first_k_dense_replace,
                                      // mlp_only_layers, decoder_sparse_step), ascending
};

struct ModelShape {
  std::string name;               // a label: the config file's stem unless given
  std::string model_type;         // Hugging Face `model_type`: gemma4_text, llama, mistral, qwen2, qwen3
  int64_t hidden_size = 0;
  int64_t vocab_size = 0;
  int64_t intermediate_size = 0;  // dense MLP width (gate, up, down) of the layers that have one; 0 = none
  bool mlp_bias = false;
  std::vector<AttentionSpec> layers;  // one entry per decoder layer, in order
  MoeSpec moe;
  bool tie_word_embeddings = false;
  double final_logit_softcap = 0.0;   // 0 = none
  double rms_norm_eps = 1e-6;
  std::string hidden_activation = "silu";
  std::string dtype = "bfloat16";     // the weights' dtype in the config (`torch_dtype` / `dtype`)
  // The config's quantization_config (its quant_method, and the key's file:line:col): quantized base weights,
  // which no step or memory rule prices; empty = none. describe counts such a model, predictions refuse it.
  std::string quantization;
  std::string quantization_where;
  int64_t max_position_embeddings = 0;
  Head head = Head::lm_head;          // from `architectures`
  int64_t num_labels = 0;             // Head::classifier's outputs
  bool parallel_residual = false;     // GPT-NeoX use_parallel_residual
  int64_t mtp_layers = 0;             // DeepSeek-V3 num_nextn_predict_layers: in the checkpoint, not built
  // The family's description (model/family.hpp): which modules a layer has and how they are wired.
  Family family;

  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
  // Whether decoder layer `layer` routes to experts (MoE) rather than (only) a dense MLP.
  bool has_experts(int64_t layer) const;
  // Whether it has a dense MLP: layers without experts, and every layer where the family keeps one beside.
  bool has_dense_mlp(int64_t layer) const;
};

// Bytes of one element of a dtype named as Hugging Face / PyTorch name it ("bfloat16", "float32", ...).
// Throws stepcast::InputError for a name it does not know.
int64_t dtype_bytes(const std::string& dtype);

}  // namespace stepcast::model
