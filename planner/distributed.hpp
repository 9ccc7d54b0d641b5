#pragma once
// A run on several GPUs (docs/planner.md, "Several GPUs"): the corpus sharded over N ranks, each rank's
// micro-batches through the one-GPU predictor, and every optimizer step as long as its slowest rank plus the
// collectives the strategy does not hide (model/parallel.hpp).
//
// Samplers:
//   distributed     torch's DistributedSampler (shuffle=True, drop_last=False): a seeded permutation of the
//                   corpus, padded by repeating its first samples to a multiple of N, rank r taking positions
//                   r, r + N, r + 2N, ...; each rank's shard then goes through the batching policy on its own
//                   (the permutation is stepcast's seeded shuffle, planner/random.hpp, not torch's randperm:
//                   the same distribution of shards, not the same shards).
//   length-grouped  the lever: the same permutation cut into global batches of N x R x accumulation samples;
//                   each global batch sorted by length, cut into micro-batches of R neighbours (padded to the
//                   longest), and the micro-batches dealt longest-predicted-first to the rank with the least
//                   predicted work that still has room (accumulation micro-batches per rank), so that every
//                   rank of a step gets similar work. The batching policy is not used (the sampler forms the
//                   micro-batches); max_length and pad_to_multiple_of are.
//
// One optimizer step w:
//   rank_s(r, w) = sum over r's micro-batches of window w of  step_s + the micro-batch collectives' added seconds
//   step_s(w)    = max_r rank_s(r, w) + the optimizer-step collectives' added seconds + optimizer_step_s
//   straggler(w) = max_r rank_s(r, w) - mean_r rank_s(r, w)
// Wall clock = startup + epochs x sum_w step_s(w) + the first-seen and run-start seconds of the slowest rank
// + checkpoints + evaluation. Every epoch is charged as the first (a reshuffle changes which samples meet, not
// the distribution). GPU-hours = wall clock x N / 3600.
#include <cstdint>
#include <string>
#include <vector>

#include "model/batch.hpp"
#include "model/parallel.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"
#include "planner/memory_timeline.hpp"
#include "planner/simulate.hpp"

namespace stepcast::planner {

enum class Sampler { distributed, length_grouped };
std::string sampler_name(Sampler s);  // "distributed", "length-grouped"

struct ParallelSpec {
  int64_t gpus = 1;
  model::ParallelStrategy strategy = model::ParallelStrategy::ddp;
  Sampler sampler = Sampler::distributed;
};

// What a distributed plan needs beyond the one-GPU predictor: the model's workload and the link.
struct ParallelContext {
  model::ParallelWorkload workload;
  model::Link link;
  double overlap_slowdown = model::kDefaultOverlapSlowdown;
};

// Sample ids of each rank under DistributedSampler (shuffle with `seed`, drop_last=False padding).
std::vector<std::vector<int32_t>> distributed_shards(int64_t samples, int64_t ranks, uint64_t seed);

// The samples `ids` of `corpus` (lengths, kept, roots), in that order: one rank's shard.
Corpus shard_corpus(const Corpus& corpus, const std::vector<int32_t>& ids);

// The micro-batches each rank runs, in order (rank -> micro-batches).
using RankBatches = std::vector<std::vector<model::MicroBatch>>;

// DistributedSampler, then the batching policy on each rank's shard.
RankBatches distributed_batches(const Corpus& corpus, const BatchingSpec& batching, int64_t ranks);
// The length-grouped global sampler; `accumulation` micro-batches per rank per optimizer step.
RankBatches length_grouped_batches(const Corpus& corpus, const BatchingSpec& batching, int64_t ranks,
                                   int64_t accumulation, const model::StepPredictor& predictor);

// micro_batch and accumulation are per rank (torchrun's per_device_train_batch_size and
// gradient_accumulation_steps): one optimizer step trains gpus x micro_batch x accumulation rows
// (docs/planner.md, "Several GPUs").
struct DistributedPlan {
  ParallelSpec parallel;
  int64_t micro_batch = 1;        // rows per micro-batch per rank
  int64_t accumulation = 1;       // micro-batches per rank per optimizer step
  int64_t rows_per_step() const { return parallel.gpus * micro_batch * accumulation; }
  int64_t steps = 0;              // optimizer steps, whole run
  double wall_clock_s = 0;
  double gpu_hours = 0;
  double compute_s = 0;           // whole run: sum over steps of the slowest rank's micro-batch seconds
  double comm_added_s = 0;        // whole run: the collectives' exposed seconds and the overlap slowdown (the
                                  // slowest rank's per micro-batch ones and the optimizer step's)
  double optimizer_s = 0;         // whole run
  double first_seen_s = 0;        // the slowest rank's first-seen, run-start and (cold) compile seconds
  double straggler_s = 0;         // whole run: sum over steps of max - mean over ranks
  double straggler_per_step_s = 0;  // mean over steps
  double mean_step_s = 0;         // wall-clock seconds per optimizer step, mean (collectives included)
  double padding_fraction = 0;    // over every rank's micro-batches
  double peak_gib = 0;            // per-rank allocated peak: the rank's memory timeline + the strategy's delta
  double memory_limit_gib = 0;
  double reserved_peak_gib = 0;   // the largest rank's
  MemoryJudgement memory;         // of the rank with the highest peak
  bool fits_memory = true;        // memory.verdict == fits
  bool fits_window = true;
};

// Throws InputError when `gpus` < 1, or > 1 without a link or a model workload.
// run.accumulation is the micro-batches per rank per optimizer step.
DistributedPlan simulate_distributed(const Corpus& corpus, const BatchingSpec& batching, const RunSpec& run,
                                     const ParallelSpec& parallel, const ParallelContext& context,
                                     const model::StepPredictor& predictor);

// The multi-GPU sweep: N in `gpu_counts` x the strategies (ep only for a model with experts) x both samplers,
// keeping rows per optimizer step (accumulation = baseline accumulation / N; an N that does not divide it is
// skipped), run.accumulation being the one-GPU accumulation. Returned ranked by wall clock (plans that do not fit
// memory last); rank_by_gpu_hours re-sorts a copy.
struct ParallelSweep {
  std::vector<DistributedPlan> plans;  // by wall clock, fastest first
  int64_t skipped = 0;
};
ParallelSweep sweep_parallel(const Corpus& corpus, const BatchingSpec& batching, const RunSpec& run,
                             const ParallelContext& context, const model::StepPredictor& predictor,
                             const std::vector<int64_t>& gpu_counts = {1, 2, 4, 8});
std::vector<DistributedPlan> rank_by_gpu_hours(std::vector<DistributedPlan> plans);

}  // namespace stepcast::planner
