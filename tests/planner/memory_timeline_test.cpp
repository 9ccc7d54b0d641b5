// The run's memory timeline (planner/memory_timeline.hpp) on runs computed by hand: the state alive at each
// micro-batch (AdamW's states only after the first optimizer step), the run-only and first-seen bytes, the
// optimizer step, later epochs, the reserved recursion with its fragmentation share and cache releases, and the
// verdict with its interval and margin.
#include "catch.hpp"
#include "exact_predictor.hpp"
#include "planner/memory_timeline.hpp"
#include "planner/simulate.hpp"

using namespace stepcast::planner;
using stepcast::model::MicroBatch;
using stepcast::model::RunMemory;

namespace {

// weights 10, adapters 0.5, gradients 0.5, AdamW 1.0, fixed 0.1 GiB: state 11.1 before the first step, 12.1 after.
RunMemory hand_run() {
  RunMemory r;
  r.itemised = true;
  r.weights_gib = 10;
  r.trainable_gib = 0.5;
  r.gradients_gib = 0.5;
  r.optimizer_state_gib = 1.0;
  r.fixed_gib = 0.1;
  r.optimizer_transient_gib = 0.3;
  r.optimizer_transient_known = true;
  r.persistent_rounding_gib = 0.2;
  r.fragmentation_share = 0.5;
  r.fragmentation_known = true;
  r.context_gib = 0.4;
  r.context_known = true;
  r.interval = stepcast::model::PeakInterval{0.98, 1.05, 40, 4, 0.9, "hand-made"};
  return r;
}

MicroBatch one_row(int64_t width) {
  MicroBatch b;
  b.rows = {width};
  b.width = width;
  return b;
}

// step 0.001, run 0.0001, first-seen 0.0002 GiB per processed token
const stepcast::testing::RunMemoryPredictor kPredictor(0.001, 0.0001, 0.0002, hand_run());

MemoryTimeline replay(const std::vector<int64_t>& widths, int64_t epochs, double usable) {
  MemoryTimeline t(kPredictor.run_memory(stepcast::model::Allocator::caching), 2, epochs, usable);
  std::vector<int64_t> seen;
  for (size_t i = 0; i < widths.size(); ++i) {
    const bool first = std::find(seen.begin(), seen.end(), widths[i]) == seen.end();
    seen.push_back(widths[i]);
    const MicroBatch b = one_row(widths[i]);
    t.add(b, kPredictor.memory_parts(b), first);
    if ((i + 1) % 2 == 0 || i + 1 == widths.size()) t.optimizer_step();
  }
  return t;
}

double gib_of(const MemoryPeak& p, const std::string& name) {
  for (const auto& item : p.live)
    if (item.name == name) return static_cast<double>(item.bytes) / 1073741824.0;
  return -1;
}

}  // namespace

TEST_CASE("the timeline adds up a run's allocated memory micro-batch by micro-batch", "[planner][memory]") {
  // 1000, 3000 | step | 2000, 3000 | step, accumulation 2:
  //   0: 11.1 + 1.0 + 0.1 + 0.2 (new) = 12.4      1: 11.1 + 3.0 + 0.3 + 0.6 (new) = 15.0
  //   step: 12.1 + 0.3 = 12.4                    2: 12.1 + 2.0 + 0.2 + 0.4 (new) = 14.7
  //   3: 12.1 + 3.0 + 0.3 (met before) = 15.4: the peak, in the second window, AdamW's states alive
  const MemoryTimeline t = replay({1000, 3000, 2000, 3000}, 1, 100);
  const MemoryPeak p = t.peak();
  CHECK(p.allocated_gib == Approx(15.4));
  CHECK_FALSE(p.at_optimizer_step);
  CHECK(p.micro_batch == 3);
  CHECK(p.step == 1);
  CHECK(p.width == 3000);
  CHECK(gib_of(p, "weights") == Approx(10).epsilon(1e-6));
  CHECK(gib_of(p, "adamw_states") == Approx(1.0).epsilon(1e-6));
  CHECK(gib_of(p, "gradients") == Approx(0.5).epsilon(1e-6));
  CHECK(gib_of(p, "activations_logits_masks") == Approx(3.0).epsilon(1e-6));
  CHECK(gib_of(p, "run_only_bytes") == Approx(0.3).epsilon(1e-6));
  CHECK(gib_of(p, "first_seen_shape_bytes") == -1);  // the shape was met before
  double live = 0;
  for (const auto& item : p.live) live += static_cast<double>(item.bytes) / 1073741824.0;
  CHECK(live == Approx(p.allocated_gib).epsilon(1e-6));
  // Reserved: 11.3 at the start; micro-batch 0 needs 11.3 + 1.3; micro-batch 1 outgrows it: 11.3 + 3.9 + 0.5 x 1.3.
  CHECK(t.reserved_peak_gib() == Approx(15.85));
  CHECK(t.cache_releases() == 0);
}

TEST_CASE("the first window has no AdamW states, a later epoch has them from its first micro-batch", "[planner][memory]") {
  // 3000 first: 11.1 + 3.9 = 15.0 in the first pass; the second pass's micro-batch 0 has AdamW's states and has
  // met its shape: 12.1 + 3.3 = 15.4.
  const std::vector<int64_t> widths{3000, 1000, 2000, 2000};
  CHECK(replay(widths, 1, 100).peak().allocated_gib == Approx(15.0));
  const MemoryPeak later = replay(widths, 2, 100).peak();
  CHECK(later.allocated_gib == Approx(15.4));
  CHECK(later.later_epoch);
  CHECK(later.micro_batch == 0);
}

