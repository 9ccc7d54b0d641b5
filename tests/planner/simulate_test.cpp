// The wall clock, memory check, diversity and sweep of tiny runs, computed by hand.
#include <algorithm>

#include "catch.hpp"
#include "exact_predictor.hpp"
#include "planner/simulate.hpp"
#include "planner/sweep.hpp"
#include "planner/width_quadratic.hpp"

using namespace stepcast::planner;
using stepcast::testing::ExactPredictor;

namespace {

Corpus tiny() {
  Corpus c;
  c.lengths = {5, 3, 8, 2, 7};
  c.roots = {0, 0, 1, 2, 1};
  c.num_roots = 3;
  return c;
}

RunSpec tiny_run() {
  RunSpec r;
  r.accumulation = 2;
  r.epochs = 2;
  r.optimizer_step_s = 1.5;
  r.checkpoint_every_steps = 2;
  r.checkpoint_save_s = 7;
  r.eval_every_steps = 1;
  r.eval_s = 0.5;
  r.startup_s = 100;
  r.gpu_memory_gib = 80;
  r.window_hours = 1;
  return r;
}

size_t count_pack(const std::vector<SweepConfig>& configs) {
  return static_cast<size_t>(std::count_if(configs.begin(), configs.end(),
                                           [](const SweepConfig& c) { return c.batching.policy == Policy::pack; }));
}

PlanResult plan(double wall_clock_s, int64_t truncated_tokens, bool fits_window = true) {
  PlanResult p;
  p.wall_clock_s = wall_clock_s;
  p.truncated.tokens = truncated_tokens;
  p.fits_window = fits_window;
  return p;
}

}  // namespace

TEST_CASE("ranking: memory, window, no extra truncation, then wall clock", "[planner][sweep]") {
  CHECK(ranks_before(plan(10, 0), plan(5, 100), 0));             // faster only because it drops data
  CHECK(ranks_before(plan(5, 100), plan(10, 200), 100));         // both keep the baseline's loss
  CHECK(ranks_before(plan(50, 0, true), plan(10, 0, false), 0)); // the window first
  CHECK(ranks_before(plan(50, 200), plan(5, 300), 100));         // fewer extra truncated tokens, one group each
  CHECK(ranks_before(plan(5, 200), plan(9, 200), 100));          // within a group, the faster
  CHECK(extra_truncated_tokens(plan(5, 300), 100) == 200);
  CHECK(extra_truncated_tokens(plan(5, 50), 100) == 0);
  PlanResult oom = plan(1, 0);
  oom.memory.verdict = MemoryVerdict::out_of_memory;
  CHECK(ranks_before(plan(50, 0), oom, 0));
  PlanResult risky = plan(1, 0);  // fits at the point estimate only: after every plan that fits, before OOM
  risky.memory.verdict = MemoryVerdict::at_risk;
  CHECK(ranks_before(plan(50, 0), risky, 0));
  CHECK(ranks_before(risky, oom, 0));
  // Equivalent plans (every policy at one row per micro-batch) collapse to the first.
  std::vector<PlanResult> plans{plan(7, 0), plan(7, 0), plan(3, 0)};
  plans[1].batching.policy = Policy::bucket_to_pair;
  rank_plans(plans, 0);
  REQUIRE(plans.size() == 2);
  CHECK(plans[0].wall_clock_s == 3);
  CHECK(plans[1].batching.policy == Policy::pad_to_longest);
  // A packed plan is equivalent to a packed one only: pad multiples that change nothing collapse.
  std::vector<PlanResult> packed{plan(7, 0), plan(7, 0), plan(7, 0)};
  packed[0].batching.policy = packed[1].batching.policy = Policy::pack;
  packed[1].batching.pad_to_multiple_of = 64;
  rank_plans(packed, 0);
  REQUIRE(packed.size() == 2);
  CHECK(packed[0].batching.policy == Policy::pack);
  CHECK(packed[0].batching.pad_to_multiple_of == 1);
  CHECK(packed[1].batching.policy == Policy::pad_to_longest);
  // Different numbers of distinct shapes are different plans even at one wall clock.
  std::vector<PlanResult> shapes{plan(7, 0), plan(7, 0)};
  shapes[1].distinct_shapes = 3;
  rank_plans(shapes, 0);
  CHECK(shapes.size() == 2);
}

