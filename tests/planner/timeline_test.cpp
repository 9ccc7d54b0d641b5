// First-seen shapes, the run start, the optimizer step and pad_to_multiple_of, computed by hand; and
// simulate() agreeing with predict_timeline() on the same micro-batches (one cost rule, not two).
#include <algorithm>
#include <bit>
#include <set>
#include <utility>

#include "catch.hpp"
#include "exact_predictor.hpp"
#include "io/model_config.hpp"
#include "model/coefficients.hpp"
#include "model/step_model.hpp"
#include "planner/simulate.hpp"
#include "planner/sweep.hpp"
#include "planner/timeline.hpp"

using namespace stepcast::planner;
using stepcast::model::MicroBatch;
using stepcast::testing::OneOffPredictor;

namespace {

MicroBatch batch(std::vector<int64_t> rows, int64_t width) {
  MicroBatch b;
  b.rows = std::move(rows);
  b.width = width;
  return b;
}

Corpus corpus_of(std::vector<int32_t> lengths) {
  Corpus c;
  c.lengths = std::move(lengths);
  return c;
}

// The micro-batches of a schedule in run order, `epochs` times over.
std::vector<MicroBatch> batches_of(const Schedule& s, int64_t epochs = 1) {
  std::vector<MicroBatch> out;
  for (int64_t e = 0; e < epochs; ++e)
    for (int64_t b = 0; b < s.num_batches(); ++b) {
      MicroBatch m;
      s.fill(b, m);
      out.push_back(m);
    }
  return out;
}

BatchingSpec spec(Policy policy, int64_t rows, int64_t max_length, int64_t multiple, int64_t bucket = 2) {
  BatchingSpec b;
  b.policy = policy;
  b.micro_batch = rows;
  b.max_length = max_length;
  b.bucket_size = bucket;
  b.seed = 5;
  b.pad_to_multiple_of = multiple;
  return b;
}

}  // namespace

TEST_CASE("a shape pays its first-seen cost once, in run order, the run start once", "[planner][timeline]") {
  // step = 0.001*R*W + 0.5; first seen = 1 + 0.01*W; run start 10 s; optimizer 0.25 s (given), accumulation 2.
  const OneOffPredictor p(0.001, 0.0, 0.5, 1.0, 0.01, 10.0, 99.0);
  const std::vector<MicroBatch> run{batch({100}, 100), batch({200}, 200), batch({90}, 100), batch({300}, 300)};
  const Timeline t = predict_timeline(run, 2, p, 0.25);
  REQUIRE(t.batches.size() == 4);
  CHECK(t.distinct_shapes == 3);  // widths 100, 200, 100, 300
  CHECK(t.batches[0].first_seen);
  CHECK(t.batches[1].first_seen);
  CHECK_FALSE(t.batches[2].first_seen);
  CHECK(t.batches[3].first_seen);
  CHECK(t.batches[0].first_seen_s == Approx(2.0));
  CHECK(t.batches[1].first_seen_s == Approx(3.0));
  CHECK(t.batches[2].first_seen_s == 0.0);
  CHECK(t.batches[3].first_seen_s == Approx(4.0));
  CHECK(t.batches[0].run_start_s == 10.0);
  for (size_t i = 1; i < 4; ++i) CHECK(t.batches[i].run_start_s == 0.0);
  CHECK(t.compute_s == Approx(0.6 + 0.7 + 0.6 + 0.8));
  CHECK(t.first_seen_s == Approx(9.0));
  CHECK(t.run_start_s == 10.0);
  CHECK(t.optimizer_s == Approx(0.5));  // windows close at indices 1 and 3
  CHECK(t.steps == 2);
  CHECK(t.optimizer.source == OptimizerSource::given);
  CHECK(t.batches[0].elapsed_s == Approx(12.6));
  CHECK(t.batches[1].elapsed_s == Approx(16.55));
  CHECK(t.batches[2].elapsed_s == Approx(17.15));
  CHECK(t.batches[3].elapsed_s == Approx(22.2));
  CHECK(t.wall_clock_s == Approx(22.2));
  CHECK(t.batches[2].optimizer_step == 1);
}