TEST_CASE("the optimizer step can be the peak", "[planner][memory]") {
  RunMemory run = hand_run();
  run.optimizer_transient_gib = 10;  // clip + AdamW temporaries larger than any micro-batch
  MemoryTimeline t(run, 2, 1, 100);
  const MicroBatch b = one_row(1000);
  t.add(b, kPredictor.memory_parts(b), true);
  t.add(b, kPredictor.memory_parts(b), false);
  t.optimizer_step();
  const MemoryPeak p = t.peak();
  CHECK(p.at_optimizer_step);
  CHECK(p.allocated_gib == Approx(12.1 + 10));
  CHECK(p.micro_batch == 1);
  CHECK(gib_of(p, "optimizer_temporaries") == Approx(10).epsilon(1e-6));
}

TEST_CASE("a sharded rank's optimizer step: its shards' temporaries, the strategy's change applied", "[planner][memory]") {
  RunMemory run = hand_run();
  run.optimizer_transient_gib = 16;
  MemoryTimeline t(run, 2, 1, 100);
  const MicroBatch b = one_row(1000);
  t.add(b, kPredictor.memory_parts(b), true, -2.0);
  t.add(b, kPredictor.memory_parts(b), false, -2.0);
  // FSDP over 8 ranks: an eighth of the temporaries, 3 GiB of states and weights sharded away.
  t.optimizer_step(-3.0, 1.0 / 8);
  const MemoryPeak p = t.peak();
  REQUIRE(p.at_optimizer_step);
  CHECK(p.allocated_gib == Approx(12.1 + 2 - 3));
  CHECK(gib_of(p, "optimizer_temporaries") == Approx(2).epsilon(1e-6));
  CHECK(gib_of(p, "parallel_strategy_change") == Approx(-3).epsilon(1e-6));
}

TEST_CASE("reserved past what the card gives: the allocator releases its cache", "[planner][memory]") {
  // usable 15.6: micro-batch 1's 15.85 does not fit; the allocator frees its cache and retries.
  const MemoryTimeline t = replay({1000, 3000, 2000, 3000}, 1, 15.6);
  CHECK(t.cache_releases() == 1);
  CHECK(t.reserved_peak_gib() == Approx(15.6));
}

TEST_CASE("the verdict: fits at the upper bound, at risk at the point estimate only, OOM", "[planner][memory]") {
  const RunMemory run = hand_run();
  // need = 15.4 + 0.2 rounding = 15.6; at the interval's high end 15.6 + 0.05 x 15.4 = 16.37.
  const MemoryJudgement roomy = judge_memory(15.4, 15.85, 0, run, 100);
  CHECK(roomy.verdict == MemoryVerdict::fits);
  CHECK(roomy.usable_gib == Approx(99.6));
  CHECK(*roomy.peak_low_gib == Approx(15.4 * 0.98));
  CHECK(*roomy.peak_high_gib == Approx(15.4 * 1.05));
  CHECK(roomy.need_high_gib == Approx(16.37));
  CHECK(roomy.margin_gib == Approx(99.6 - 16.37));
  const MemoryJudgement tight = judge_memory(15.4, 15.6, 1, run, 16.2);  // usable 15.8: 15.6 fits, 16.37 does not
  CHECK(tight.verdict == MemoryVerdict::at_risk);
  CHECK(tight.margin_gib == Approx(15.8 - 16.37));
  REQUIRE(tight.risks.size() == 2);
  // The reserved memory's retry first: the headline shows it (docs/planner.md, "Memory": a run that ran out so).
  CHECK_THAT(tight.risks[0], Catch::Matchers::Contains("frees its cache"));
  CHECK_THAT(tight.risks[1], Catch::Matchers::Contains("fits at the point estimate only"));
  CHECK(judge_memory(15.4, 15.6, 0, run, 15.9).verdict == MemoryVerdict::out_of_memory);  // usable 15.5 < 15.6
  // Without a measured interval or context a plan is at risk whatever its margin.
  RunMemory unmeasured = run;
  unmeasured.interval.reset();
  unmeasured.context_known = false;
  const MemoryJudgement unknown = judge_memory(15.4, 15.85, 0, unmeasured, 100);
  CHECK(unknown.verdict == MemoryVerdict::at_risk);
  CHECK(unknown.usable_gib == Approx(100));
  CHECK(unknown.risks.size() == 2);
}

TEST_CASE("simulate reports the run's peak, where it is and the first micro-batch that does not fit", "[planner][memory]") {
  Corpus c;
  c.lengths = {1000, 3000, 2000, 3000};
  RunSpec run;
  run.accumulation = 2;
  run.gpu_memory_gib = 15.9;  // usable 15.5: micro-batch 2 (3000 tokens, 15.0 + 0.2) fits, micro-batch 4 (15.4 + 0.2) not
  const BatchingSpec fixed_order{Policy::pad_to_longest, 1, 4096, 64, 0, 1};
  const PlanResult p = simulate(c, fixed_order, run, kPredictor);
  CHECK(p.peak_gib == Approx(15.4));
  CHECK(p.memory_peak.micro_batch == 3);
  CHECK(p.memory.verdict == MemoryVerdict::out_of_memory);
  REQUIRE(p.oom.has_value());
  CHECK(p.oom->micro_batch == 4);
  CHECK(p.oom->step == 2);
  CHECK(p.oom->limit_gib == Approx(15.5));
  run.gpu_memory_gib = 100;
  const PlanResult fits = simulate(c, fixed_order, run, kPredictor);
  CHECK(fits.memory.verdict == MemoryVerdict::fits);
  CHECK(fits.fits_memory);
  CHECK(fits.reserved_peak_gib == Approx(15.85));
}
