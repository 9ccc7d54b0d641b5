#include "model/tiers.hpp"

#include <algorithm>
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
constexpr const char* kExtraChoices =
    "one of ce-chunked, mask-explicit, gqa-expand, gqa-native, gqa-transformers, ckpt";
constexpr const char* kHfPeftPrefix = "hf-peft/";

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
  else if (e == "gqa-transformers") t.gqa = TierRules::Gqa::transformers;
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

namespace {

// `hf-peft/sdpa-<experts_implementation>[/extra...]`: transformers + peft under attn_implementation="sdpa",
// the experts as transformers' experts_implementation names them (docs/families.md).
// transformers' attn_implementation names, as the label's second part starts.
constexpr const char* kSdpaPrefix = "sdpa-";
constexpr const char* kFlashAttention2Prefix = "flash_attention_2-";
constexpr const char* kEagerPrefix = "eager-";

void parse_hf_peft(const std::vector<std::string>& parts, const std::string& where, TierRules& t,
                   std::vector<std::string>& problems) {
  t.stack = Stack::hf_peft;
  t.gqa = TierRules::Gqa::transformers;
  t.auto_backend = true;
  const std::string& attention = parts[1];
  std::string impl;
  if (attention.rfind(kSdpaPrefix, 0) == 0) {
    impl = attention.substr(std::string(kSdpaPrefix).size());
  } else if (attention.rfind(kFlashAttention2Prefix, 0) == 0) {
    impl = attention.substr(std::string(kFlashAttention2Prefix).size());
    t.flash_attn = true;
    t.honours_window = true;
    t.gqa = TierRules::Gqa::native;
    t.auto_backend = false;
    t.forced = Backend::flash;
  } else if (attention.rfind(kEagerPrefix, 0) == 0) {
    impl = attention.substr(std::string(kEagerPrefix).size());
    t.eager_attn = true;
    t.gqa = TierRules::Gqa::expand;  // eager_attention_forward calls repeat_kv
  }
  t.experts_impl = impl;
  if (impl == "grouped_mm") t.experts = ExpertImpl::grouped;
  else if (impl == "eager") t.experts = ExpertImpl::loop;
  else
    problems.push_back(where + ": '" + attention +
                       "'. Violated constraint: sdpa-<grouped_mm|eager>, flash_attention_2-<grouped_mm|eager> or "
                       "eager-<grouped_mm|eager> "
                       "(transformers' attn_implementation, then its experts_implementation)");
  for (size_t i = 2; i < parts.size(); ++i)
    if (!parse_extra(parts[i], t) || parts[i].rfind("gqa-", 0) == 0 ||
        ((t.flash_attn || t.eager_attn) && parts[i] == "mask-explicit"))
      problems.push_back(where + ": extra '" + parts[i] +
                         "'. Violated constraint: ce-chunked, mask-explicit (sdpa only) or ckpt (transformers "
                         "decides K/V itself)");
}

}  // namespace

TierRules parse_tier(const std::string& label) {
  TierRules t;
  t.label = label;
  const std::string where = "tier '" + label + "'";
  const std::vector<std::string> parts = split(label, '/');
  if (parts.size() < 2)
    throw InputError(where + ". Violated constraint: <attention>/<experts>[/extra...], e.g. " + kDefaultTier +
                     ", or hf-peft/sdpa-grouped_mm");
  std::vector<std::string> problems;
  if (label.rfind(kHfPeftPrefix, 0) == 0) {
    parse_hf_peft(parts, where, t, problems);
  } else {
    if (!parse_attention(parts[0], t))
      problems.push_back(where + ": attention '" + parts[0] + "'. Violated constraint: " + kAttentionChoices);
    if (parts[1] == "loop") t.experts = ExpertImpl::loop;
    else if (parts[1] == "grouped") t.experts = ExpertImpl::grouped;
    else problems.push_back(where + ": experts '" + parts[1] + "'. Violated constraint: loop or grouped");
    for (size_t i = 2; i < parts.size(); ++i)
      if (!parse_extra(parts[i], t))
        problems.push_back(where + ": extra '" + parts[i] + "'. Violated constraint: " + kExtraChoices);
  }
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
    case TierRules::Gqa::transformers: return "transformers";
  }
  return "hf";
}