TEST_CASE("rows are part of the shape: 2 x 100 and 1 x 100 are two shapes", "[planner][timeline]") {
  const OneOffPredictor p(0.0, 0.0, 1.0, 5.0, 0.0, 0.0, 0.0);
  const Timeline t = predict_timeline({batch({100, 80}, 100), batch({100}, 100), batch({60, 50}, 100)}, 1, p, 0.0);
  CHECK(t.distinct_shapes == 2);
  CHECK(t.first_seen_s == Approx(10.0));
}

TEST_CASE("the optimizer step closes every window and a run that ends mid-window", "[planner][timeline]") {
  const OneOffPredictor p(0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.125);
  std::vector<MicroBatch> run(5, batch({10}, 10));
  const Timeline t = predict_timeline(run, 2, p, std::nullopt);  // unset: the predictor's calibrated value
  CHECK(t.optimizer.source == OptimizerSource::predictor);
  CHECK(t.optimizer.step_s == 0.125);
  const std::vector<double> expected{0, 0.125, 0, 0.125, 0.125};
  for (size_t i = 0; i < 5; ++i) CHECK(t.batches[i].optimizer_s == expected[i]);
  CHECK(t.steps == 3);
  CHECK(t.wall_clock_s == Approx(5 + 0.375));
  CHECK_THROWS_AS(predict_timeline(run, 0, p, 0.0), std::invalid_argument);
  CHECK(predict_timeline({}, 3, p, 0.0).wall_clock_s == 0.0);
}

TEST_CASE("simulate gives predict_timeline's totals on the same micro-batches, every policy", "[planner][timeline]") {
  SyntheticSpec syn;
  syn.samples = 1500;
  syn.seed = 11;
  syn.components = {{1.0, 700.0, 0.9}};
  const Corpus c = generate_synthetic(syn);
  const OneOffPredictor p(2e-4, 3e-8, 0.05, 0.7, 1e-4, 4.0, 0.03);
  for (Policy policy : {Policy::fixed, Policy::pad_to_longest, Policy::sorted_buckets, Policy::bucket_to_pair, Policy::pack})
    for (int64_t multiple : {1, 8, 64}) {
      for (int64_t epochs : {1, 2}) {
        INFO(policy_name(policy) << " m=" << multiple << " epochs=" << epochs);
        const BatchingSpec b = spec(policy, 3, 2048, multiple, 16);
        RunSpec run;
        run.accumulation = 4;
        run.epochs = epochs;
        run.gpu_memory_gib = 1e9;
        const PlanResult plan = simulate(c, b, run, p);
        const Timeline t = predict_timeline(batches_of(build_schedule(c, b), epochs), 4, p, std::nullopt);
        CHECK(plan.compute_s == Approx(t.compute_s).epsilon(1e-12));
        CHECK(plan.first_seen_s == Approx(t.first_seen_s).epsilon(1e-12));  // later epochs meet no new shape
        CHECK(plan.run_start_s == t.run_start_s);
        CHECK(plan.optimizer_s == Approx(t.optimizer_s).epsilon(1e-12));
        CHECK(plan.distinct_shapes == t.distinct_shapes);
        CHECK(plan.steps == t.steps);
        CHECK(plan.wall_clock_s == Approx(t.wall_clock_s).epsilon(1e-12));
        CHECK(plan.optimizer.source == OptimizerSource::predictor);
      }
    }
}

TEST_CASE("a given optimizer step wins over the predictor's", "[planner][timeline]") {
  const OneOffPredictor p(0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.125);
  RunSpec run;
  run.accumulation = 2;
  run.gpu_memory_gib = 80;
  const Corpus c = corpus_of({10, 20, 30, 40, 50});  // 5 micro-batches of 1 row, 3 optimizer steps
  const BatchingSpec b = spec(Policy::pad_to_longest, 1, 100, 1);
  CHECK(simulate(c, b, run, p).optimizer_s == Approx(3 * 0.125));
  run.optimizer_step_s = 0.0;  // given, even as 0
  const PlanResult given = simulate(c, b, run, p);
  CHECK(given.optimizer_s == 0.0);
  CHECK(given.optimizer.source == OptimizerSource::given);
}

