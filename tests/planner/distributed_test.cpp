// Several GPUs in the planner (planner/distributed.hpp): DistributedSampler's shards, the length-grouped
// global sampler, the step as its slowest rank plus the collectives, per-rank memory.
#include <algorithm>
#include <set>

#include "catch.hpp"
#include "model/errors.hpp"
#include "planner/distributed.hpp"

using namespace stepcast;
using namespace stepcast::planner;

namespace {

// Seconds proportional to processed tokens (padding costs like real tokens), 1 GiB per 1,000 tokens.
class TokenPredictor : public model::StepPredictor {
 public:
  double step_s(const model::MicroBatch& b) const override { return 1e-4 * static_cast<double>(b.padded_tokens()); }
  double peak_gib(const model::MicroBatch& b) const override { return 1e-3 * static_cast<double>(b.padded_tokens()); }
};

Corpus mixed_corpus(int64_t samples) {
  Corpus c;
  for (int64_t i = 0; i < samples; ++i) c.lengths.push_back(static_cast<int32_t>(i % 7 == 0 ? 4000 : 100 + 37 * (i % 11)));
  return c;
}

ParallelContext h200_like() {
  ParallelContext ctx;
  ctx.workload.weight_bytes = 50e9;
  ctx.workload.gradient_bytes = 200e6;
  ctx.workload.trainable_bytes = 200e6;
  ctx.workload.optimizer_state_bytes = 400e6;
  ctx.workload.layers = 30;
  ctx.link = {360.0, 5e-6};
  return ctx;
}

RunSpec run_of(int64_t accumulation) {
  RunSpec run;
  run.accumulation = accumulation;
  run.optimizer_step_s = 0.0;
  run.gpu_memory_gib = 1000;
  return run;
}

}  // namespace

TEST_CASE("DistributedSampler: a seeded permutation padded to N shards, rank r every N-th", "[distributed]") {
  const auto shards = distributed_shards(10, 4, 3);
  REQUIRE(shards.size() == 4);
  std::multiset<int32_t> all;
  for (const auto& s : shards) {
    CHECK(s.size() == 3);  // ceil(10 / 4), drop_last=False
    all.insert(s.begin(), s.end());
  }
  CHECK(all.size() == 12);
  CHECK(std::set<int32_t>(all.begin(), all.end()).size() == 10);  // every sample, two of them twice
  // The two repeats are the permutation's first two samples: rank 0's and rank 1's first.
  CHECK(all.count(shards[0][0]) == 2);
  CHECK(all.count(shards[1][0]) == 2);
  CHECK(distributed_shards(10, 4, 3) == shards);   // seeded
  CHECK(distributed_shards(10, 4, 4) != shards);
}

TEST_CASE("one GPU: no collectives, no straggler, the sum of the micro-batches", "[distributed]") {
  const Corpus corpus = mixed_corpus(64);
  BatchingSpec batching;
  batching.micro_batch = 2;
  const TokenPredictor predictor;
  const DistributedPlan p = simulate_distributed(corpus, batching, run_of(4), ParallelSpec{}, h200_like(), predictor);
  double sum = 0;
  const RankBatches one = distributed_batches(corpus, batching, 1);
  for (const auto& b : one[0]) sum += predictor.step_s(b);
  CHECK(p.steps == 8);
  CHECK(p.straggler_s == 0);
  CHECK(p.comm_added_s == 0);
  CHECK(p.wall_clock_s == Approx(sum));
  CHECK(p.gpu_hours == Approx(sum / 3600));
}

TEST_CASE("the length-grouped global sampler cuts the straggler time of a length mix", "[distributed]") {
  const Corpus corpus = mixed_corpus(2000);
  BatchingSpec batching;
  batching.micro_batch = 2;
  batching.max_length = 8192;
  const TokenPredictor predictor;
  for (int64_t n : {2, 4, 8}) {
    ParallelSpec spec{n, model::ParallelStrategy::ddp, Sampler::distributed};
    const DistributedPlan plain = simulate_distributed(corpus, batching, run_of(2), spec, h200_like(), predictor);
    spec.sampler = Sampler::length_grouped;
    const DistributedPlan grouped = simulate_distributed(corpus, batching, run_of(2), spec, h200_like(), predictor);
    CAPTURE(n, plain.straggler_s, grouped.straggler_s);
    CHECK(plain.straggler_s > 0);
    // Lower, not gone: a window holding a 4,000-token sample is as slow as its micro-batch, whoever runs it.
    CHECK(grouped.straggler_s < plain.straggler_s);
    CHECK(grouped.padding_fraction < plain.padding_fraction);
    CHECK(grouped.wall_clock_s < plain.wall_clock_s);
    CHECK(grouped.steps == plain.steps);
  }
}

