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

// Which software stack the label describes: the project's LibTorch harness (`sdpa-*`, `hf-sdpa-*` labels) or
// transformers + peft itself (`hf-peft/sdpa-<experts_implementation>`, the label tools/device/hf_campaign.py
// writes). Both run PyTorch's SDPA; the stack decides how K/V meet the query heads and whether packed rows
// can take a varlen kernel (docs/families.md, "The attention path, from the sources").
enum class Stack { harness, hf_peft };

struct TierRules {
  std::string label;
  bool known = false;           // false: an unknown label; every term free, HF-like mask semantics assumed
  Stack stack = Stack::harness;
  // "auto" lets the SDPA dispatcher choose (rules below); otherwise the one backend enabled.
  bool auto_backend = true;
  Backend forced = Backend::efficient;
  // How K/V heads meet the query heads (docs/families.md):
  //   hf           repeat_kv where the layer has a mask, enable_gqa otherwise: transformers' use_gqa_in_sdpa
  //                before its head_dim guard (torch >= 2.5); the harness's label without a gqa extra
  //   transformers the same, and repeat_kv also where a K or V head is wider than 256 or K and V differ in
  //                width: use_gqa_in_sdpa of transformers 5.17; every
  //                hf-peft label, and the harness's `gqa-transformers`
  //   expand       always repeat_kv (`gqa-expand`, every hf-sdpa-* label)
  //   native       always enable_gqa (`gqa-native`)
  enum class Gqa { hf, expand, native, transformers };
  Gqa gqa = Gqa::hf;
  bool enable_gqa = false;      // kept for callers; true when gqa == native
  bool mask_always = false;     // `mask-explicit`: never the is_causal fast path
  bool ce_chunked = false;      // `ce-chunked`: memory-lean cross-entropy
  // SDPA has no window argument: a sliding layer gets an explicit mask (so no is_causal path and,
  // for a kernel that cannot skip masked tiles, W x W work). A window-aware kernel does W*min(W,window).
  bool honours_window = false;
  // transformers under attn_implementation="flash_attention_2" (`hf-peft/flash_attention_2-<experts>`): the
  // flash-attn package's kernels on every layer, no mask ever built (unpadded rows causal; padded rows unpadded
  // to its varlen entry point; packed rows by position_ids, varlen too), the window and GQA taken natively
  // (docs/families.md, "The attention path, from the sources"). Priced at FlashAttention 2's public rates.
  bool flash_attn = false;
  // transformers under attn_implementation="eager" (`hf-peft/eager-<experts>`): eager_attention_forward on every
  // layer, as a family that cannot take SDPA runs anyway (AttentionSpec::eager): scores materialised in the
  // activations' dtype, K/V repeated, an explicit mask always (eager_plan; docs/families.md, "Eager attention").
  bool eager_attn = false;
  ExpertImpl experts = ExpertImpl::loop;
  std::string experts_impl;     // hf-peft: transformers' experts_implementation as written ("grouped_mm", "eager")
  bool recompute = false;       // gradient checkpointing: one more forward per backward
  int kernel_sm = 0;            // arch the kernels were built for (sm80 CUTLASS on sm_120, docs/method.md); 0 = native
};

// The one tier grammar: `<attention>/<experts>[/<extra>...]` with
//   attention: sdpa-auto | sdpa-flash | sdpa-efficient | sdpa-cudnn | sdpa-math, or
//              hf-sdpa-<auto|flash|efficient|cudnn|math>[-sm<NN>][+ckpt] for Hugging Face stacks with a forced
//              backend built for an older arch (sm80 CUTLASS kernels on sm_120, docs/method.md)
//   experts:   loop (one GEMM pair per routed expert, as transformers' eager experts) | grouped (at::_grouped_mm)
//   extras:    ce-chunked (memory-lean chunked cross-entropy), mask-explicit (never the is_causal fast path),
//              gqa-expand | gqa-native | gqa-transformers (above), ckpt (gradient checkpointing)
// or, for transformers + peft itself, `hf-peft/sdpa-<grouped_mm|eager>[/<extra>...]` (experts grouped or loop;
// attention sdpa-auto, K/V by transformers 5.17's rule), or `hf-peft/flash_attention_2-<grouped_mm|eager>` (the
// flash-attn package, TierRules::flash_attn), or `hf-peft/eager-<grouped_mm|eager>` (TierRules::eager_attn).
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
// Whether a step under `tier` recomputes each layer's forward (gradient checkpointing): a `ckpt` label, or any
// transformers + peft label (every record of that stack, and its executor's default, ran reentrant checkpointing).
bool recomputes(const TierRules& tier);