TEST_CASE("pad_to_multiple_of pads exactly, for every policy", "[planner][batching][pad]") {
  // lengths {5,3,8,2,7} truncated at 6 -> {5,3,6,2,6}: 22 real tokens; 2 rows per micro-batch; m = 4.
  const Corpus c = corpus_of({5, 3, 8, 2, 7});
  struct Case {
    Policy policy;
    int64_t processed_m1, processed_m4, shapes_m1, shapes_m4;
  };
  // pad-to-longest: (5,3) w 5 -> 8, (6,2) w 6 -> 8, (6) w 6 -> 8: 16 + 16 + 8 = 40 (m = 1: 10 + 12 + 6 = 28);
  //   shapes (2,5) (2,6) (1,6) -> (2,8) (1,8).
  // fixed: every width 6 -> 8: 40 (m = 1: 30); shapes (2,6) (1,6) -> (2,8) (1,8).
  // bucket-to-pair / sorted-buckets k = 2: sorted {2,3,5,6,6}: (2,3) w 3 -> 4, (5,6) w 6 -> 8, (6) w 6 -> 8:
  //   8 + 16 + 8 = 32 (m = 1: 6 + 12 + 6 = 24); shapes (2,3) (2,6) (1,6) -> (2,4) (2,8) (1,8).
  // pack: next-fit rows {5} {3} {6} {2} {6} (no two fit in 6), 6 -> 8 wide: 5 x 8 = 40 (m = 1: 30); (2,8) (1,8).
  const std::vector<Case> cases{{Policy::pad_to_longest, 28, 40, 3, 2},
                                {Policy::fixed, 30, 40, 2, 2},
                                {Policy::bucket_to_pair, 24, 32, 3, 3},
                                {Policy::sorted_buckets, 24, 32, 3, 3},
                                {Policy::pack, 30, 40, 2, 2}};
  const OneOffPredictor p(0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0);
  RunSpec run;
  run.gpu_memory_gib = 80;
  for (const Case& k : cases) {
    INFO(policy_name(k.policy));
    const Schedule m1 = build_schedule(c, spec(k.policy, 2, 6, 1));
    const Schedule m4 = build_schedule(c, spec(k.policy, 2, 6, 4));
    CHECK(m1.real_tokens == 22);
    CHECK(m4.real_tokens == 22);
    CHECK(m1.processed_tokens == k.processed_m1);
    CHECK(m4.processed_tokens == k.processed_m4);
    CHECK(m4.padding_fraction() == Approx(static_cast<double>(k.processed_m4 - 22) / static_cast<double>(k.processed_m4)));
    for (int32_t w : m4.batch_width) CHECK(w % 4 == 0);
    CHECK(simulate(c, spec(k.policy, 2, 6, 1), run, p).distinct_shapes == k.shapes_m1);
    CHECK(simulate(c, spec(k.policy, 2, 6, 4), run, p).distinct_shapes == k.shapes_m4);
  }
}

TEST_CASE("the collator rounds past max_length: 4000 -> 4032, a truncated 4100 stays 4096", "[planner][batching][pad]") {
  const auto width = [](std::vector<int32_t> lengths, Policy policy, int64_t max_length, int64_t m) {
    return build_schedule(corpus_of(std::move(lengths)), spec(policy, 2, max_length, m)).batch_width.front();
  };
  CHECK(width({4000, 1000}, Policy::pad_to_longest, 4096, 64) == 4032);
  CHECK(width({4100, 10}, Policy::pad_to_longest, 4096, 64) == 4096);    // truncated to 4096, a multiple of 64
  CHECK(width({4100, 10}, Policy::pad_to_longest, 4096, 100) == 4100);   // past max_length, as the collator pads
  CHECK(width({4000, 1000}, Policy::bucket_to_pair, 4096, 64) == 4032);
  CHECK(width({10, 20}, Policy::fixed, 4000, 64) == 4032);               // max_length rounded up
  // pack: rows hold at most max_length real tokens (3000 + 1000 fits 4000) and are 4032 wide.
  const Schedule packed = build_schedule(corpus_of({3000, 1000, 500}), spec(Policy::pack, 1, 4000, 64));
  REQUIRE(packed.num_batches() == 2);
  CHECK(packed.row_tokens == std::vector<int32_t>{4000, 500});
  CHECK(packed.batch_width == std::vector<int32_t>{4032, 4032});
  CHECK(packed.processed_tokens == 2 * 4032);
  CHECK_THROWS_AS(build_schedule(corpus_of({10}), spec(Policy::fixed, 1, 100, 0)), std::invalid_argument);
  CHECK_THROWS_AS(build_schedule(corpus_of({10}), spec(Policy::fixed, 1, INT32_MAX, 64)), std::invalid_argument);
}

