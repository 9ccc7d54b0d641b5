#pragma once
// The restart recommendation: simulate a grid of batching configurations and rank the ones that
// fit in memory (see ranks_before).
//
// Accumulation keeps the tokens per optimizer step of the baseline, so that a recommendation does
// not change the optimisation: padded policies keep rows per optimizer step (R * accumulation) exactly,
// and a micro-batch size that does not divide it is skipped; `pack` rows hold many samples, so its
// accumulation is the one whose R * max_length tokens per step is closest to the baseline's real tokens
// per step (at least 1), and it is skipped when that is still more than 25 % off. `padding-free` puts
// R samples in each micro-batch, so it keeps samples (and tokens) per optimizer step like a padded policy.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/batch.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"
#include "planner/simulate.hpp"

namespace stepcast::planner {

struct SweepSpec {
  // Earlier policies win ties (rank_plans keeps the first of equivalent plans): simpler ones first.
  std::vector<Policy> policies{Policy::fixed, Policy::pad_to_longest, Policy::bucket_to_pair, Policy::sorted_buckets,
                               Policy::pack, Policy::padding_free};
  std::vector<int64_t> micro_batches;  // empty: the baseline's
  std::vector<int64_t> max_lengths;    // empty: the baseline's
  std::vector<int64_t> bucket_sizes;   // empty: the baseline's (sorted-buckets only)
  std::vector<int64_t> pad_to_multiples;  // empty: the baseline's (every policy)
  std::vector<Packer> packers;            // empty: the baseline's (pack only)
  // empty: the baseline's (pack and padding-free). The attention path is the training stack's (a kernel
  // with document offsets or not), so the sweep only tries other modes when asked to.
  std::vector<model::DocumentAttention> pack_attentions;
  int64_t top = 10;                    // recommendations kept
  int threads = 2;
};

// A sweep simulates every configuration over the whole corpus and keeps each result (about 0.5 KB) until
// ranked: 10^6 configurations are about 0.5 GB and, on a 20 k-sample corpus, 10-20 minutes on two threads
// (docs/planner.md "Bounded resources" and "Speed"). A longer grid is refused before anything is simulated.
constexpr int64_t kMaxSweepConfigurations = 1'000'000;

struct SweepConfig {
  BatchingSpec batching;
  int64_t accumulation = 1;
};

struct SweepResult {
  PlanResult baseline;
  std::vector<PlanResult> recommendations;  // ranked, at most `top`
  int64_t configurations = 0;               // simulated
  int64_t out_of_memory = 0;                // simulated but over the memory limit
  int64_t skipped = 0;                      // micro-batch sizes that cannot keep rows per optimizer step
};

// Configurations the grid holds (before skipping), counted up to just past kMaxSweepConfigurations.
int64_t sweep_size(const SweepSpec& spec);

// The grid, in a fixed order; throws InputError beyond kMaxSweepConfigurations. `skipped` counts the
// combinations left out (including a max_length whose rounding up to a pad multiple would not fit a 32-bit
// width).
std::vector<SweepConfig> sweep_configs(const Corpus& corpus, const BatchingSpec& baseline, const RunSpec& run,
                                       const SweepSpec& spec, int64_t& skipped);

// Better first: fits memory, fits the window, loses no more tokens to truncation than the baseline
// (a shorter max_length is faster because it trains on less data, which is not a like-for-like
// saving); of the plans that lose more, fewer extra truncated tokens first (so that plans losing the same
// tokens stay together, one group each); then shorter wall clock (first-seen shapes included, so a pad
// multiple wins exactly when the shapes it saves cost more than the padding it adds), less padding. Wall
// clocks within 1e-9 relative count as equal (sums taken in another order differ in the last bits).
bool ranks_before(const PlanResult& a, const PlanResult& b, int64_t baseline_truncated_tokens);

// ranks_before in words, for the people reading a ranked list.
std::string ranking_rule();

// Tokens a plan truncates beyond what the baseline truncates (0 when it keeps every token the baseline keeps).
int64_t extra_truncated_tokens(const PlanResult& plan, int64_t baseline_truncated_tokens);

// Sorts `plans` best first and keeps one of each set of equivalent plans (same rows, accumulation,
// max_length, processed tokens, distinct shapes and wall clock, packed or not: e.g. every padded policy
// at one row per micro-batch, or a pad multiple that divides every width).
void rank_plans(std::vector<PlanResult>& plans, int64_t baseline_truncated_tokens);

// progress(done, total) is called from the calling thread only.
using Progress = std::function<void(int64_t done, int64_t total)>;

std::vector<PlanResult> simulate_all(const Corpus& corpus, const std::vector<SweepConfig>& configs, const RunSpec& run,
                                     const model::StepPredictor& predictor, int threads, const Progress& progress);

SweepResult sweep(const Corpus& corpus, const BatchingSpec& baseline, const RunSpec& run, const SweepSpec& spec,
                  const model::StepPredictor& predictor, const Progress& progress = {});

}  // namespace stepcast::planner
