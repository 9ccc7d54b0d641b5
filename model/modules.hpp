#pragma once
// The parameter tensors a shape expands into, one entry per tensor, named as Hugging Face names them
// (`layers.5.self_attn.q_proj`). Parameter counts, LoRA targets, per-token GEMM FLOPs and the harness's
// allocation all walk this one list, so they cannot disagree with each other.
#include <cstdint>
#include <string>
#include <vector>

#include "model/shape.hpp"

namespace stepcast::model {

enum class ModuleKind {
  embedding,   // token embedding (also the LM head when tied)
  lm_head,     // untied output projection
  linear,      // an nn.Linear: LoRA-targetable
  experts,     // a stacked [num_experts, out, in] weight of routed experts
  router,      // the expert router's projection
  norm,        // RMSNorm weight (a LayerNorm's weight and bias where the family says so)
  scale,       // other small parameters (router scales)
};

// What a module is for; the GEMM FLOPs and the step work are summed by component.
enum class Component {
  embedding,
  attention_proj,  // q, k, v, o (or fused qkv) projections
  latent_proj,     // MLA's low-rank projections: q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj
  dense_mlp,
  experts,         // routed experts (top-k of them per token)
  shared_experts,  // experts every token passes through (Qwen-MoE, DeepSeek, Llama-4)
  router,
  lm_head,
  norm,
};

struct Module {
  std::string name;       // full name, e.g. "layers.5.mlp.gate_proj"
  std::string short_name; // the name LoRA target lists use, e.g. "gate_proj"
  ModuleKind kind = ModuleKind::linear;
  Component component = Component::attention_proj;
  int64_t layer = -1;     // decoder layer index, -1 outside the stack
  int64_t in_features = 0;
  int64_t out_features = 0;
  int64_t copies = 1;     // experts: num_experts stacked matrices in one tensor
  bool bias = false;

  int64_t weight_params() const { return copies * in_features * out_features; }
  // A linear's bias has out_features entries, a LayerNorm's as many as its weight.
  int64_t bias_params() const { return bias ? copies * (kind == ModuleKind::norm ? in_features : out_features) : 0; }
  int64_t params() const { return weight_params() + bias_params(); }
  int64_t tensors() const { return bias ? 2 : 1; }

  // The weight as the state dict names it and its tensor shape, so that counting and allocation walk one
  // table: nn.Linear-like modules (embedding, lm_head, linear, router) hold `<name>.weight` [out, in] and a
  // norm `<name>.weight` [dim]; stacked experts are the bare parameter `<name>` [copies, out, in] and a scale
  // the bare `<name>` [dim]. A bias is `<name>.bias` [out].
  std::string weight_name() const;
  std::vector<int64_t> weight_shape() const;
};

// Every tensor of a shape, in the order Hugging Face builds them. Walking it is the one way a count, the LoRA plan,
// the features, the launches or the memory learn what a model holds: a front end expands a model once and hands
// the table to each (predict/predictor.hpp).
using ModuleTable = std::vector<Module>;
ModuleTable expand_modules(const ModelShape& shape);

}  // namespace stepcast::model
