#pragma once
// Counts derived from a shape: parameters (total / active per token), LoRA targets and parameters,
// forward GEMM FLOPs per token by component, attention-score FLOPs per row, weight bytes.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/modules.hpp"
#include "model/shape.hpp"

namespace stepcast::model {

struct ParamCounts {
  int64_t total = 0;             // every parameter once (tied embeddings once), as HF's num_parameters()
  int64_t active_per_token = 0;  // total less the experts a token is not routed to
  int64_t embedding = 0;
  int64_t tensors = 0;           // parameter tensors
  int64_t state_dict_entries = 0;  // tensors + persistent buffers + the tied lm_head alias
  int64_t buffer_elements = 0;     // persistent buffers' elements (Gemma-4 layer scalars, DeepSeek-V3's
                                   // e_score_correction_bias): total + these = a checkpoint's tensor elements
  int64_t mtp_params = 0;          // multi-token-prediction layers in the checkpoint that transformers does not
                                   // build (DeepSeek-V3), without their copies of the embedding and the head
  std::map<std::string, int64_t> by_component;  // "attention_proj", "dense_mlp", "experts", ...
};

// Each function that walks the module table takes it (expanded once by the caller, model/modules.hpp); the forms
// without it expand the shape themselves.
ParamCounts count_params(const ModelShape& shape, const ModuleTable& modules);
ParamCounts count_params(const ModelShape& shape);

struct LoraPlan {
  std::vector<std::string> targets;           // as asked, in order
  std::vector<std::string> unmatched;         // targets that name no LoRA-able module of this shape
  std::map<std::string, int64_t> modules_by_target;
  int64_t modules = 0;                        // wrapped nn.Linear modules
  int64_t params = 0;                         // rank * (in + out) summed over them
  int64_t in_features = 0;                    // their inputs' width summed: a token's adapter input elements
  int64_t in_out_features = 0;                // (in + out) summed: params / rank
  int64_t rank = 0;
};

// The Linear modules that a peft-style target list wraps: every nn.Linear whose short name is in the
// list. Experts (stacked 3-D tensors) and the router are not nn.Linear and are never wrapped.
LoraPlan plan_lora(const ModuleTable& modules, const std::vector<std::string>& targets, int64_t rank);
LoraPlan plan_lora(const ModelShape& shape, const std::vector<std::string>& targets, int64_t rank);

// The standard peft target list: attention q,k,v,o and the dense MLP's gate, up, down.
std::vector<std::string> default_lora_targets();

// A shape's own default: every nn.Linear short name it has, in first-seen order (peft's "all-linear", which
// leaves the output head out). For Llama-like and Gemma-4 shapes it is default_lora_targets(); Phi-3 gets
// qkv_proj, o_proj, gate_up_proj, down_proj; MLA gets its q_a_proj, kv_a_proj_with_mqa, ...
std::vector<std::string> default_lora_targets(const ModuleTable& modules);
std::vector<std::string> default_lora_targets(const ModelShape& shape);

// Every LoRA-able (nn.Linear) short name of the shape, sorted.
std::vector<std::string> lora_able_names(const ModuleTable& modules);
std::vector<std::string> lora_able_names(const ModelShape& shape);

// One message per target that names no nn.Linear module of the table ("'x' names no nn.Linear module of
// MODEL. Violated constraint: one of a, b, ..."); empty when every target is one. Callers prefix where it was.
std::vector<std::string> lora_target_problems(const ModuleTable& modules, const std::vector<std::string>& targets,
                                              const std::string& model_name);

// Forward GEMM FLOPs per processed token (2 per multiply-add), by component. Backward and recompute
// multiples belong to the step model, not here.
struct GemmFlopsPerToken {
  double attention_proj = 0;
  double latent_proj = 0;     // MLA's low-rank q/kv projections
  double dense_mlp = 0;
  double experts = 0;         // top_k experts' MLPs
  double shared_experts = 0;  // the shared experts every token passes through
  double router = 0;
  double lm_head = 0;
  double total() const { return attention_proj + latent_proj + dense_mlp + experts + shared_experts + router + lm_head; }
};
GemmFlopsPerToken gemm_flops_per_token(const ModelShape& shape, const ModuleTable& modules);
GemmFlopsPerToken gemm_flops_per_token(const ModelShape& shape);

// How an attention kernel walks the score matrix of one row of width W.
enum class ScoreWork {
  causal_window,  // skips masked tiles: each query sees min(position + 1, window) keys
  causal,         // skips the upper triangle but not the window: position + 1 keys
  full_square,    // computes W x W (an explicit mask fed to a kernel that cannot skip)
};

// Number of (query, key) pairs a kernel computes for one row of width W on this layer.
double attended_pairs(const AttentionSpec& layer, int64_t width, ScoreWork work);

// Forward FLOPs of QK^T and PV for one row of width W on one layer: 2 * heads * (qk_dim + v_dim) * pairs
// (4 * heads * head_dim where q, k and v share a head_dim; MLA: qk = nope + rope, v = v_head_dim).
double attention_score_flops(const AttentionSpec& layer, int64_t width, ScoreWork work);

// Bytes of all weights in the given dtype.
int64_t weight_bytes(const ModelShape& shape, const std::string& dtype);

// Layers grouped by type, in first-seen order: {type, count, indices}.
struct LayerGroup {
  std::string type;
  AttentionSpec spec;
  std::vector<int64_t> indices;
};
std::vector<LayerGroup> layers_by_type(const ModelShape& shape);

std::string component_name(Component c);

}  // namespace stepcast::model
