#include "model/tiers.hpp"

#include <cctype>
#include <vector>

#include "model/errors.hpp"

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

namespace {

constexpr const char* kAttentionChoices =
    "one of sdpa-auto, sdpa-flash, sdpa-efficient, sdpa-cudnn, sdpa-math, hf-sdpa-<auto|flash|efficient|cudnn|math>"
    "[-sm<NN>][+ckpt]";
constexpr const char* kExtraChoices = "one of ce-chunked, mask-explicit, gqa-expand, gqa-native, ckpt";

bool parse_backend(const std::string& s, TierRules& t) {
  t.auto_backend = s == "auto";
  if (s == "auto") return true;
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

// `-sm<NN>`: the arch the forced kernels were built for, two or three digits.
bool parse_kernel_sm(std::string& s, TierRules& t) {
  const size_t sm = s.find("-sm");
  if (sm == std::string::npos) return true;
  const std::string digits = s.substr(sm + 3);
  if (digits.empty() || digits.size() > 3) return false;
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  t.kernel_sm = std::stoi(digits);
  s = s.substr(0, sm);
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
  return parse_kernel_sm(s, t) && parse_backend(s, t);
}

}  // namespace

TierRules parse_tier(const std::string& label) {
  TierRules t;
  t.label = label;
  const std::string where = "tier '" + label + "'";
  const std::vector<std::string> parts = split(label, '/');
  if (parts.size() < 2)
    throw InputError(where + ". Violated constraint: <attention>/<experts>[/extra...], e.g. " + kDefaultTier);
  std::vector<std::string> problems;
  if (!parse_attention(parts[0], t))
    problems.push_back(where + ": attention '" + parts[0] + "'. Violated constraint: " + kAttentionChoices);
  if (parts[1] == "loop") t.experts = ExpertImpl::loop;
  else if (parts[1] == "grouped") t.experts = ExpertImpl::grouped;
  else problems.push_back(where + ": experts '" + parts[1] + "'. Violated constraint: loop or grouped");
  for (size_t i = 2; i < parts.size(); ++i)
    if (!parse_extra(parts[i], t))
      problems.push_back(where + ": extra '" + parts[i] + "'. Violated constraint: " + kExtraChoices);
  if (!problems.empty()) throw InputError(problems);
  t.enable_gqa = t.gqa == TierRules::Gqa::native;
  t.known = true;
  return t;
}

TierRules tier_from_label(const std::string& label) {
  try {
    return parse_tier(label);
  } catch (const InputError&) {
    TierRules unknown;
    unknown.label = label;
    return unknown;
  }
}

std::string attention_name(const TierRules& tier) {
  return "sdpa-" + (tier.auto_backend ? std::string("auto") : backend_name(tier.forced));
}

std::string experts_name(const TierRules& tier) { return tier.experts == ExpertImpl::grouped ? "grouped" : "loop"; }

std::string gqa_name(TierRules::Gqa gqa) {
  switch (gqa) {
    case TierRules::Gqa::hf: return "hf";
    case TierRules::Gqa::expand: return "expand";
    case TierRules::Gqa::native: return "native";
  }
  return "hf";
}

std::string tier_label(const TierRules& tier) {
  if (!tier.known) return tier.label;
  // hf-sdpa-* implies gqa-expand; it is the spelling of Hugging Face stacks with kernels for another arch.
  const bool hf_form = tier.gqa == TierRules::Gqa::expand && tier.kernel_sm > 0;
  // Appended piece by piece: GCC 12's -Wrestrict misfires on `"/" + std::string` here.
  std::string s = hf_form ? "hf-" : "";
  s += attention_name(tier);
  if (tier.kernel_sm > 0) s.append("-sm").append(std::to_string(tier.kernel_sm));
  if (tier.recompute) s += "+ckpt";
  s.append("/").append(experts_name(tier));
  if (tier.ce_chunked) s += "/ce-chunked";
  if (tier.mask_always) s += "/mask-explicit";
  if (tier.gqa == TierRules::Gqa::expand && !hf_form) s += "/gqa-expand";
  if (tier.gqa == TierRules::Gqa::native) s += "/gqa-native";
  return s;
}

Backend choose_backend(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm) {
  const bool gqa = enable_gqa && layer.num_kv_heads > 0 && layer.num_kv_heads < layer.num_heads;
  const int64_t cudnn_max_head = sm >= 120 ? 128 : 256;
  if (sm >= 90 && layer.head_dim <= cudnn_max_head) return Backend::cudnn;
  if (!explicit_mask && layer.head_dim <= 256 && sm >= 80) return Backend::flash;
  // The CUTLASS efficient kernel has no enable_gqa path: GQA with head_dim > 256 falls to math
  // (measured on the H200: sdpa-auto/grouped at 1 x 16384 runs 9.07 s with enable_gqa against 6.46 s
  // with K/V expanded, measurements/records/h200-gemma-4-26b-a4b*.jsonl).
  if (!gqa) return Backend::efficient;
  return Backend::math;
}

bool window_needs_mask(int64_t window, int64_t width) { return window > 0 && width >= window; }

LayerPlan plan_layer(const TierRules& tier, const AttentionSpec& layer, bool padded_or_packed, int sm,
                     bool window_bites) {
  LayerPlan p;
  const bool windowed = layer.window > 0 && window_bites;
  p.explicit_mask = padded_or_packed || tier.mask_always || (windowed && !tier.honours_window);
  // The CUTLASS efficient kernel has no enable_gqa path ("Invalid backend" when forced): K/V are expanded
  // for it, as for `expand` and for `hf` with a mask.
  const bool forced_efficient = !tier.auto_backend && tier.forced == Backend::efficient;
  p.expand_kv = tier.gqa == TierRules::Gqa::expand || (tier.gqa == TierRules::Gqa::hf && p.explicit_mask) ||
                (forced_efficient && tier.gqa != TierRules::Gqa::native);
  if (!tier.known) {
    // Unknown label: Hugging Face's sdpa semantics (explicit sliding mask, is_causal only when
    // unpadded); one attention rate for all layers, and the mask-path term is left to the data.
    p.backend = Backend::efficient;
  } else {
    p.backend = tier.auto_backend ? choose_backend(layer, p.explicit_mask, !p.expand_kv, sm) : tier.forced;
  }
  if (p.explicit_mask || p.backend == Backend::math) {
    p.work = (windowed && tier.honours_window && p.backend != Backend::math) ? ScoreWork::causal_window
                                                                              : ScoreWork::full_square;
  } else {
    p.work = (windowed && tier.honours_window) ? ScoreWork::causal_window : ScoreWork::causal;
  }
  return p;
}

LayerPlan plan_layer_at(const TierRules& tier, const AttentionSpec& layer, bool padded_or_packed, int sm,
                        int64_t width) {
  return plan_layer(tier, layer, padded_or_packed, sm, window_needs_mask(layer.window, width));
}

}  // namespace stepcast::model

