#pragma once
// Kernel tiers: a label (the record's `tier`, docs/user-guide.md) plus what it means: which SDPA backend
// each attention layer takes on each mask path, how much of the score matrix that backend computes, and
// how the experts run. One grammar and one attention rule for the cost model and the LibTorch harness
// (harness/model.cpp calls plan_layer_at), so what is measured is what is predicted (docs/families.md).
// Coefficients are kept per tier; the rules below let one set of coefficients predict the penalty when
// padding switches a layer off its `is_causal` path.
#include <cstdint>
#include <string>

#include "model/batch.hpp"
#include "model/counts.hpp"
#include "model/gpus.hpp"
#include "model/shape.hpp"

namespace stepcast::model {

enum class Backend { flash, efficient, cudnn, math };
enum class ExpertImpl { loop, grouped };

std::string backend_name(Backend b);

struct TierRules {
  std::string label;
  bool known = false;           // false: an unknown label; every term free, HF-like mask semantics assumed
  // "auto" lets the SDPA dispatcher choose (rules below); otherwise the one backend enabled.
  bool auto_backend = true;
  Backend forced = Backend::efficient;
  // How K/V heads meet the query heads: `hf` (no suffix) passes enable_gqa when there is no mask and
  // expands K/V (repeat_kv) when there is one, the rule of transformers' use_gqa_in_sdpa for torch >= 2.5;
  // `expand` (gqa-expand, and every hf-sdpa-* label) always expands (transformers 5.17 on Gemma-4, traced);
  // `native` (gqa-native) always passes enable_gqa.
  enum class Gqa { hf, expand, native };
  Gqa gqa = Gqa::hf;
  bool enable_gqa = false;      // kept for callers; true when gqa == native
  bool mask_always = false;     // `mask-explicit`: never the is_causal fast path
  bool ce_chunked = false;      // `ce-chunked`: memory-lean cross-entropy
  // SDPA has no window argument: a sliding layer gets an explicit mask (so no is_causal path and,
  // for a kernel that cannot skip masked tiles, W x W work). A window-aware kernel does W*min(W,window).
  bool honours_window = false;
  ExpertImpl experts = ExpertImpl::loop;
  bool recompute = false;       // gradient checkpointing: one more forward per backward
  int kernel_sm = 0;            // arch the kernels were built for (sm80 CUTLASS on sm_120, docs/method.md); 0 = native
};

// The one tier grammar: `<attention>/<experts>[/<extra>...]` with
//   attention: sdpa-auto | sdpa-flash | sdpa-efficient | sdpa-cudnn | sdpa-math, or
//              hf-sdpa-<auto|flash|efficient|cudnn|math>[-sm<NN>][+ckpt] for Hugging Face stacks with a forced
//              backend built for an older arch (sm80 CUTLASS kernels on sm_120, docs/method.md)
//   experts:   loop (one GEMM pair per routed expert, as transformers' eager experts) | grouped (at::_grouped_mm)
//   extras:    ce-chunked (memory-lean chunked cross-entropy), mask-explicit (never the is_causal fast path),
//              gqa-expand | gqa-native (above), ckpt (gradient checkpointing)
// parse_tier throws stepcast::InputError naming every bad part and the allowed values.
TierRules parse_tier(const std::string& label);
// The same, lenient: a label outside the grammar is kept as unknown (known = false); records from other
// stacks carry such labels and are still priced.
TierRules tier_from_label(const std::string& label);

// The tier that behaves like transformers 5.17 + peft on Gemma-4 (measured on the H200, docs/harness.md):
// experts_implementation="grouped_mm" and K/V expanded to the query heads on every layer.
inline constexpr const char* kDefaultTier = "sdpa-auto/grouped/gqa-expand";

// Parts of a label, as the harness records them: "sdpa-auto", "grouped", "expand".
std::string attention_name(const TierRules& tier);
std::string experts_name(const TierRules& tier);
std::string gqa_name(TierRules::Gqa gqa);
// The canonical label of a known tier: parse_tier(tier_label(t)) == t.
std::string tier_label(const TierRules& tier);

// What one attention layer does for one micro-batch.
struct LayerPlan {
  Backend backend = Backend::efficient;
  bool explicit_mask = false;
  bool expand_kv = false;  // K/V repeated to the query heads (repeat_kv) instead of enable_gqa
  ScoreWork work = ScoreWork::causal;
  // Documents given to the kernel by cumulative offsets (flash / efficient varlen): `work` applies to each
  // document of the row, not to the row's width.
  bool varlen = false;
};

// How a micro-batch reaches attention: no mask (is_causal), an explicit 4-D mask (padding, or packed
// documents under a block mask), or documents by cumulative offsets (packed, varlen). Packed rows without a
// document mask (cross) take is_causal: their right padding comes after every real token.
enum class AttentionPath : uint8_t { plain, explicit_mask, varlen };
AttentionPath attention_path(const MicroBatch& batch);

// Whether a layer's window forces an explicit mask at this width. transformers' sdpa mask logic
// (masking_utils._ignore_causal_mask_sdpa) skips the mask only while `kv_length < local_attention_size`:
// at width == window it already builds the explicit sliding mask, although that mask equals the causal
// one there. So the boundary is width >= window (docs/families.md).
bool window_needs_mask(int64_t window, int64_t width);

// The SDPA dispatcher's choice (PyTorch 2.x priority on sm90+: cuDNN, flash, efficient, math), from
// the facts in docs/families.md: flash rejects explicit masks and head_dim > 256; efficient takes masks and
// head_dim 512 but not enable_gqa; cuDNN takes masks, head_dim <= 256 on sm90 (<= 128 on
// sm120), not before sm90; math takes everything.
Backend choose_backend(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm);

// The plan of one layer: explicit mask when the batch is padded or packed, the tier says mask-explicit,
// or the window bites (window_needs_mask) and the kernel cannot be told about it; K/V expansion from the
// tier's GQA rule; backend from the dispatcher rule; work from the backend and the mask.
LayerPlan plan_layer(const TierRules& tier, const AttentionSpec& layer, bool padded_or_packed, int sm,
                     bool window_bites);
// The same at a width: what the harness runs and the cost model prices for one micro-batch.
LayerPlan plan_layer_at(const TierRules& tier, const AttentionSpec& layer, bool padded_or_packed, int sm,
                        int64_t width);

// The plan of one layer for documents given by cumulative offsets (AttentionPath::varlen). The varlen entry
// points are flash's (head_dim <= 256, sm80+, GQA native, sliding window honoured) and the CUTLASS efficient
// kernel's (any head_dim up to 512, K/V expanded; no window argument, so a sliding layer whose window bites
// takes the explicit block mask instead). Before sm80, or with the math backend forced, there is no varlen
// kernel: math on the block-diagonal mask (W x W). A forced flash or efficient backend is honoured where it
// can run; cuDNN has no varlen entry point here, so a forced cuDNN tier takes the rule's choice.
LayerPlan plan_varlen_layer(const TierRules& tier, const AttentionSpec& layer, int sm, bool window_bites);
// The plan of one layer for a micro-batch on its path, at its width: the one rule the harness runs and the
// cost model prices.
LayerPlan plan_layer_at(const TierRules& tier, const AttentionSpec& layer, AttentionPath path, int sm,
                        int64_t width);

}  // namespace stepcast::model
