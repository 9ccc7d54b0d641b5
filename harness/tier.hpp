#pragma once
// Kernel tiers the harness can force and record, labelled `<attention>/<experts>[/<extra>...]`:
//   attention: sdpa-auto | sdpa-flash | sdpa-efficient | sdpa-cudnn | sdpa-math
//   experts:   loop (one GEMM pair per routed expert, as transformers' eager experts) | grouped (at::_grouped_mm)
//   extras:    ce-chunked (memory-lean chunked cross-entropy), mask-explicit (never the is_causal fast path),
//              gqa-expand / gqa-native (how K/V heads meet the query heads; default as Hugging Face does)
// The default, `sdpa-auto/grouped/gqa-expand`, behaves like transformers 5.17 + peft with attn_implementation="sdpa".
// No LibTorch here, so the CLI and the tests can parse labels anywhere.
#include <string>

namespace stepcast::harness {

enum class Attention { automatic, flash, efficient, cudnn, math };
enum class Experts { loop, grouped };
// hf: is_causal when a layer needs no mask (no padding, and the window covers the width), else an
// explicit boolean mask (transformers' sdpa mask logic); explicit: always a mask.
enum class MaskPath { hf, explicit_mask };
// hf (no label suffix): enable_gqa when there is no mask, K/V expanded (repeat_kv) when there is one, the rule
// of transformers' use_gqa_in_sdpa as written for torch >= 2.5; transformers 5.17 on Gemma-4 was traced
// expanding always, which is `expand`. native: always enable_gqa.
enum class Gqa { hf, expand, native };
enum class CrossEntropy { full, chunked };

struct Tier {
  Attention attention = Attention::automatic;
  Experts experts = Experts::loop;
  MaskPath mask = MaskPath::hf;
  Gqa gqa = Gqa::hf;
  CrossEntropy ce = CrossEntropy::full;

  std::string label() const;
  std::string attention_name() const;  // "sdpa-auto", ...
  std::string experts_name() const;    // "loop", "grouped"
};

// The tier that behaves like transformers 5.17 + peft on Gemma-4 (measured on the H200, see docs/harness.md):
// experts_implementation="grouped_mm" (its default where torch._grouped_mm dispatches) and K/V expanded
// to the query heads on every layer (traced: it never passes enable_gqa, with or without a mask).
inline constexpr const char* kDefaultTier = "sdpa-auto/grouped/gqa-expand";

// Parses a label; throws stepcast::InputError naming the bad part and the allowed values.
Tier parse_tier(const std::string& label);

}  // namespace stepcast::harness
