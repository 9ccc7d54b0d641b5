#include "planner/distributed.hpp"

#include <algorithm>
#include <numeric>

#include "model/errors.hpp"
#include "planner/random.hpp"
#include "planner/timeline.hpp"

namespace stepcast::planner {
namespace {

// The seeded permutation of DistributedSampler, padded (drop_last=False) by repeating its first samples
// until it divides into `ranks` equal shards.
std::vector<int32_t> padded_permutation(int64_t samples, int64_t ranks, uint64_t seed) {
  std::vector<int32_t> order(static_cast<size_t>(samples));
  std::iota(order.begin(), order.end(), 0);
  Rng rng(seed);
  shuffle(order.begin(), order.end(), rng);
  const int64_t total = (samples + ranks - 1) / ranks * ranks;
  for (int64_t i = samples; i < total; ++i) order.push_back(order[static_cast<size_t>(i - samples)]);
  return order;
}

// Rows of R neighbours, padded to the longest and rounded up to the pad multiple.
model::MicroBatch padded_batch(std::vector<int64_t> rows, const BatchingSpec& batching) {
  model::MicroBatch b;
  b.width = round_up_width(*std::max_element(rows.begin(), rows.end()), batching.pad_to_multiple_of);
  b.rows = std::move(rows);
  return b;
}

// One global batch: sorted by length, cut into micro-batches of R, dealt largest predicted cost first to the
// least-loaded rank that still has room.
void deal_global_batch(std::vector<int64_t> lengths, const BatchingSpec& batching, const model::StepPredictor& predictor,
                       RankBatches& out) {
  std::sort(lengths.begin(), lengths.end(), std::greater<>());
  std::vector<std::pair<double, model::MicroBatch>> batches;
  const auto rows = static_cast<size_t>(batching.micro_batch);
  for (size_t i = 0; i < lengths.size(); i += rows) {
    std::vector<int64_t> r(lengths.begin() + static_cast<std::ptrdiff_t>(i),
                           lengths.begin() + static_cast<std::ptrdiff_t>(std::min(lengths.size(), i + rows)));
    model::MicroBatch b = padded_batch(std::move(r), batching);
    batches.emplace_back(predictor.step_s(b), std::move(b));
  }
  std::stable_sort(batches.begin(), batches.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const size_t ranks = out.size();
  const size_t room = (batches.size() + ranks - 1) / ranks;
  std::vector<double> load(ranks, 0);
  std::vector<size_t> taken(ranks, 0);
  for (auto& [cost, batch] : batches) {
    size_t best = ranks;
    for (size_t r = 0; r < ranks; ++r)
      if (taken[r] < room && (best == ranks || load[r] < load[best])) best = r;
    load[best] += cost;
    ++taken[best];
    out[best].push_back(std::move(batch));
  }
}

struct RankCharges {
  std::vector<double> step_s;       // per micro-batch, its collectives' added seconds included
  std::vector<double> comm_s;       // per micro-batch: those added seconds
  double one_off_s = 0;             // first-seen, run-start and (cold machine) compile seconds
  double peak_gib = -1e300;         // the strategy's delta may take it below 0 for a tiny predictor
  double reserved_peak_gib = 0;
  int64_t cache_releases = 0;
  int64_t real_tokens = 0, processed_tokens = 0;
};

// The rank's micro-batches in order: their step costs, and their memory through the one-GPU timeline plus the
// strategy's change of the rank's memory (model/parallel.hpp).
RankCharges charge_rank(const std::vector<model::MicroBatch>& batches, const model::StepPredictor& predictor,
                        const model::ParallelConfig& config, const ParallelContext& context, const RunSpec& run,
                        const model::RunMemory& memory, int64_t accumulation) {
  RankCharges c;
  RunCharger charger(predictor, run.cold_cache);  // every rank's machine compiles its own kernels
  const double usable = run.memory_limit_gib() - (memory.context_known ? memory.context_gib : 0.0);
  MemoryTimeline timeline(memory, accumulation, run.epochs, usable);
  const auto n = static_cast<int64_t>(batches.size());
  for (int64_t i = 0; i < n; ++i) {
    const model::MicroBatch& b = batches[static_cast<size_t>(i)];
    const BatchCharge charge = charger.next(b);
    const int64_t tokens = b.padded_tokens();
    const double comm = model::micro_batch_comm(config, context.workload, model::split_step(charge.step_s, tokens),
                                                context.link).added_s();
    c.step_s.push_back(charge.step_s + comm);
    c.comm_s.push_back(comm);
    c.one_off_s += charge.first_seen_s + charge.run_start_s + charge.compile_s;
    const model::RankMemory rank = model::rank_memory(config, context.workload, tokens);
    timeline.add(b, predictor.memory_parts(b), charge.new_shape, rank.delta_gib());
    if ((i + 1) % accumulation == 0 || i + 1 == n)
      timeline.optimizer_step(rank.step_delta_gib(), rank.optimizer_shard_share);
    c.real_tokens += b.real_tokens();
    c.processed_tokens += tokens;
  }
  if (n > 0) c.peak_gib = timeline.peak_gib();
  c.reserved_peak_gib = timeline.reserved_peak_gib();
  c.cache_releases = timeline.cache_releases();
  return c;
}

void check(const ParallelSpec& parallel, const ParallelContext& context) {
  if (parallel.gpus < 1 || parallel.gpus > 1024)
    throw InputError("gpus = " + std::to_string(parallel.gpus) + ". Violated constraint: 1 to 1024");
  if (parallel.gpus == 1) return;
  if (context.workload.weight_bytes <= 0)
    throw InputError("several GPUs need the model's shape (calibrated coefficients or `model`), not the width-quadratic "
                     "equation. Violated constraint: a StepModel predictor");
  if (context.link.bus_gbps <= 0)
    throw InputError("several GPUs need the GPU's interconnect. Violated constraint: nvlink_gbps or pcie_gbps in "
                     "scenarios/gpus.yaml for this GPU");
  if (parallel.strategy == model::ParallelStrategy::ep && context.workload.moe_layers == 0)
    throw InputError("strategy ep on a model without routed experts. Violated constraint: ddp or fsdp for a dense model");
}

}  // namespace

Corpus shard_corpus(const Corpus& corpus, const std::vector<int32_t>& ids) {
  Corpus sub;
  sub.num_roots = corpus.num_roots;
  for (int32_t id : ids) {
    const auto i = static_cast<size_t>(id);
    sub.lengths.push_back(corpus.lengths[i]);
    if (corpus.has_kept()) sub.kept.push_back(corpus.kept[i]);
    if (corpus.has_roots()) sub.roots.push_back(corpus.roots[i]);
  }
  return sub;
}

std::string sampler_name(Sampler s) { return s == Sampler::distributed ? "distributed" : "length-grouped"; }

std::vector<std::vector<int32_t>> distributed_shards(int64_t samples, int64_t ranks, uint64_t seed) {
  const std::vector<int32_t> order = padded_permutation(samples, ranks, seed);
  std::vector<std::vector<int32_t>> shards(static_cast<size_t>(ranks));
  for (size_t i = 0; i < order.size(); ++i) shards[i % static_cast<size_t>(ranks)].push_back(order[i]);
  return shards;
}

RankBatches distributed_batches(const Corpus& corpus, const BatchingSpec& batching, int64_t ranks) {
  RankBatches out(static_cast<size_t>(ranks));
  const auto shards = distributed_shards(corpus.size(), ranks, batching.seed);
  for (size_t r = 0; r < shards.size(); ++r) {
    const Schedule schedule = build_schedule(shard_corpus(corpus, shards[r]), batching);
    out[r].resize(static_cast<size_t>(schedule.num_batches()));
    for (int64_t b = 0; b < schedule.num_batches(); ++b) schedule.fill(b, out[r][static_cast<size_t>(b)]);
  }
  return out;
}

RankBatches length_grouped_batches(const Corpus& corpus, const BatchingSpec& batching, int64_t ranks,
                                   int64_t accumulation, const model::StepPredictor& predictor) {
  RankBatches out(static_cast<size_t>(ranks));
  const std::vector<int32_t> order = padded_permutation(corpus.size(), ranks, batching.seed);
  const auto global = static_cast<size_t>(ranks * batching.micro_batch * accumulation);
  for (size_t begin = 0; begin < order.size(); begin += global) {
    std::vector<int64_t> lengths;
    for (size_t i = begin; i < std::min(order.size(), begin + global); ++i)
      lengths.push_back(std::min<int64_t>(corpus.lengths[static_cast<size_t>(order[i])], batching.max_length));
    deal_global_batch(std::move(lengths), batching, predictor, out);
  }
  return out;
}

DistributedPlan simulate_distributed(const Corpus& corpus, const BatchingSpec& batching, const RunSpec& run,
                                     const ParallelSpec& parallel, const ParallelContext& context,
                                     const model::StepPredictor& predictor) {
  check(parallel, context);
  const int64_t accumulation = std::max<int64_t>(1, run.accumulation);
  const RankBatches ranks = parallel.sampler == Sampler::distributed
                                ? distributed_batches(corpus, batching, parallel.gpus)
                                : length_grouped_batches(corpus, batching, parallel.gpus, accumulation, predictor);
  const model::ParallelConfig config{parallel.strategy, parallel.gpus, 0, context.overlap_slowdown, model::kBucketBytes};
  const model::RunMemory memory = predictor.run_memory(run.allocator);
  std::vector<RankCharges> charges;
  for (const auto& batches : ranks)
    charges.push_back(charge_rank(batches, predictor, config, context, run, memory, accumulation));

  DistributedPlan p;
  p.parallel = parallel;
  p.micro_batch = batching.micro_batch;
  p.accumulation = accumulation;
  p.memory_limit_gib = run.memory_limit_gib();
  int64_t windows = 0, real = 0, processed = 0, releases = 0;
  p.peak_gib = -1e300;
  for (const auto& c : charges) {
    windows = std::max(windows, optimizer_steps(static_cast<int64_t>(c.step_s.size()), accumulation));
    p.first_seen_s = std::max(p.first_seen_s, c.one_off_s);
    if (c.peak_gib > p.peak_gib) {
      p.peak_gib = c.peak_gib;
      p.reserved_peak_gib = c.reserved_peak_gib;
      releases = c.cache_releases;
    }
    real += c.real_tokens;
    processed += c.processed_tokens;
  }
  if (processed == 0) p.peak_gib = 0;
  OptimizerStep optimizer = resolve_optimizer_step(run.optimizer_step_s, predictor);
  if (optimizer.source == OptimizerSource::predictor)  // a rank updates its shards only (RankMemory's share)
    optimizer.step_s -= (1.0 - model::rank_memory(config, context.workload, 0).optimizer_shard_share) *
                        predictor.optimizer_update_s();
  double epoch_s = 0, epoch_compute = 0, epoch_comm = 0, epoch_straggler = 0;
  for (int64_t w = 0; w < windows; ++w) {
    double slowest = 0, slowest_comm = 0, sum = 0;
    for (const auto& c : charges) {
      double rank_s = 0, rank_comm = 0;
      const auto n = static_cast<int64_t>(c.step_s.size());
      for (int64_t i = w * accumulation; i < std::min(n, (w + 1) * accumulation); ++i) {
        rank_s += c.step_s[static_cast<size_t>(i)];
        rank_comm += c.comm_s[static_cast<size_t>(i)];
      }
      if (rank_s > slowest) {
        slowest = rank_s;
        slowest_comm = rank_comm;
      }
      sum += rank_s;
    }
    // The reducing collective runs behind the backward of the window's last micro-batch (a third of a window's
    // last micro-batch is forward, model::split_step), taken from the slowest rank's mean micro-batch.
    const double last_micro_batch = slowest / static_cast<double>(accumulation);
    const double comm =
        model::optimizer_step_comm(config, context.workload, model::split_step(last_micro_batch, 0), context.link)
            .added_s();
    epoch_compute += slowest - slowest_comm;
    epoch_comm += comm + slowest_comm;
    epoch_straggler += slowest - sum / static_cast<double>(parallel.gpus);
    epoch_s += slowest + comm + optimizer.step_s;
  }
  const auto epochs = static_cast<double>(run.epochs);
  p.steps = run.epochs * windows;
  p.compute_s = epochs * epoch_compute;
  p.comm_added_s = epochs * epoch_comm;
  p.optimizer_s = static_cast<double>(p.steps) * optimizer.step_s;
  p.straggler_s = epochs * epoch_straggler;
  p.straggler_per_step_s = windows > 0 ? epoch_straggler / static_cast<double>(windows) : 0;
  p.mean_step_s = windows > 0 ? epoch_s / static_cast<double>(windows) : 0;
  p.padding_fraction = processed > 0 ? static_cast<double>(processed - real) / static_cast<double>(processed) : 0;
  const double checkpoints =
      run.checkpoint_every_steps > 0 ? static_cast<double>(p.steps / run.checkpoint_every_steps) * run.checkpoint_save_s : 0;
  const double evals = run.eval_every_steps > 0 ? static_cast<double>(p.steps / run.eval_every_steps) * run.eval_s : 0;
  p.wall_clock_s = run.startup_s + epochs * epoch_s + p.first_seen_s + checkpoints + evals;
  p.gpu_hours = p.wall_clock_s * static_cast<double>(parallel.gpus) / 3600.0;
  p.memory = judge_memory(p.peak_gib, p.reserved_peak_gib, releases, memory, p.memory_limit_gib);
  p.fits_memory = p.memory.verdict == MemoryVerdict::fits;
  p.fits_window = run.window_hours <= 0 || p.wall_clock_s <= run.window_hours * 3600.0;
  return p;
}

ParallelSweep sweep_parallel(const Corpus& corpus, const BatchingSpec& batching, const RunSpec& run,
                             const ParallelContext& context, const model::StepPredictor& predictor,
                             const std::vector<int64_t>& gpu_counts) {
  ParallelSweep sweep;
  std::vector<model::ParallelStrategy> strategies{model::ParallelStrategy::ddp, model::ParallelStrategy::fsdp};
  if (context.workload.moe_layers > 0) strategies.push_back(model::ParallelStrategy::ep);
  for (int64_t n : gpu_counts) {
    if (run.accumulation % n != 0) {
      ++sweep.skipped;
      continue;
    }
    RunSpec per_rank = run;
    per_rank.accumulation = run.accumulation / n;
    for (auto strategy : strategies) {
      if (n == 1 && strategy != model::ParallelStrategy::ddp) continue;  // one GPU: no strategy
      for (auto sampler : {Sampler::distributed, Sampler::length_grouped})
        sweep.plans.push_back(
            simulate_distributed(corpus, batching, per_rank, ParallelSpec{n, strategy, sampler}, context, predictor));
    }
  }
  std::stable_sort(sweep.plans.begin(), sweep.plans.end(), [](const DistributedPlan& a, const DistributedPlan& b) {
    if (a.memory.verdict != b.memory.verdict) return a.memory.verdict < b.memory.verdict;
    return a.wall_clock_s < b.wall_clock_s;
  });
  return sweep;
}

std::vector<DistributedPlan> rank_by_gpu_hours(std::vector<DistributedPlan> plans) {
  std::stable_sort(plans.begin(), plans.end(), [](const DistributedPlan& a, const DistributedPlan& b) {
    if (a.memory.verdict != b.memory.verdict) return a.memory.verdict < b.memory.verdict;
    return a.gpu_hours < b.gpu_hours;
  });
  return plans;
}

}  // namespace stepcast::planner
