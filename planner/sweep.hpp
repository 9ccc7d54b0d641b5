#pragma once
// The restart recommendation: simulate a grid of batching configurations and rank the ones that
// fit in memory, first those that fit the window, then by wall clock.
//
// Accumulation keeps the tokens per optimizer step of the baseline, so that a recommendation does
// not change the optimisation: padded policies keep rows per optimizer step (R * accumulation) exactly,
// and a micro-batch size that does not divide it is skipped; `pack` rows hold many samples, so its
// accumulation is the one whose R * max_length tokens per step is closest to the baseline's real tokens
// per step (at least 1).
#include <cstdint>
#include <functional>
#include <vector>

#include "model/batch.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"
#include "planner/simulate.hpp"

namespace stepcast::planner {

struct SweepSpec {
  std::vector<Policy> policies{Policy::fixed, Policy::pad_to_longest, Policy::sorted_buckets, Policy::bucket_to_pair,
                               Policy::pack};
  std::vector<int64_t> micro_batches;  // empty: the baseline's
  std::vector<int64_t> max_lengths;    // empty: the baseline's
  std::vector<int64_t> bucket_sizes;   // empty: the baseline's (sorted-buckets only)
  int64_t top = 10;                    // recommendations kept
  int threads = 2;
};

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

// The grid, in a fixed order; `skipped` counts the combinations left out.
std::vector<SweepConfig> sweep_configs(const Corpus& corpus, const BatchingSpec& baseline, const RunSpec& run,
                                       const SweepSpec& spec, int64_t& skipped);

// Better first: fits memory, fits the window, shorter wall clock, less padding.
bool ranks_before(const PlanResult& a, const PlanResult& b);

// progress(done, total) is called from the calling thread only.
using Progress = std::function<void(int64_t done, int64_t total)>;

std::vector<PlanResult> simulate_all(const Corpus& corpus, const std::vector<SweepConfig>& configs, const RunSpec& run,
                                     const model::StepPredictor& predictor, int threads, const Progress& progress);

SweepResult sweep(const Corpus& corpus, const BatchingSpec& baseline, const RunSpec& run, const SweepSpec& spec,
                  const model::StepPredictor& predictor, const Progress& progress = {});

}  // namespace stepcast::planner