TEST_CASE("the sweep ranks a pad multiple by what its shapes save against the padding it adds", "[planner][sweep][pad]") {
  // 1,000 samples of distinct lengths 1000..1999, one row per micro-batch: m = 1 meets 1,000 shapes and
  // pads nothing; m = 64 meets 17 widths (1024, 1088, ..., 2048) and pads ~31.5 tokens per sample,
  // ~31.5 s at 1 ms per token.
  std::vector<int32_t> lengths;
  for (int32_t l = 1999; l >= 1000; --l) lengths.push_back(l);
  const Corpus c = corpus_of(lengths);
  RunSpec run;
  run.gpu_memory_gib = 80;
  SweepSpec sweep_spec;
  sweep_spec.policies = {Policy::pad_to_longest};
  sweep_spec.pad_to_multiples = {1, 64};
  const BatchingSpec baseline = spec(Policy::pad_to_longest, 1, 4096, 1);
  int64_t skipped = 0;
  CHECK(sweep_configs(c, baseline, run, sweep_spec, skipped).size() == 2);

  const OneOffPredictor costly(1e-3, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0);  // 1 s per new shape
  const SweepResult with = sweep(c, baseline, run, sweep_spec, costly);
  REQUIRE(with.recommendations.size() == 2);
  CHECK(with.recommendations[0].batching.pad_to_multiple_of == 64);
  CHECK(with.recommendations[0].distinct_shapes == 17);
  CHECK(with.recommendations[1].distinct_shapes == 1000);
  CHECK(with.recommendations[0].first_seen_s == Approx(17.0));
  CHECK(with.recommendations[1].first_seen_s == Approx(1000.0));

  const OneOffPredictor free(1e-3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);  // shapes cost nothing: padding decides
  const SweepResult without = sweep(c, baseline, run, sweep_spec, free);
  REQUIRE(without.recommendations.size() == 2);
  CHECK(without.recommendations[0].batching.pad_to_multiple_of == 1);
  CHECK(without.recommendations[0].padding_fraction == 0.0);
  CHECK(without.recommendations[1].padding_fraction > 0.01);
}

TEST_CASE("the shape set agrees with std::set over many keys and repeats", "[planner][timeline]") {
  ShapeSet shapes;
  std::set<std::pair<int64_t, int64_t>> reference;
  uint64_t x = 12345;
  int64_t disagreements = 0;
  for (int i = 0; i < 200000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG
    const stepcast::model::ShapeKey key{static_cast<int64_t>(1 + (x >> 60)), static_cast<int64_t>(1 + (x >> 33) % 20000)};
    if (shapes.insert(key) != reference.insert({key.rows, key.width}).second) ++disagreements;
  }
  CHECK(disagreements == 0);
  CHECK(reference.size() > 100000);  // many distinct keys, and many repeats
  CHECK(shapes.size() == static_cast<int64_t>(reference.size()));
}