TEST_CASE("the wall clock of a tiny run adds up by hand", "[planner][simulate]") {
  // step = 1*R*W + 0.1*R*W^2 + 10; pad-to-longest at max_length 6 gives (2 x 5), (2 x 6), (1 x 6):
  // 10 + 5 + 10 = 25, 12 + 7.2 + 10 = 29.2, 6 + 3.6 + 10 = 19.6 -> 73.8 s per epoch.
  const ExactPredictor predictor(1.0, 0.1, 10.0, 1.0, 0.5);
  const auto p = simulate(tiny(), BatchingSpec{Policy::pad_to_longest, 2, 6, 64, 0, 1}, tiny_run(), predictor);
  CHECK(p.micro_batches == 6);     // 3 per epoch, 2 epochs
  CHECK(p.steps == 3);             // ceil(6 / 2)
  CHECK(p.compute_s == Approx(147.6));
  CHECK(p.optimizer_s == Approx(4.5));    // 3 * 1.5
  CHECK(p.checkpoint_s == Approx(7.0));   // floor(3 / 2) = 1 save
  CHECK(p.eval_s == Approx(1.5));         // 3 * 0.5
  CHECK(p.wall_clock_s == Approx(100 + 147.6 + 4.5 + 7 + 1.5));
  CHECK(p.fits_window);
  CHECK(p.peak_gib == Approx(1 + 0.5 * 12));
  // The predictor measured no whole-run error and no CUDA context: it fits at the point estimate only.
  CHECK(p.memory.verdict == MemoryVerdict::at_risk);
  CHECK_FALSE(p.fits_memory);
  CHECK(p.memory.margin_gib == Approx(80 - 7));
  CHECK_FALSE(p.oom.has_value());
  CHECK(p.truncated.tokens == 3);
  CHECK(p.padding_fraction == Approx(6.0 / 28.0));
  // windows of 2 micro-batches: samples {0,1,2,3} -> roots {0,1,2}; sample {4} -> {1}: (3 + 1) / 2
  CHECK(p.roots_per_window == Approx(2.0));
}

TEST_CASE("an infeasible plan names its first micro-batch over the limit and its optimizer step", "[planner][simulate]") {
  const ExactPredictor predictor(1.0, 0.1, 10.0, 1.0, 0.5);  // peaks 6, 7, 4 GiB
  RunSpec run = tiny_run();
  run.memory_cap_gib = 6.5;
  run.accumulation = 1;
  run.window_hours = 0.05;  // 180 s
  const auto p = simulate(tiny(), BatchingSpec{Policy::pad_to_longest, 2, 6, 64, 0, 1}, run, predictor);
  REQUIRE(p.oom.has_value());
  CHECK_FALSE(p.fits_memory);
  CHECK(p.oom->micro_batch == 2);
  CHECK(p.oom->step == 2);
  CHECK(p.oom->rows == 2);
  CHECK(p.oom->width == 6);
  CHECK(p.oom->peak_gib == Approx(7.0));
  CHECK(p.oom->limit_gib == Approx(6.5));
  CHECK_FALSE(p.fits_window);
}

