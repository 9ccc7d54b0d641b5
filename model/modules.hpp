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
  norm,        // RMSNorm weight
  scale,       // other small parameters (router scales)
};

enum class Component { embedding, attention_proj, dense_mlp, experts, router, lm_head, norm };

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
  int64_t params() const { return weight_params() + (bias ? copies * out_features : 0); }
  int64_t tensors() const { return bias ? 2 : 1; }

  // The weight as the state dict names it and its tensor shape, so that counting and allocation walk one
  // table: nn.Linear-like modules (embedding, lm_head, linear, router) hold `<name>.weight` [out, in] and a
  // norm `<name>.weight` [dim]; stacked experts are the bare parameter `<name>` [copies, out, in] and a scale
  // the bare `<name>` [dim]. A bias is `<name>.bias` [out].
  std::string weight_name() const;
  std::vector<int64_t> weight_shape() const;
};

std::vector<Module> expand_modules(const ModelShape& shape);

}  // namespace stepcast::model
