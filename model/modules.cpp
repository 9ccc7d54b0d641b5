#include "model/modules.hpp"

namespace stepcast::model {
namespace {

std::string layer_prefix(int64_t layer) { return "layers." + std::to_string(layer) + "."; }

Module linear(int64_t layer, const std::string& path, const std::string& short_name, Component component,
              int64_t in, int64_t out, bool bias) {
  return Module{layer_prefix(layer) + path + short_name, short_name, ModuleKind::linear, component, layer,
                in, out, 1, bias};
}

Module norm(int64_t layer, const std::string& name, int64_t dim, bool bias = false) {
  std::string full = layer >= 0 ? layer_prefix(layer) + name : name;
  return Module{full, name, ModuleKind::norm, Component::norm, layer, dim, 1, 1, bias};
}

void add_qk_norms(std::vector<Module>& out, int64_t layer, const ModelShape& shape, const AttentionSpec& a) {
  const std::string& p = shape.family.names.attention;
  if (a.qk_norm) {
    out.push_back(norm(layer, p + "q_norm", a.head_dim));
    out.push_back(norm(layer, p + "k_norm", a.head_dim));
  } else if (shape.family.qk_norm_whole) {
    out.push_back(norm(layer, p + "q_norm", a.num_heads * a.head_dim));
    out.push_back(norm(layer, p + "k_norm", a.num_kv_heads * a.head_dim));
  }
}

// Multi-head latent attention (transformers' DeepseekV2Attention / DeepseekV3Attention): q through q_proj, or
// the low-rank q_a_proj -> q_a_layernorm -> q_b_proj; k and v from one low-rank kv_a_proj_with_mqa (the
// latent plus the rotated part of k, shared by all heads) -> kv_a_layernorm -> kv_b_proj (per-head nope k, v).
void add_latent_attention(std::vector<Module>& out, int64_t layer, const ModelShape& shape, const AttentionSpec& a) {
  const std::string& p = shape.family.names.attention;
  const int64_t h = shape.hidden_size;
  const int64_t nope = a.head_dim - a.rope_head_dim;
  if (a.q_lora_rank > 0) {
    out.push_back(linear(layer, p, "q_a_proj", Component::latent_proj, h, a.q_lora_rank, a.qkv_bias));
    out.push_back(norm(layer, p + "q_a_layernorm", a.q_lora_rank));
    out.push_back(linear(layer, p, "q_b_proj", Component::latent_proj, a.q_lora_rank, a.num_heads * a.head_dim, false));
  } else {
    out.push_back(linear(layer, p, "q_proj", Component::latent_proj, h, a.num_heads * a.head_dim, false));
  }
  out.push_back(linear(layer, p, "kv_a_proj_with_mqa", Component::latent_proj, h, a.kv_lora_rank + a.rope_head_dim,
                       a.qkv_bias));
  out.push_back(norm(layer, p + "kv_a_layernorm", a.kv_lora_rank));
  out.push_back(linear(layer, p, "kv_b_proj", Component::latent_proj, a.kv_lora_rank,
                       a.num_heads * (nope + a.value_dim()), false));
  out.push_back(linear(layer, p, "o_proj", Component::attention_proj, a.num_heads * a.value_dim(), h, a.o_bias));
}

void add_attention(std::vector<Module>& out, int64_t layer, const ModelShape& shape, const AttentionSpec& a) {
  if (a.mla()) return add_latent_attention(out, layer, shape, a);
  const ModuleNames& n = shape.family.names;
  const std::string& p = n.attention;
  const int64_t h = shape.hidden_size;
  const int64_t q_out = a.num_heads * a.head_dim;
  const int64_t kv_out = a.num_kv_heads * a.head_dim;
  if (!n.fused_qkv.empty()) {
    out.push_back(linear(layer, p, n.fused_qkv, Component::attention_proj, h, q_out + 2 * kv_out, a.qkv_bias));
  } else {
    out.push_back(linear(layer, p, "q_proj", Component::attention_proj, h, q_out, a.qkv_bias));
    out.push_back(linear(layer, p, "k_proj", Component::attention_proj, h, kv_out, a.qkv_bias));
    if (a.has_v_proj) out.push_back(linear(layer, p, "v_proj", Component::attention_proj, h, kv_out, a.qkv_bias));
  }
  out.push_back(linear(layer, p, n.o_proj, Component::attention_proj, q_out, h, a.o_bias));
  add_qk_norms(out, layer, shape, a);
  // GPT-OSS's sink logits: one learned scalar per head, a bare parameter (no GEMM, no LoRA target).
  if (shape.family.attention_sinks)
    out.push_back(Module{layer_prefix(layer) + p + "sinks", "sinks", ModuleKind::scale, Component::attention_proj, layer,
                         a.num_heads, 1, 1, false});
}

// A gated MLP (gate, up, down, or gate and up fused) or an ungated one (GPT-NeoX: up, down) of width `width`.
void add_mlp(std::vector<Module>& out, int64_t layer, const ModelShape& shape, const std::string& path,
             int64_t width, Component component) {
  const ModuleNames& n = shape.family.names;
  const int64_t h = shape.hidden_size;
  const bool b = shape.mlp_bias;
  if (!n.fused_gate_up.empty()) {
    out.push_back(linear(layer, path, n.fused_gate_up, component, h, 2 * width, b));
  } else {
    if (!n.gate_proj.empty()) out.push_back(linear(layer, path, n.gate_proj, component, h, width, b));
    out.push_back(linear(layer, path, n.up_proj, component, h, width, b));
  }
  out.push_back(linear(layer, path, n.down_proj, component, width, h, b));
}

// transformers' fused expert layout (transformers 5: Gemma4TextExperts, Qwen3MoeExperts, ...): gate and up in
// one [E, 2I, h] tensor, down in [E, h, I]; the router has a projection and, where the family says so, a
// hidden-sized scale and a per-expert scale; shared experts are a plain MLP every token passes through.
void add_experts(std::vector<Module>& out, int64_t layer, const ModelShape& shape) {
  const ModuleNames& n = shape.family.names;
  const int64_t h = shape.hidden_size;
  const MoeSpec& m = shape.moe;
  const std::string pre = layer_prefix(layer);
  // GPT-OSS (Family::expert_bias): a bias on the router's [E] logits, and the experts' gate_up_proj_bias [E, 2I] and
  // down_proj_bias [E, h] beside their weights.
  const bool bias = shape.family.expert_bias;
  out.push_back(Module{pre + n.router_path + n.router, n.router, ModuleKind::router, Component::router, layer, h,
                       m.num_experts, 1, bias});
  if (shape.family.router_scales) {
    out.push_back(Module{pre + "router.scale", "scale", ModuleKind::scale, Component::router, layer, h, 1, 1, false});
    out.push_back(Module{pre + "router.per_expert_scale", "per_expert_scale", ModuleKind::scale,
                         Component::router, layer, m.num_experts, 1, 1, false});
  }
  out.push_back(Module{pre + n.experts + "gate_up_proj", "gate_up_proj", ModuleKind::experts, Component::experts,
                       layer, h, 2 * m.intermediate_size, m.num_experts, bias});
  out.push_back(Module{pre + n.experts + "down_proj", "down_proj", ModuleKind::experts, Component::experts, layer,
                       m.intermediate_size, h, m.num_experts, bias});
  if (m.shared_intermediate_size > 0) {
    add_mlp(out, layer, shape, n.shared_expert, m.shared_intermediate_size, Component::shared_experts);
    if (shape.family.shared_expert_gate)
      out.push_back(linear(layer, n.mlp, "shared_expert_gate", Component::router, h, 1, false));
  }
}

void add_layer_norms(std::vector<Module>& out, int64_t layer, const ModelShape& shape) {
  const bool bias = shape.family.norm_bias;
  for (const auto& name : shape.family.layer_norms) out.push_back(norm(layer, name, shape.hidden_size, bias));
  if (shape.has_experts(layer))
    for (const auto& name : shape.family.expert_layer_norms) out.push_back(norm(layer, name, shape.hidden_size, bias));
}

void add_head(std::vector<Module>& out, const ModelShape& shape) {
  const int64_t h = shape.hidden_size;
  if (shape.head == Head::classifier) {
    out.push_back(Module{"score", "score", ModuleKind::lm_head, Component::lm_head, -1, h, shape.num_labels, 1, false});
  } else if (shape.head == Head::lm_head && !shape.tie_word_embeddings) {
    const std::string& name = shape.family.names.lm_head;
    out.push_back(Module{name, name, ModuleKind::lm_head, Component::lm_head, -1, h, shape.vocab_size, 1, false});
  }
}

}  // namespace

std::string Module::weight_name() const {
  return (kind == ModuleKind::experts || kind == ModuleKind::scale) ? name : name + ".weight";
}

std::vector<int64_t> Module::weight_shape() const {
  if (kind == ModuleKind::norm || kind == ModuleKind::scale) return {in_features};
  if (kind == ModuleKind::experts) return {copies, out_features, in_features};
  return {out_features, in_features};
}

ModuleTable expand_modules(const ModelShape& shape) {
  ModuleTable out;
  const int64_t h = shape.hidden_size;
  const std::string& embedding = shape.family.names.embedding;
  out.push_back(Module{embedding, embedding, ModuleKind::embedding, Component::embedding, -1, h, shape.vocab_size, 1,
                       false});
  for (int64_t layer = 0; layer < shape.num_layers(); ++layer) {
    add_attention(out, layer, shape, shape.layers[static_cast<size_t>(layer)]);
    if (shape.has_dense_mlp(layer))
      add_mlp(out, layer, shape, shape.family.names.mlp, shape.intermediate_size, Component::dense_mlp);
    if (shape.has_experts(layer)) add_experts(out, layer, shape);
    add_layer_norms(out, layer, shape);
  }
  out.push_back(norm(-1, shape.family.names.final_norm, h, shape.family.norm_bias));
  add_head(out, shape);
  return out;
}

}  // namespace stepcast::model