bool recomputes(const TierRules& tier) { return tier.recompute || tier.stack == Stack::hf_peft; }

std::string tier_label(const TierRules& tier) {
  if (!tier.known) return tier.label;
  if (tier.stack == Stack::hf_peft) {
    const char* attention = tier.flash_attn ? kFlashAttention2Prefix : tier.eager_attn ? kEagerPrefix : kSdpaPrefix;
    std::string s = std::string(kHfPeftPrefix) + attention + tier.experts_impl;
    if (tier.ce_chunked) s += "/ce-chunked";
    if (tier.mask_always) s += "/mask-explicit";
    if (tier.recompute) s += "/ckpt";
    return s;
  }
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
  if (tier.gqa == TierRules::Gqa::transformers) s += "/gqa-transformers";
  return s;
}

namespace {

// One backend's verdict on a layer: empty when it accepts, else why not. The checks are PyTorch 2.11's
// can_use_* filters of sdp_utils.cpp / sdp_utils_cpp.h as docs/families.md ("Which backend") lists them, for
// bf16 training on CUDA; a backend the checks do not mention is assumed to accept.
struct SdpaCall {
  int64_t qk_dim = 0, v_dim = 0, heads = 0, kv_heads = 0;
  bool mask = false;
  bool gqa = false;  // enable_gqa with fewer K/V heads than query heads
  int sm = 0;
};

SdpaCall sdpa_call(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm) {
  SdpaCall c;
  c.qk_dim = layer.head_dim;
  c.v_dim = layer.value_dim();
  c.heads = layer.num_heads;
  c.kv_heads = layer.num_kv_heads > 0 ? layer.num_kv_heads : layer.num_heads;
  c.mask = explicit_mask;
  c.gqa = enable_gqa && c.kv_heads < c.heads;
  c.sm = sm;
  return c;
}

std::string dims(const SdpaCall& c) {
  return c.qk_dim == c.v_dim ? "head_dim " + std::to_string(c.qk_dim)
                             : "head dims " + std::to_string(c.qk_dim) + "/" + std::to_string(c.v_dim);
}

bool cuda_arch_in(int sm, int lo, int hi) { return sm >= lo && sm <= hi; }
// check_prefer_cudnn_attention: cuDNN first on compute capability 9.x and 10.x only.
bool cudnn_first(int sm) { return sm <= 0 || cuda_arch_in(sm, 90, 109); }

// check_cudnn_tensor_shapes and check_cudnn_d256_bprop_head_dim (training: the backward's own limits).
std::string cudnn_refuses(const SdpaCall& c) {
  if (c.sm <= 0) return "no CUDA arch";
  if (!cuda_arch_in(c.sm, 80, 121)) return "sm" + std::to_string(c.sm) + " outside sm80-sm121";
  if (c.qk_dim % 8 != 0 || c.v_dim % 8 != 0) return dims(c) + " not a multiple of 8";
  const bool sm90_or_10x = c.sm == 90 || cuda_arch_in(c.sm, 100, 109);
  const int64_t limit = sm90_or_10x ? 256 : 128;
  const int64_t widest = std::max(c.qk_dim, c.v_dim);
  const bool mla = c.qk_dim == 192 && c.v_dim == 128;
  if (widest > limit && !(sm90_or_10x && mla)) return dims(c) + " > " + std::to_string(limit);
  const bool backward_ok = (c.qk_dim <= 128 && c.v_dim <= 128) || mla || (c.qk_dim == 256 && c.v_dim == 256);
  if (sm90_or_10x && !backward_ok) return dims(c) + ": no cuDNN backward (<= 128, 192/128 or 256/256)";
  return "";
}

// can_use_flash_attention: check_for_attn_mask, check_head_dim_size_flash, the arch range and
// check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120.
std::string flash_refuses(const SdpaCall& c) {
  if (c.mask) return "explicit mask";
  if (c.qk_dim != c.v_dim) return dims(c) + " differ";
  if (c.qk_dim > 256) return dims(c) + " > 256";
  if (c.sm <= 0) return "no CUDA arch";
  if (!cuda_arch_in(c.sm, 80, 121)) return "sm" + std::to_string(c.sm) + " outside sm80-sm121";
  const bool consumer = cuda_arch_in(c.sm, 86, 89) || cuda_arch_in(c.sm, 120, 121);
  if (consumer && c.qk_dim > 192 && c.qk_dim <= 224) return dims(c) + " in (192, 224] on sm" + std::to_string(c.sm);
  return "";
}

// can_use_mem_efficient_attention: check_head_dim_size_mem_efficient (alignment 8 for bf16 on sm80+), the dtype
// list (no bf16 before sm80) and, in 2.11, check_batch_size_and_num_heads_dense<false>: no enable_gqa.
std::string efficient_refuses(const SdpaCall& c) {
  if (c.qk_dim % 8 != 0 || c.v_dim % 8 != 0) return dims(c) + " not a multiple of 8";
  if (c.sm > 0 && c.sm < 80) return "no bf16 before sm80";
  if (c.gqa)
    return "enable_gqa with " + std::to_string(c.kv_heads) + " K/V heads for " + std::to_string(c.heads) +
           " (not in 2.11)";
  return "";
}

}  // namespace