namespace stepcast::model {

AttentionPath attention_path(const MicroBatch& batch) {
  if (batch.packed) {
    switch (batch.attention) {
      case DocumentAttention::varlen: return AttentionPath::varlen;
      case DocumentAttention::block_mask: return AttentionPath::explicit_mask;
      case DocumentAttention::cross: return AttentionPath::plain;
    }
  }
  return batch.has_padding() ? AttentionPath::explicit_mask : AttentionPath::plain;
}

LayerPlan plan_varlen_layer(const TierRules& tier, const AttentionSpec& layer, int sm, bool window_bites) {
  constexpr int64_t kFlashMaxHeadDim = 256;
  const bool forced_math = !tier.auto_backend && tier.forced == Backend::math;
  if (sm < 80 || forced_math) {
    LayerPlan p = plan_layer(tier, layer, true, sm, window_bites);
    p.backend = Backend::math;
    p.work = ScoreWork::full_square;
    return p;
  }
  const bool flash_fits = layer.head_dim <= kFlashMaxHeadDim;
  const bool forced_efficient = !tier.auto_backend && tier.forced == Backend::efficient;
  LayerPlan p;
  p.backend = flash_fits && !forced_efficient ? Backend::flash : Backend::efficient;
  const bool windowed = layer.window > 0 && window_bites;
  if (p.backend == Backend::efficient && windowed) return plan_layer(tier, layer, true, sm, window_bites);
  p.varlen = true;
  p.expand_kv = tier.gqa == TierRules::Gqa::expand || p.backend == Backend::efficient;
  p.work = windowed ? ScoreWork::causal_window : ScoreWork::causal;
  return p;
}

LayerPlan plan_layer_at(const TierRules& tier, const AttentionSpec& layer, AttentionPath path, int sm,
                        int64_t width) {
  const bool window_bites = window_needs_mask(layer.window, width);
  if (path == AttentionPath::varlen) return plan_varlen_layer(tier, layer, sm, window_bites);
  return plan_layer(tier, layer, path == AttentionPath::explicit_mask, sm, window_bites);
}

}  // namespace stepcast::model
