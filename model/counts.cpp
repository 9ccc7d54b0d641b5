#include "model/counts.hpp"

#include <algorithm>

namespace stepcast::model {

std::string component_name(Component c) {
  switch (c) {
    case Component::embedding: return "embedding";
    case Component::attention_proj: return "attention_proj";
    case Component::dense_mlp: return "dense_mlp";
    case Component::experts: return "experts";
    case Component::router: return "router";
    case Component::lm_head: return "lm_head";
    case Component::norm: return "norm";
  }
  return "unknown";
}

ParamCounts count_params(const ModelShape& shape) {
  ParamCounts counts;
  const double routed_share =
      shape.moe.num_experts > 0 ? static_cast<double>(shape.moe.top_k) / static_cast<double>(shape.moe.num_experts) : 1.0;
  double inactive = 0;
  for (const Module& m : expand_modules(shape)) {
    counts.total += m.params();
    counts.tensors += m.tensors();
    counts.by_component[component_name(m.component)] += m.params();
    if (m.kind == ModuleKind::embedding) counts.embedding += m.params();
    if (m.kind == ModuleKind::experts) inactive += static_cast<double>(m.params()) * (1.0 - routed_share);
  }
  counts.active_per_token = counts.total - static_cast<int64_t>(inactive + 0.5);
  counts.state_dict_entries = counts.tensors + (shape.family.layer_scalar_buffer ? shape.num_layers() : 0) +
                              (shape.tie_word_embeddings ? 1 : 0);
  return counts;
}

std::vector<std::string> default_lora_targets() {
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

LoraPlan plan_lora(const ModelShape& shape, const std::vector<std::string>& targets, int64_t rank) {
  LoraPlan plan;
  plan.targets = targets;
  plan.rank = rank;
  for (const auto& t : targets) plan.modules_by_target[t] = 0;
  for (const Module& m : expand_modules(shape)) {
    if (m.kind != ModuleKind::linear) continue;
    auto it = plan.modules_by_target.find(m.short_name);
    if (it == plan.modules_by_target.end()) continue;
    ++it->second;
    ++plan.modules;
    plan.params += rank * (m.in_features + m.out_features);
  }
  for (const auto& [target, n] : plan.modules_by_target)
    if (n == 0) plan.unmatched.push_back(target);
  return plan;
}

GemmFlopsPerToken gemm_flops_per_token(const ModelShape& shape) {
  GemmFlopsPerToken f;
  const double routed_share =
      shape.moe.num_experts > 0 ? static_cast<double>(shape.moe.top_k) / static_cast<double>(shape.moe.num_experts) : 0.0;
  for (const Module& m : expand_modules(shape)) {
    const double w = static_cast<double>(m.weight_params());
    switch (m.component) {
      case Component::attention_proj: f.attention_proj += 2 * w; break;
      case Component::dense_mlp: f.dense_mlp += 2 * w; break;
      case Component::experts: f.experts += 2 * w * routed_share; break;
      case Component::router: if (m.kind == ModuleKind::router) f.router += 2 * w; break;
      case Component::lm_head: f.lm_head += 2 * w; break;
      case Component::embedding:
        if (shape.tie_word_embeddings) f.lm_head += 2 * w;  // the tied embedding is also the LM head
        break;
      case Component::norm: break;
    }
  }
  return f;
}

double attended_pairs(const AttentionSpec& layer, int64_t width, ScoreWork work) {
  const double w = static_cast<double>(width);
  if (work == ScoreWork::full_square) return w * w;
  const double causal = w * (w + 1) / 2;  // query i sees keys 0..i
  if (work == ScoreWork::causal || layer.window <= 0 || layer.window >= width) return causal;
  // Queries 0..window-1 see i+1 keys; the remaining W - window each see `window` keys.
  const double k = static_cast<double>(layer.window);
  return k * (k + 1) / 2 + (w - k) * k;
}

double attention_score_flops(const AttentionSpec& layer, int64_t width, ScoreWork work) {
  return 4.0 * static_cast<double>(layer.num_heads * layer.head_dim) * attended_pairs(layer, width, work);
}

int64_t weight_bytes(const ModelShape& shape, const std::string& dtype) {
  return count_params(shape).total * dtype_bytes(dtype);
}

std::vector<LayerGroup> layers_by_type(const ModelShape& shape) {
  std::vector<LayerGroup> groups;
  for (int64_t i = 0; i < shape.num_layers(); ++i) {
    const AttentionSpec& spec = shape.layers[static_cast<size_t>(i)];
    auto it = std::find_if(groups.begin(), groups.end(), [&](const LayerGroup& g) { return g.type == spec.type; });
    if (it == groups.end()) {
      groups.push_back(LayerGroup{spec.type, spec, {i}});
    } else {
      it->indices.push_back(i);
    }
  }
  return groups;
}

}  // namespace stepcast::model
