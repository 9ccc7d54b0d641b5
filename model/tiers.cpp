#include "model/tiers.hpp"

#include <cctype>
#include <vector>

namespace stepcast::model {

std::string backend_name(Backend b) {
  switch (b) {
    case Backend::flash: return "flash";
    case Backend::efficient: return "efficient";
    case Backend::cudnn: return "cudnn";
    case Backend::math: return "math";
  }
  return "unknown";
}

GpuInfo gpu_info(const std::string& name) {
  struct Known {
    const char* fragment;
    int sm;
    double capacity_gib;
  };
  static const std::vector<Known> known{
      {"H200", 90, 139.8},  {"H100", 90, 79.1}, {"GH200", 90, 94.5}, {"A100", 80, 79.1},
      {"RTX PRO 6000", 120, 95.0}, {"B200", 100, 178.4}, {"L40S", 89, 44.4},
  };
  GpuInfo g;
  g.name = name;
  for (const auto& k : known)
    if (name.find(k.fragment) != std::string::npos) {
      g.sm = k.sm;
      g.capacity_gib = k.capacity_gib;
      break;
    }
  return g;
}

namespace {

bool parse_backend(const std::string& s, TierRules& t) {
  if (s == "auto") return (t.auto_backend = true);
  t.auto_backend = false;
  if (s == "efficient") t.forced = Backend::efficient;
  else if (s == "math") t.forced = Backend::math;
  else if (s == "flash") t.forced = Backend::flash;
  else if (s == "cudnn") t.forced = Backend::cudnn;
  else return false;
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

bool parse_extra(const std::string& e, TierRules& t) {
  if (e == "ce-chunked") t.ce_chunked = true;
  else if (e == "mask-explicit") t.mask_always = true;
  else if (e == "gqa-expand") t.gqa = TierRules::Gqa::expand;
  else if (e == "gqa-native") t.gqa = TierRules::Gqa::native;
  else if (e == "ckpt") t.recompute = true;
  else return false;
  return true;
}

bool parse_attention(std::string s, TierRules& t) {
  const size_t plus = s.find('+');
  if (plus != std::string::npos) {
    if (s.substr(plus) != "+ckpt") return false;
    t.recompute = true;
    s = s.substr(0, plus);
  }
  if (s.rfind("hf-sdpa-", 0) == 0) {
    t.gqa = TierRules::Gqa::expand;
    s = s.substr(8);
  } else if (s.rfind("sdpa-", 0) == 0) {
    t.gqa = TierRules::Gqa::hf;
    s = s.substr(5);
  } else {
    return false;
  }
  const size_t sm = s.find("-sm");
  if (sm != std::string::npos) {
    const std::string digits = s.substr(sm + 3);
    if (digits.empty() || digits.size() > 3) return false;
    for (char c : digits)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    t.kernel_sm = std::stoi(digits);
    s = s.substr(0, sm);
  }
  return parse_backend(s, t);
}

}  // namespace

TierRules tier_from_label(const std::string& label) {
  TierRules t;
  t.label = label;
  const std::vector<std::string> parts = split(label, '/');
  if (parts.size() < 2) return t;
  TierRules parsed = t;
  if (!parse_attention(parts[0], parsed)) return t;
  if (parts[1] == "loop") parsed.experts = ExpertImpl::loop;
  else if (parts[1] == "grouped") parsed.experts = ExpertImpl::grouped;
  else return t;
  for (size_t i = 2; i < parts.size(); ++i)
    if (!parse_extra(parts[i], parsed)) return t;
  parsed.enable_gqa = parsed.gqa == TierRules::Gqa::native;
  parsed.known = true;
  return parsed;
}

Backend choose_backend(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm) {
  const bool gqa = enable_gqa && layer.num_kv_heads > 0 && layer.num_kv_heads < layer.num_heads;
  const int64_t cudnn_max_head = sm >= 120 ? 128 : 256;
  if (sm >= 90 && layer.head_dim <= cudnn_max_head) return Backend::cudnn;
  if (!explicit_mask && layer.head_dim <= 256 && sm >= 80) return Backend::flash;
  // The CUTLASS efficient kernel has no enable_gqa path: GQA with head_dim > 256 falls to math
  // (measured on the H200: sdpa-auto/grouped at 1 x 16384 runs 9.07 s with enable_gqa against 6.46 s
  // with K/V expanded, scenarios/measurements/h200-gemma-4-26b-a4b*.jsonl).
  if (!gqa) return Backend::efficient;
  return Backend::math;
}

LayerPlan plan_layer(const TierRules& tier, const AttentionSpec& layer, bool padded_or_packed, int sm,
                     bool wider_than_window) {
  LayerPlan p;
  const bool windowed = layer.window > 0 && wider_than_window;
  p.explicit_mask = padded_or_packed || tier.mask_always || (windowed && !tier.honours_window);
  const bool gqa = tier.gqa == TierRules::Gqa::native || (tier.gqa == TierRules::Gqa::hf && !p.explicit_mask);
  if (!tier.known) {
    // Unknown label: Hugging Face's sdpa semantics (explicit sliding mask, is_causal only when
    // unpadded); one attention rate for all layers, and the mask-path term is left to the data.
    p.backend = Backend::efficient;
  } else {
    p.backend = tier.auto_backend ? choose_backend(layer, p.explicit_mask, gqa, sm) : tier.forced;
  }
  if (p.explicit_mask || p.backend == Backend::math) {
    p.work = (windowed && tier.honours_window && p.backend != Backend::math) ? ScoreWork::causal_window
                                                                              : ScoreWork::full_square;
  } else {
    p.work = (windowed && tier.honours_window) ? ScoreWork::causal_window : ScoreWork::causal;
  }
  return p;
}

}  // namespace stepcast::model
