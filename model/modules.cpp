#include "model/modules.hpp"

namespace stepcast::model {
namespace {

std::string layer_prefix(int64_t layer) { return "layers." + std::to_string(layer) + "."; }

Module linear(int64_t layer, const std::string& path, const std::string& short_name, Component component,
              int64_t in, int64_t out, bool bias) {
  return Module{layer_prefix(layer) + path + short_name, short_name, ModuleKind::linear, component, layer,
                in, out, 1, bias};
}

Module norm(int64_t layer, const std::string& name, int64_t dim) {
  std::string full = layer >= 0 ? layer_prefix(layer) + name : name;
  return Module{full, name, ModuleKind::norm, Component::norm, layer, dim, 1, 1, false};
}

void add_attention(std::vector<Module>& out, int64_t layer, const ModelShape& shape, const AttentionSpec& a) {
  const std::string p = "self_attn.";
  const int64_t h = shape.hidden_size;
  const int64_t q_out = a.num_heads * a.head_dim;
  const int64_t kv_out = a.num_kv_heads * a.head_dim;
  out.push_back(linear(layer, p, "q_proj", Component::attention_proj, h, q_out, a.qkv_bias));
  out.push_back(linear(layer, p, "k_proj", Component::attention_proj, h, kv_out, a.qkv_bias));
  if (a.has_v_proj) out.push_back(linear(layer, p, "v_proj", Component::attention_proj, h, kv_out, a.qkv_bias));
  out.push_back(linear(layer, p, "o_proj", Component::attention_proj, q_out, h, a.o_bias));
  if (a.qk_norm) {
    out.push_back(norm(layer, p + "q_norm", a.head_dim));
    out.push_back(norm(layer, p + "k_norm", a.head_dim));
  }
}

void add_dense_mlp(std::vector<Module>& out, int64_t layer, const ModelShape& shape) {
  const int64_t h = shape.hidden_size;
  const int64_t i = shape.intermediate_size;
  out.push_back(linear(layer, "mlp.", "gate_proj", Component::dense_mlp, h, i, shape.mlp_bias));
  out.push_back(linear(layer, "mlp.", "up_proj", Component::dense_mlp, h, i, shape.mlp_bias));
  out.push_back(linear(layer, "mlp.", "down_proj", Component::dense_mlp, i, h, shape.mlp_bias));
}

// transformers' fused expert layout (Gemma4TextExperts / Gemma4TextRouter): gate and up in one
// [E, 2I, h] tensor, down in [E, h, I]; the router has a projection and, where the family says so, a
// hidden-sized scale and a per-expert scale.
void add_experts(std::vector<Module>& out, int64_t layer, const ModelShape& shape) {
  const int64_t h = shape.hidden_size;
  const MoeSpec& m = shape.moe;
  const std::string pre = layer_prefix(layer);
  out.push_back(Module{pre + "router.proj", "proj", ModuleKind::router, Component::router, layer, h,
                       m.num_experts, 1, false});
  if (shape.family.router_scales) {
    out.push_back(Module{pre + "router.scale", "scale", ModuleKind::scale, Component::router, layer, h, 1, 1, false});
    out.push_back(Module{pre + "router.per_expert_scale", "per_expert_scale", ModuleKind::scale,
                         Component::router, layer, m.num_experts, 1, 1, false});
  }
  out.push_back(Module{pre + "experts.gate_up_proj", "gate_up_proj", ModuleKind::experts, Component::experts,
                       layer, h, 2 * m.intermediate_size, m.num_experts, false});
  out.push_back(Module{pre + "experts.down_proj", "down_proj", ModuleKind::experts, Component::experts, layer,
                       m.intermediate_size, h, m.num_experts, false});
}

void add_layer_norms(std::vector<Module>& out, int64_t layer, const ModelShape& shape) {
  for (const auto& name : shape.family.layer_norms) out.push_back(norm(layer, name, shape.hidden_size));
  if (shape.moe.num_experts > 0)
    for (const auto& name : shape.family.expert_layer_norms) out.push_back(norm(layer, name, shape.hidden_size));
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

std::vector<Module> expand_modules(const ModelShape& shape) {
  std::vector<Module> out;
  const int64_t h = shape.hidden_size;
  out.push_back(Module{"embed_tokens", "embed_tokens", ModuleKind::embedding, Component::embedding, -1, h,
                       shape.vocab_size, 1, false});
  for (int64_t layer = 0; layer < shape.num_layers(); ++layer) {
    add_attention(out, layer, shape, shape.layers[static_cast<size_t>(layer)]);
    if (shape.intermediate_size > 0) add_dense_mlp(out, layer, shape);
    if (shape.moe.num_experts > 0) add_experts(out, layer, shape);
    add_layer_norms(out, layer, shape);
  }
  out.push_back(norm(-1, "norm", h));
  if (!shape.tie_word_embeddings) {
    out.push_back(Module{"lm_head", "lm_head", ModuleKind::lm_head, Component::lm_head, -1, h, shape.vocab_size,
                         1, false});
  }
  return out;
}

}  // namespace stepcast::model