Backend choose_backend(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm) {
  const SdpaCall c = sdpa_call(layer, explicit_mask, enable_gqa, sm);
  if (cudnn_first(sm) && cudnn_refuses(c).empty()) return Backend::cudnn;
  if (flash_refuses(c).empty()) return Backend::flash;
  if (efficient_refuses(c).empty()) return Backend::efficient;
  return Backend::math;
}

std::string backend_reason(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm) {
  const SdpaCall c = sdpa_call(layer, explicit_mask, enable_gqa, sm);
  std::string why = cudnn_first(sm) ? "" : "cudnn: after math on sm" + std::to_string(sm) + "; ";
  const std::pair<Backend, std::string> order[] = {
      {Backend::cudnn, cudnn_first(sm) ? cudnn_refuses(c) : "skip"},
      {Backend::flash, flash_refuses(c)},
      {Backend::efficient, efficient_refuses(c)}};
  for (const auto& [backend, refusal] : order) {
    if (refusal == "skip") continue;
    if (refusal.empty()) return why + backend_name(backend);
    why += backend_name(backend) + ": " + refusal + "; ";
  }
  return why + "math";
}

bool window_needs_mask(int64_t window, int64_t width) { return window > 0 && width >= window; }

int64_t local_attention_size(const AttentionSpec& layer) { return layer.window > 0 ? layer.window : layer.chunk; }

bool expands_kv(const TierRules& tier, const AttentionSpec& layer, bool explicit_mask) {
  // The CUTLASS efficient kernel has no enable_gqa path in 2.11 ("Invalid backend" when forced): K/V are
  // expanded for a forced efficient tier unless it says gqa-native.
  const bool forced_efficient = !tier.auto_backend && tier.forced == Backend::efficient;
  // transformers 5.17's use_gqa_in_sdpa: enable_gqa only without a mask and with K and V of one width <= 256.
  const bool wide_or_mixed = layer.head_dim > 256 || layer.value_dim() > 256 || layer.head_dim != layer.value_dim();
  switch (tier.gqa) {
    case TierRules::Gqa::expand: return true;
    case TierRules::Gqa::native: return false;
    case TierRules::Gqa::hf: return explicit_mask || forced_efficient;
    case TierRules::Gqa::transformers: return explicit_mask || wide_or_mixed || forced_efficient;
  }
  return true;
}

LayerPlan eager_plan() {
  LayerPlan p;
  p.backend = Backend::math;
  p.explicit_mask = true;
  p.expand_kv = true;
  p.work = ScoreWork::full_square;
  p.eager = true;
  return p;
}