TEST_CASE("later epochs meet no new shape", "[planner][timeline]") {
  // {5,3,8,2,7} at max_length 6, 2 rows: shapes (2,5) (2,6) (1,6); first seen = 2 s each, run start 7 s.
  const OneOffPredictor p(0.0, 0.0, 1.0, 2.0, 0.0, 7.0, 0.0);
  RunSpec run;
  run.epochs = 3;
  run.gpu_memory_gib = 80;
  const PlanResult plan = simulate(corpus_of({5, 3, 8, 2, 7}), spec(Policy::pad_to_longest, 2, 6, 1), run, p);
  CHECK(plan.micro_batches == 9);
  CHECK(plan.distinct_shapes == 3);
  CHECK(plan.compute_s == Approx(9.0));
  CHECK(plan.first_seen_s == Approx(6.0));  // not 18: once per run
  CHECK(plan.run_start_s == 7.0);
  CHECK(plan.wall_clock_s == Approx(9.0 + 6.0 + 7.0));
}

TEST_CASE("the planner counts the micro-batches the host bounds", "[timeline][host]") {
  // Device 1 ms per padded token, host floor 0.5 s: widths 100, 400, 1000 (one row each) are device
  // 0.1, 0.4 and 1.0 s, so the first two are host-bound and their steps cost 0.5 s.
  const stepcast::testing::FloorPredictor predictor(1e-3, 0.5);
  std::vector<stepcast::model::MicroBatch> batches;
  for (int64_t w : {100, 400, 1000}) {
    stepcast::model::MicroBatch b;
    b.rows = {w};
    b.width = w;
    batches.push_back(b);
  }
  const auto t = stepcast::planner::predict_timeline(batches, 1, predictor, 0.0);
  CHECK(t.host_bound == 2);
  CHECK(t.batches[0].host_bound);
  CHECK_FALSE(t.batches[2].host_bound);
  CHECK(t.compute_s == Approx(0.5 + 0.5 + 1.0));

  stepcast::planner::Corpus corpus;
  corpus.lengths = {100, 400, 1000};
  stepcast::planner::BatchingSpec spec;
  spec.policy = stepcast::planner::Policy::pad_to_longest;
  spec.micro_batch = 1;
  spec.max_length = 4096;
  stepcast::planner::RunSpec run;
  run.gpu_memory_gib = 100;
  run.epochs = 2;
  const auto plan = stepcast::planner::simulate(corpus, spec, run, predictor);
  CHECK(plan.host_bound_micro_batches == 4);  // two per epoch
}

TEST_CASE("a run pays first-seen time per cuDNN graph: a padded shape after its unpadded twin pays again, "
          "a GPU without cuDNN attention never", "[planner][timeline][first_seen]") {
  const auto shape = stepcast::io::load_model("llama-3-8b");
  stepcast::model::Coefficients c;
  c.model = "llama-3-8b";
  c.gpu = "NVIDIA H200";
  c.tier = "hf-peft/sdpa-grouped_mm";
  c.step[stepcast::model::kFixed] = {0.5, 0, true, ""};
  c.run[stepcast::model::kFirstSeen] = {1.0, 0, true, ""};
  const std::vector<MicroBatch> run = {batch({1024, 1024}, 1024), batch({1024, 700}, 1024),
                                       batch({1024, 600}, 1024), batch({1024, 1024}, 1024), batch({512, 512}, 512)};
  // On the H200 (sm90) every layer runs cuDNN: is_causal and the padding mask are two graphs of one shape.
  const stepcast::model::StepModel h200(shape, c);
  REQUIRE(std::popcount(h200.first_seen_graphs(run[0])) == 1);
  REQUIRE(h200.first_seen_graphs(run[0]) != h200.first_seen_graphs(run[1]));
  const Timeline t = predict_timeline(run, 1, h200, std::nullopt);
  std::vector<double> paid;
  for (const auto& e : t.batches) paid.push_back(e.first_seen_s);
  CHECK(paid == std::vector<double>{1.0, 1.0, 0.0, 0.0, 1.0});
  CHECK(t.distinct_shapes == 2);
  // On an A100 (sm80) PyTorch puts flash before cuDNN: no graph is built, no first-seen time.
  const stepcast::model::StepModel a100(shape, c, stepcast::model::gpu_info("NVIDIA A100-SXM4-80GB"));
  CHECK(a100.first_seen_graphs(run[1]) == 0u);
  CHECK(predict_timeline(run, 1, a100, std::nullopt).first_seen_s == 0.0);
}