TEST_CASE("every sample trains once per epoch under both samplers (drop_last=False repeats a few)", "[distributed]") {
  const Corpus corpus = mixed_corpus(1001);
  BatchingSpec batching;
  batching.micro_batch = 3;
  const TokenPredictor predictor;
  for (const RankBatches& ranks : {distributed_batches(corpus, batching, 4),
                                   length_grouped_batches(corpus, batching, 4, 2, predictor)}) {
    int64_t rows = 0;
    for (const auto& rank : ranks)
      for (const auto& b : rank) rows += b.num_rows();
    CHECK(rows == 1004);  // 1001 padded to a multiple of 4
  }
}

TEST_CASE("two GPUs: DDP exposes its last bucket, FSDP shards the weights", "[distributed]") {
  const Corpus corpus = mixed_corpus(256);
  BatchingSpec batching;
  batching.micro_batch = 2;
  const TokenPredictor predictor;
  const ParallelContext ctx = h200_like();
  ParallelSpec spec{2, model::ParallelStrategy::ddp, Sampler::length_grouped};
  const DistributedPlan ddp = simulate_distributed(corpus, batching, run_of(2), spec, ctx, predictor);
  CHECK(ddp.comm_added_s > 0);
  spec.strategy = model::ParallelStrategy::fsdp;
  const DistributedPlan fsdp = simulate_distributed(corpus, batching, run_of(2), spec, ctx, predictor);
  // FSDP holds half of 50 GB of weights less, plus two gathered layers; DDP the bucket copy of 200 MB.
  CHECK(fsdp.peak_gib < ddp.peak_gib - 20);
  CHECK(fsdp.comm_added_s > ddp.comm_added_s);  // gathers every micro-batch
}

TEST_CASE("the sweep keeps rows per step and ranks by wall clock and by GPU-hours", "[distributed]") {
  const Corpus corpus = mixed_corpus(512);
  BatchingSpec batching;
  batching.micro_batch = 2;
  const TokenPredictor predictor;
  const ParallelSweep sweep = sweep_parallel(corpus, batching, run_of(4), h200_like(), predictor, {1, 2, 4, 8});
  CHECK(sweep.skipped == 1);  // 8 does not divide accumulation 4
  CHECK(sweep.plans.size() == 2 + 4 + 4);
  for (size_t i = 1; i < sweep.plans.size(); ++i) CHECK(sweep.plans[i - 1].wall_clock_s <= sweep.plans[i].wall_clock_s);
  for (const auto& p : sweep.plans) CHECK(p.accumulation * p.parallel.gpus == 4);
  const auto by_cost = rank_by_gpu_hours(sweep.plans);
  for (size_t i = 1; i < by_cost.size(); ++i) CHECK(by_cost[i - 1].gpu_hours <= by_cost[i].gpu_hours);
  CHECK(by_cost.front().parallel.gpus < sweep.plans.front().parallel.gpus);  // fewer GPUs cost fewer GPU-hours
}

TEST_CASE("several GPUs without a link, a model or experts are refused", "[distributed]") {
  const Corpus corpus = mixed_corpus(16);
  const BatchingSpec batching;
  const TokenPredictor predictor;
  ParallelContext ctx = h200_like();
  ctx.link = {};
  const ParallelSpec two{2, model::ParallelStrategy::ddp, Sampler::distributed};
  CHECK_THROWS_AS(simulate_distributed(corpus, batching, run_of(1), two, ctx, predictor), InputError);
  CHECK_THROWS_AS(simulate_distributed(corpus, batching, run_of(1), ParallelSpec{0}, h200_like(), predictor), InputError);
  const ParallelSpec ep{2, model::ParallelStrategy::ep, Sampler::distributed};
  CHECK_THROWS_WITH(simulate_distributed(corpus, batching, run_of(1), ep, h200_like(), predictor),
                    Catch::Matchers::Contains("without routed experts"));
}