namespace {

// FlashAttention 2's widest head (check_head_dim_size_flash; the flash-attn package's own limit too).
constexpr int64_t kFlashMaxHeadDim = 256;

// transformers' flash_attention_2 path (TierRules::flash_attn): _flash_attention_forward calls flash_attn_func
// (causal, window_size from the config) on rows without padding, and unpads padded rows (or reads packed rows'
// cumulative offsets from position_ids) into flash_attn_varlen_func: no mask, no repeat_kv, only real tokens.
LayerPlan plan_flash_attn(const AttentionSpec& layer, bool padded_or_packed, bool window_bites) {
  if (layer.head_dim > kFlashMaxHeadDim || layer.value_dim() > kFlashMaxHeadDim)
    throw InputError("attention head " + std::to_string(layer.head_dim) + " / " + std::to_string(layer.value_dim()) +
                     " wide under flash_attention_2. Violated constraint: the flash-attn package takes heads up to " +
                     std::to_string(kFlashMaxHeadDim) + " wide (use an hf-peft/sdpa-* tier)");
  LayerPlan p;
  p.backend = Backend::flash;
  p.explicit_mask = false;
  p.expand_kv = false;
  p.varlen = padded_or_packed;
  p.work = local_attention_size(layer) > 0 && window_bites ? ScoreWork::causal_window : ScoreWork::causal;
  return p;
}

}  // namespace

LayerPlan plan_layer(const TierRules& tier, const AttentionSpec& layer, bool padded_or_packed, int sm,
                     bool window_bites) {
  // The family's own attention code whatever the tier asks, or the eager tier on any family.
  if (layer.eager || tier.eager_attn) return eager_plan();
  if (tier.flash_attn) return plan_flash_attn(layer, padded_or_packed, window_bites);
  LayerPlan p;
  const bool windowed = local_attention_size(layer) > 0 && window_bites;
  p.explicit_mask = padded_or_packed || tier.mask_always || (windowed && !tier.honours_window);
  p.expand_kv = expands_kv(tier, layer, p.explicit_mask);
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
  return plan_layer(tier, layer, padded_or_packed, sm, window_needs_mask(local_attention_size(layer), width));
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
  if (layer.eager || tier.eager_attn || tier.flash_attn)
    return plan_layer(tier, layer, true, sm, window_bites);  // their own rules
  const bool forced_math = !tier.auto_backend && tier.forced == Backend::math;
  if (sm < 80 || forced_math) {
    LayerPlan p = plan_layer(tier, layer, true, sm, window_bites);
    p.backend = Backend::math;
    p.work = ScoreWork::full_square;
    return p;
  }
  // flash's varlen entry point takes q, k and v of one width (MLA's 192/128 does not fit it).
  const bool flash_fits = layer.head_dim <= kFlashMaxHeadDim && layer.value_dim() == layer.head_dim;
  const bool forced_efficient = !tier.auto_backend && tier.forced == Backend::efficient;
  LayerPlan p;
  p.backend = flash_fits && !forced_efficient ? Backend::flash : Backend::efficient;
  const bool windowed = local_attention_size(layer) > 0 && window_bites;
  if (p.backend == Backend::efficient && windowed) return plan_layer(tier, layer, true, sm, window_bites);
  p.varlen = true;
  p.expand_kv = tier.gqa == TierRules::Gqa::expand || p.backend == Backend::efficient;
  p.work = windowed ? ScoreWork::causal_window : ScoreWork::causal;
  return p;
}

LayerPlan plan_path(const TierRules& tier, const AttentionSpec& layer, AttentionPath path, int sm, bool window_bites) {
  // transformers under attn_implementation="sdpa" has no varlen path: packed rows (position_ids restarting, no
  // 2-D mask) get the block-diagonal mask of masking_utils' packed_sequence_mask (docs/families.md).
  if (path == AttentionPath::varlen && tier.stack == Stack::hf_peft)
    return plan_layer(tier, layer, true, sm, window_bites);
  if (path == AttentionPath::varlen) return plan_varlen_layer(tier, layer, sm, window_bites);
  return plan_layer(tier, layer, path == AttentionPath::explicit_mask, sm, window_bites);
}

LayerPlan plan_layer_at(const TierRules& tier, const AttentionSpec& layer, AttentionPath path, int sm,
                        int64_t width) {
  return plan_path(tier, layer, path, sm, window_needs_mask(local_attention_size(layer), width));
}

}  // namespace stepcast::model
