#include "model/work.hpp"

namespace stepcast::model {
namespace {

// Bytes an elementwise pass over `elements` values moves: each is read once and written once.
double pass_bytes(double elements, int64_t bytes) { return 2.0 * elements * static_cast<double>(bytes); }

// A gated activation reads gate and up and writes their product (3 I); an ungated one reads and writes I.
double activation_elements(const ModelShape& shape, int64_t width) {
  const bool gated = !shape.family.names.gate_proj.empty() || !shape.family.names.fused_gate_up.empty();
  return (gated ? 1.5 : 1.0) * static_cast<double>(width);
}

// RoPE rotates the rotary part of every q head and every k head (MLA: the rope part of q, one shared k).
double rope_elements(const AttentionSpec& a) {
  if (a.mla()) return static_cast<double>((a.num_heads + 1) * a.rope_head_dim);
  const double rotary = a.partial_rotary_factor * static_cast<double>(a.head_dim);
  return static_cast<double>(a.num_heads + a.num_kv_heads) * rotary;
}

// Elementwise work of one decoder layer per token, in elements passed over (read + write counted by
// pass_bytes): its hidden-sized norms, q/k norms and MLA's latent norms (`norms`, also counted apart: an eager
// norm moves several times the bytes of one pass, docs/method.md "Memory-bound work"), two residual adds, RoPE and
// the activations of the dense MLP, the top-k experts and the shared experts.
struct LayerElements {
  double all = 0;
  double norms = 0;
};

LayerElements layer_elements(const ModelShape& shape, int64_t layer) {
  const AttentionSpec& a = shape.layers[static_cast<size_t>(layer)];
  const double h = static_cast<double>(shape.hidden_size);
  double norms = static_cast<double>(shape.family.layer_norms.size());
  if (shape.has_experts(layer)) norms += static_cast<double>(shape.family.expert_layer_norms.size());
  LayerElements e;
  e.norms = norms * h;
  if (a.qk_norm || shape.family.qk_norm_whole) e.norms += static_cast<double>((a.num_heads + a.num_kv_heads) * a.head_dim);
  if (a.mla()) e.norms += static_cast<double>(a.q_lora_rank + a.kv_lora_rank);
  e.all = e.norms + 2.0 * h + rope_elements(a);
  if (shape.has_dense_mlp(layer)) e.all += activation_elements(shape, shape.intermediate_size);
  if (shape.has_experts(layer)) {
    e.all += static_cast<double>(shape.moe.top_k) * activation_elements(shape, shape.moe.intermediate_size);
    if (shape.moe.shared_intermediate_size > 0) e.all += activation_elements(shape, shape.moe.shared_intermediate_size);
  }
  return e;
}

}  // namespace

TokenWork token_work(const ModelShape& shape, const LoraPlan& lora, int64_t activation_bytes) {
  return token_work(shape, expand_modules(shape), lora, activation_bytes);
}

TokenWork token_work(const ModelShape& shape, const ModuleTable& modules, const LoraPlan& lora, int64_t activation_bytes) {
  TokenWork w;
  const GemmFlopsPerToken g = gemm_flops_per_token(shape, modules);
  w.dense_gemm_flops = g.attention_proj + g.dense_mlp + g.lm_head;
  w.router_flops = g.router;
  w.expert_gemm_flops = g.experts;
  w.shared_expert_flops = g.shared_experts;
  w.latent_proj_flops = g.latent_proj;
  w.lora_gemm_flops = lora.rank > 0 ? 2.0 * static_cast<double>(lora.params) : 0.0;
  double elements = static_cast<double>(shape.hidden_size);  // the final norm
  double norms = elements;
  double routed_activations = 0;
  for (int64_t layer = 0; layer < shape.num_layers(); ++layer) {
    const LayerElements e = layer_elements(shape, layer);
    elements += e.all;
    norms += e.norms;
    if (!shape.has_experts(layer)) continue;
    const double k = static_cast<double>(shape.moe.top_k);
    w.routed_elements += k * static_cast<double>(shape.hidden_size + shape.moe.intermediate_size);
    routed_activations += k * activation_elements(shape, shape.moe.intermediate_size);
  }
  w.elementwise_bytes = pass_bytes(elements, activation_bytes);
  w.norm_bytes = pass_bytes(norms, activation_bytes);
  w.routed_activation_bytes = pass_bytes(routed_activations, activation_bytes);
  return w;
}

double AttentionWork::flops_per_pair() const {
  return 2.0 * static_cast<double>(spec.num_heads * (spec.head_dim + spec.value_dim()));
}

double AttentionWork::row_flops(int64_t width, ScoreWork work) const {
  return static_cast<double>(layers) * flops_per_pair() * attended_pairs(spec, width, work);
}

std::vector<AttentionWork> attention_work(const ModelShape& shape) {
  std::vector<AttentionWork> out;
  for (const LayerGroup& g : layers_by_type(shape))
    out.push_back(AttentionWork{g.type, static_cast<int64_t>(g.indices.size()), g.spec});
  return out;
}

}  // namespace stepcast::model