TEST_CASE("the sweep keeps rows per optimizer step and ranks feasible plans", "[planner][sweep]") {
  SyntheticSpec syn;
  syn.samples = 4000;
  syn.roots = 300;
  const Corpus c = generate_synthetic(syn);
  RunSpec run;
  run.accumulation = 8;
  run.gpu_memory_gib = 80;
  const BatchingSpec baseline{Policy::pad_to_longest, 2, 4096, 64, 3, 1};
  SweepSpec spec;
  spec.micro_batches = {1, 2, 3, 4};
  spec.max_lengths = {2048, 4096};
  spec.bucket_sizes = {2, 64};
  spec.top = 100;
  int64_t skipped = 0;
  const auto configs = sweep_configs(c, baseline, run, spec, skipped);
  // 3 micro-batch sizes divide 16 rows per step, x 2 lengths (x 2 buckets for sorted-buckets); padding-free
  // keeps samples per step as the padded policies keep rows
  CHECK(configs.size() - count_pack(configs) == 6 + 6 + 12 + 6 + 6);
  CHECK(skipped - (8 - count_pack(configs)) == 2 + 2 + 4 + 2 + 2);  // R = 3; pack is skipped when > 25 % off
  for (const auto& cfg : configs)
    if (cfg.batching.policy != Policy::pack) CHECK(cfg.batching.micro_batch * cfg.accumulation == 16);
  // peak = 0.001 GiB per processed token: 4 x 4096 = 16.4 GiB > 16 GiB limit for some plans
  run.gpu_memory_gib = 16;
  const ExactPredictor predictor(1e-4, 1e-8, 0.01, 0.0, 0.001);
  const auto result = sweep(c, baseline, run, spec, predictor);
  CHECK(result.configurations == static_cast<int64_t>(configs.size()));
  CHECK(result.out_of_memory > 0);
  REQUIRE_FALSE(result.recommendations.empty());
  const int64_t lost = result.baseline.truncated.tokens;
  for (size_t i = 1; i < result.recommendations.size(); ++i)
    CHECK_FALSE(ranks_before(result.recommendations[i], result.recommendations[i - 1], lost));
  for (const auto& p : result.recommendations) CHECK(p.memory.verdict != MemoryVerdict::out_of_memory);
  CHECK(result.recommendations.front().wall_clock_s < result.baseline.wall_clock_s);
}

TEST_CASE("simulating in two threads gives the same plans as in one", "[planner][sweep]") {
  SyntheticSpec syn;
  syn.samples = 3000;
  const Corpus c = generate_synthetic(syn);
  RunSpec run;
  run.accumulation = 4;
  run.gpu_memory_gib = 80;
  SweepSpec spec;
  spec.micro_batches = {1, 2, 4};
  const ExactPredictor predictor(1e-4, 1e-8, 0.01, 0.0, 0.001);
  int64_t skipped = 0;
  const auto configs = sweep_configs(c, BatchingSpec{Policy::fixed, 2, 4096, 16, 1, 1}, run, spec, skipped);
  const auto one = simulate_all(c, configs, run, predictor, 1, {});
  const auto two = simulate_all(c, configs, run, predictor, 2, {});
  REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); ++i) CHECK(one[i].wall_clock_s == two[i].wall_clock_s);
}

TEST_CASE("the sm_120 study's width-quadratic form reproduces its sm_120 measurements", "[planner][simulate]") {
  // Seed section A: 2 x 2,048 in 1.776 s, 2 x 8,192 in 11.570 s, 2 x 16,384 in 35.017 s, no padding.
  const WidthQuadraticPredictor seed({3.436e-4, 4.4255e-8, 0.0, 1.094, 0.0, 0.0});
  stepcast::model::MicroBatch b;
  b.rows = {2048, 2048};
  b.width = 2048;
  CHECK(seed.step_s(b) == Approx(1.776).margin(0.003));
  b.rows = {16384, 16384};
  b.width = 16384;
  CHECK(seed.step_s(b) == Approx(35.017).margin(0.003));
  b.rows = {16384, 8192};  // padded: the explicit-mask path, 9.4 % slower (seed section B)
  CHECK(seed.step_s(b) == Approx(35.017 * 1.094).margin(0.01));
}
