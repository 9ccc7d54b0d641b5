#include "model/intervals.hpp"

#include <algorithm>
#include <cmath>

namespace stepcast::model {

double ratio_error(double measured, double predicted) {
  if (!(measured > 0) || !(predicted > 0)) return INFINITY;
  return std::exp(std::abs(std::log(measured / predicted))) - 1.0;
}

double conformal_half_width(std::vector<double> errors, double coverage) {
  if (errors.empty()) return 0;
  std::sort(errors.begin(), errors.end());
  const auto n = static_cast<double>(errors.size());
  const auto k = static_cast<size_t>(std::ceil(coverage * (n + 1.0)));
  return errors[std::min(k, errors.size()) - 1];
}

// Transfers measured with a handful of points (n < 9) state their largest error: the conformal rule can claim
// no more. docs/method.md ("Transfer", "Intervals") gives each figure's records and commands.
const std::array<IntervalSpec, kIntervalKinds> kIntervalTable{{
    // The H200's default predictor zero shot on every committed record of a family it was not fitted on, at its
    // own tier (harness records of Llama-3-8B, Mixtral-8x7B, Qwen1.5-MoE-A2.7B, Qwen3-30B-A3B, Qwen2.5-7B;
    // transformers + peft records of Mixtral-8x7B and Qwen3-30B-A3B), each on the stack that measured it
    // (model/stacks.hpp): `stepcast validate --coverage --transfer --measurements <those files>` prints these
    // quantiles (docs/method.md, "Intervals"). Wide because Mixtral's expert rate does not carry (+50 to +121 %).
    // Post hoc: the launch model and the per-launch fixed cost saw Llama-3-8B's tables (docs/method.md).
    {"transferred-model", {0.9801, 1.1645}, 60, 19,
     "measurements/records/h200-{llama-3-8b,mixtral-8x7b,qwen1.5-moe-a2.7b,qwen3-30b-a3b}.jsonl, "
     "h200-transfer3/, h200-fewshot-check/, h200-hf-peft-{mixtral-8x7b,qwen3-30b-a3b}.jsonl"},
    // Gemma-4 -> Llama-3-8B 1 x 1024 before the host side was re-priced by launches (15 records).
    {"transferred-model-no-launches", {0.746, 0.746}, 15, 0, "docs/method.md, \"Launches\""},
    // H200 sdpa-efficient/grouped -> RTX PRO 6000 (sm_120), the seed's 7 points.
    // H200 sdpa-auto/grouped -> sdpa-efficient/grouped (5) and sdpa-math/grouped (2).
    {"transferred-tier", {0.398, 0.398}, 7, 0, "docs/method.md, \"Transfer\" (3)"},
    // H200 grouped -> loop experts, 3 points.
    {"transferred-experts", {0.846, 0.846}, 3, 0, "docs/method.md, \"Transfer\" (3)"},
    // Gemma-4 gqa-expand fitted on its 4 records of <= 4096 padded tokens, the 17 larger ones (up to 4x):
    // largest 7.65 % (a padded 2 x 8192); added to the kind's own half-width.
    {"extrapolated-shape", {0.0765, 0.0765}, 17, 0, "docs/method.md, \"Intervals\""},
}};

}  // namespace stepcast::model