// What one attention layer does for one micro-batch.
struct LayerPlan {
  Backend backend = Backend::efficient;
  bool explicit_mask = false;
  bool expand_kv = false;  // K/V repeated to the query heads (repeat_kv) instead of enable_gqa
  ScoreWork work = ScoreWork::causal;
  // Documents given to the kernel by cumulative offsets (flash / efficient varlen): `work` applies to each
  // document of the row, not to the row's width.
  bool varlen = false;
  // transformers' eager attention (AttentionSpec::eager), not SDPA: matmul, the additive mask, softmax and matmul
  // over materialised scores in the activations' dtype, on every path and tier (eager_plan).
  bool eager = false;
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
// The local attention size transformers passes to that test: the sliding window, or Llama-4's attention chunk
// (create_chunked_causal_mask's local_size); 0 for a layer that attends to the whole causal prefix.
int64_t local_attention_size(const AttentionSpec& layer);

// The SDPA dispatcher's choice, PyTorch 2.11's select_sdp_backend (docs/families.md, "Which backend"): the
// priority is cuDNN, flash, efficient, math on sm90 and sm10x, and flash, efficient, math (cuDNN never reached)
// on every other arch; each backend's own checks:
//   cuDNN      sm80-sm121; head dims multiples of 8; on sm90/sm10x K and V up to 256 wide, and for training
//              either both <= 128, or 192/128 (MLA), or 256/256; elsewhere both <= 128; masks and GQA accepted
//   flash      no explicit mask; q, k, v of one head_dim <= 256; sm80-sm121 (on sm86/89/120/121 training
//              rejects head_dim in (192, 224]); GQA accepted
//   efficient  masks accepted; head dims multiples of 8, any width; no enable_gqa with fewer K/V heads (2.11)
//   math       everything (materialises W x W, in fp32 for bf16 inputs)
// `enable_gqa` is true when K/V keep their fewer heads (not repeated). Training in bf16 is assumed: before sm80
// the efficient kernel takes no bf16 (math then). sm 0 (a device without a CUDA arch) assumes neither cuDNN
// nor flash: efficient, then math.
Backend choose_backend(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm);
// Why choose_backend chose what it chose, one line per backend it skipped and the one it took, e.g.
// "cudnn: head_dim 512 > 256; flash: head_dim 512 > 256; efficient: K/V heads 2 < 16 under enable_gqa; math".
std::string backend_reason(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm);

// Whether a stack repeats K/V to the query heads for this layer (the tier's Gqa rule).
bool expands_kv(const TierRules& tier, const AttentionSpec& layer, bool explicit_mask);

// The plan of a layer transformers runs with eager_attention_forward (AttentionSpec::eager; docs/families.md, "Eager
// attention"): masking_utils' eager_mask never skips the mask (allow_is_causal_skip=False), so an explicit
// (R, 1, W, W) additive mask on every path; repeat_kv always; the full W x W of scores materialised (a window only
// masks them); backend math, the one SDPA backend with the same work. No varlen path.
LayerPlan eager_plan();

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
// The plan of one layer for a micro-batch on its path, whether or not its window bites; a varlen path under
// an hf-peft tier is the explicit block mask (transformers' sdpa has no varlen entry point).
LayerPlan plan_path(const TierRules& tier, const AttentionSpec& layer, AttentionPath path, int sm, bool window_bites);
// The same at a width: the one rule the harness runs and the cost model prices.
LayerPlan plan_layer_at(const TierRules& tier, const AttentionSpec& layer, AttentionPath path, int sm,
                        int64_t width);

}  // namespace stepcast::model
