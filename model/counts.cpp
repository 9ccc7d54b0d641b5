#include "model/counts.hpp"

#include <algorithm>
#include <cmath>

namespace stepcast::model {

std::string component_name(Component c) {
  switch (c) {
    case Component::embedding: return "embedding";
    case Component::attention_proj: return "attention_proj";
    case Component::latent_proj: return "latent_proj";
    case Component::dense_mlp: return "dense_mlp";
    case Component::experts: return "experts";
    case Component::shared_experts: return "shared_experts";
    case Component::router: return "router";
    case Component::lm_head: return "lm_head";
    case Component::norm: return "norm";
  }
  return "unknown";
}

namespace {

// One multi-token-prediction module (DeepSeek-V3's modeling code): a decoder layer as the last one, enorm and
// hnorm (hidden-sized), eh_proj (2h -> h) and the shared head's norm; its embedding and head are copies of
// the main ones in the checkpoint, not counted here.
int64_t mtp_layer_params(const ModelShape& shape, const ModuleTable& modules) {
  if (shape.num_layers() == 0) return 0;
  const int64_t last = shape.num_layers() - 1;
  int64_t layer = 0;
  for (const Module& m : modules)
    if (m.layer == last) layer += m.params();
  const int64_t h = shape.hidden_size;
  return layer + 3 * h + 2 * h * h;
}

}  // namespace

ParamCounts count_params(const ModelShape& shape) { return count_params(shape, expand_modules(shape)); }

ParamCounts count_params(const ModelShape& shape, const ModuleTable& modules) {
  ParamCounts counts;
  const double routed_share =
      shape.moe.num_experts > 0 ? static_cast<double>(shape.moe.top_k) / static_cast<double>(shape.moe.num_experts) : 1.0;
  double inactive = 0;
  for (const Module& m : modules) {
    counts.total += m.params();
    counts.tensors += m.tensors();
    counts.by_component[component_name(m.component)] += m.params();
    if (m.kind == ModuleKind::embedding) counts.embedding += m.params();
    if (m.kind == ModuleKind::experts) inactive += static_cast<double>(m.params()) * (1.0 - routed_share);
  }
  counts.active_per_token = counts.total - static_cast<int64_t>(inactive + 0.5);
  int64_t buffers = shape.family.layer_scalar_buffer ? shape.num_layers() : 0;
  counts.buffer_elements = buffers;  // one scalar each
  if (shape.moe.router_bias_buffer)
    for (int64_t layer = 0; layer < shape.num_layers(); ++layer)
      if (shape.has_experts(layer)) {
        ++buffers;
        counts.buffer_elements += shape.moe.num_experts;
      }
  const bool tied_alias = shape.tie_word_embeddings && shape.head == Head::lm_head;
  counts.state_dict_entries = counts.tensors + buffers + (tied_alias ? 1 : 0);
  counts.mtp_params = shape.mtp_layers > 0 ? shape.mtp_layers * mtp_layer_params(shape, modules) : 0;
  return counts;
}

std::vector<std::string> default_lora_targets() {
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

std::vector<std::string> default_lora_targets(const ModelShape& shape) { return default_lora_targets(expand_modules(shape)); }

std::vector<std::string> default_lora_targets(const ModuleTable& modules) {
  std::vector<std::string> names;
  for (const Module& m : modules)
    if (m.kind == ModuleKind::linear && std::find(names.begin(), names.end(), m.short_name) == names.end())
      names.push_back(m.short_name);
  return names;
}

std::vector<std::string> lora_able_names(const ModelShape& shape) { return lora_able_names(expand_modules(shape)); }

std::vector<std::string> lora_able_names(const ModuleTable& modules) {
  std::vector<std::string> names = default_lora_targets(modules);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> lora_target_problems(const ModuleTable& modules, const std::vector<std::string>& targets,
                                              const std::string& model_name) {
  const std::vector<std::string> names = lora_able_names(modules);
  std::string valid;
  for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
  std::vector<std::string> problems;
  for (const auto& t : targets)
    if (std::find(names.begin(), names.end(), t) == names.end())
      problems.push_back("'" + t + "' names no nn.Linear module of " + model_name + ". Violated constraint: one of " + valid);
  return problems;
}

LoraPlan plan_lora(const ModelShape& shape, const std::vector<std::string>& targets, int64_t rank) {
  return plan_lora(expand_modules(shape), targets, rank);
}

LoraPlan plan_lora(const ModuleTable& modules, const std::vector<std::string>& targets, int64_t rank) {
  LoraPlan plan;
  plan.targets = targets;
  plan.rank = rank;
  for (const auto& t : targets) plan.modules_by_target[t] = 0;
  for (const Module& m : modules) {
    if (m.kind != ModuleKind::linear) continue;
    auto it = plan.modules_by_target.find(m.short_name);
    if (it == plan.modules_by_target.end()) continue;
    ++it->second;
    ++plan.modules;
    plan.params += rank * (m.in_features + m.out_features);
    plan.in_features += m.in_features;
    plan.in_out_features += m.in_features + m.out_features;
  }
  for (const auto& [target, n] : plan.modules_by_target)
    if (n == 0) plan.unmatched.push_back(target);
  return plan;
}

GemmFlopsPerToken gemm_flops_per_token(const ModelShape& shape) { return gemm_flops_per_token(shape, expand_modules(shape)); }

GemmFlopsPerToken gemm_flops_per_token(const ModelShape& shape, const ModuleTable& modules) {
  GemmFlopsPerToken f;
  const double routed_share =
      shape.moe.num_experts > 0 ? static_cast<double>(shape.moe.top_k) / static_cast<double>(shape.moe.num_experts) : 0.0;
  for (const Module& m : modules) {
    if (m.kind == ModuleKind::scale) continue;  // router scales, attention sinks: multiplied or added, no GEMM
    const double w = static_cast<double>(m.weight_params());
    switch (m.component) {
      case Component::attention_proj: f.attention_proj += 2 * w; break;
      case Component::latent_proj: f.latent_proj += 2 * w; break;
      case Component::dense_mlp: f.dense_mlp += 2 * w; break;
      case Component::experts: f.experts += 2 * w * routed_share; break;
      case Component::shared_experts: f.shared_experts += 2 * w; break;
      case Component::router: f.router += 2 * w; break;
      case Component::lm_head: f.lm_head += 2 * w; break;
      case Component::embedding:
        // the tied embedding is also the LM head
        if (shape.tie_word_embeddings && shape.head == Head::lm_head) f.lm_head += 2 * w;
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
  if (work == ScoreWork::causal_window && layer.chunk > 0 && layer.chunk < width) {
    // Chunked (Llama-4): each query sees the keys of its own chunk up to itself.
    const double c = static_cast<double>(layer.chunk);
    const double full = std::floor(w / c), rest = w - full * c;
    return full * c * (c + 1) / 2 + rest * (rest + 1) / 2;
  }
  if (work == ScoreWork::causal || layer.window <= 0 || layer.window >= width) return causal;
  // Queries 0..window-1 see i+1 keys; the remaining W - window each see `window` keys.
  const double k = static_cast<double>(layer.window);
  return k * (k + 1) / 2 + (w - k) * k;
}

double attention_score_flops(const AttentionSpec& layer, int64_t width, ScoreWork work) {
  return 2.0 * static_cast<double>(layer.num_heads * (layer.head_dim + layer.value_dim())) *
         attended_pairs(layer, width, work);
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
