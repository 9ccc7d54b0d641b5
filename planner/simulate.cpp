#include "planner/simulate.hpp"

#include <cmath>

namespace stepcast::planner {

BatchCosts evaluate(const Schedule& schedule, const model::StepPredictor& predictor, const RunSpec& run,
                    int64_t max_points) {
  BatchCosts c;
  c.run_memory = predictor.run_memory(run.allocator);
  const model::RunMemory& memory = c.run_memory;
  const double limit = run.memory_limit_gib();
  const double usable = limit - (memory.context_known ? memory.context_gib : 0.0);
  const double rounding = memory.itemised ? memory.persistent_rounding_gib : 0.0;
  MemoryTimeline timeline(memory, run.accumulation, run.epochs, usable);
  model::MicroBatch batch;
  RunCharger charger(predictor, run.cold_cache);
  const int64_t n = schedule.num_batches();
  const int64_t stride = max_points > 0 ? std::max<int64_t>(1, n / max_points) : 0;
  const int64_t accumulation = std::max<int64_t>(1, run.accumulation);
  for (int64_t b = 0; b < n; ++b) {
    schedule.fill(b, batch);
    const BatchCharge charge = charger.next(batch);
    const double step_s = charge.step_s;
    const double peak_gib = timeline.add(batch, predictor.memory_parts(batch), charge.new_shape);
    if ((b + 1) % accumulation == 0 || b + 1 == n) timeline.optimizer_step();
    c.compute_s += step_s;
    c.first_seen_s += charge.first_seen_s;
    c.run_start_s += charge.run_start_s;
    c.compile_s += charge.compile_s;
    c.host_bound += charge.host_bound ? 1 : 0;
    if (c.first_oom_batch < 0 && limit > 0 && peak_gib + rounding > usable) {
      c.first_oom_batch = b;
      c.first_oom_peak_gib = peak_gib;
    }
    if (stride > 0 && b % stride == 0 && static_cast<int64_t>(c.points.size()) < max_points)
      c.points.push_back({batch.num_rows(), batch.width, batch.real_tokens(), step_s, peak_gib});
  }
  c.distinct_shapes = charger.distinct_shapes();
  c.compile_classes = charger.compiled_classes();
  c.memory_peak = timeline.peak();
  c.peak_gib = c.memory_peak.allocated_gib;
  c.peak_batch = c.memory_peak.micro_batch;
  c.reserved_peak_gib = timeline.reserved_peak_gib();
  c.cache_releases = timeline.cache_releases();
  return c;
}

double roots_per_window(const Corpus& corpus, const Schedule& schedule, int64_t accumulation) {
  if (!corpus.has_roots() || schedule.num_batches() == 0) return -1;
  std::vector<int64_t> last_window(static_cast<size_t>(corpus.num_roots), -1);
  int64_t distinct = 0, windows = 0;
  for (int64_t b = 0; b < schedule.num_batches(); ++b) {
    const int64_t window = b / accumulation;
    windows = window + 1;
    const auto s0 = schedule.batch_sample_begin[static_cast<size_t>(b)];
    const auto s1 = schedule.batch_sample_begin[static_cast<size_t>(b) + 1];
    for (int64_t s = s0; s < s1; ++s) {
      const auto root = static_cast<size_t>(corpus.roots[static_cast<size_t>(schedule.sample_order[static_cast<size_t>(s)])]);
      if (last_window[root] != window) {
        last_window[root] = window;
        ++distinct;
      }
    }
  }
  return static_cast<double>(distinct) / static_cast<double>(windows);
}

PlanResult assemble(const Corpus& corpus, const Schedule& schedule, const BatchingSpec& batching,
                    const BatchCosts& costs, const RunSpec& run, const OptimizerStep& optimizer) {
  PlanResult p;
  p.batching = batching;
  p.accumulation = run.accumulation;
  p.epochs = run.epochs;
  p.samples = schedule.samples;
  p.micro_batches = schedule.num_batches() * run.epochs;
  p.steps = optimizer_steps(p.micro_batches, run.accumulation);
  p.real_tokens = schedule.real_tokens;
  p.processed_tokens = schedule.processed_tokens;
  p.kept_tokens = schedule.kept_tokens;
  p.tokens_per_step = p.steps > 0 ? (schedule.real_tokens * run.epochs + p.steps / 2) / p.steps : 0;
  p.padding_fraction = schedule.padding_fraction();
  p.truncated = schedule.truncated;
  p.compute_s = costs.compute_s * static_cast<double>(run.epochs);
  p.first_seen_s = costs.first_seen_s;  // later epochs meet no new shape
  p.run_start_s = costs.run_start_s;
  p.distinct_shapes = costs.distinct_shapes;
  p.compile_s = costs.compile_s;  // a machine compiles once
  p.compile_classes = costs.compile_classes;
  p.host_bound_micro_batches = costs.host_bound * run.epochs;
  p.optimizer = optimizer;
  p.optimizer_s = static_cast<double>(p.steps) * optimizer.step_s;
  if (run.checkpoint_every_steps > 0)
    p.checkpoint_s = static_cast<double>(p.steps / run.checkpoint_every_steps) * run.checkpoint_save_s;
  if (run.eval_every_steps > 0) p.eval_s = static_cast<double>(p.steps / run.eval_every_steps) * run.eval_s;
  p.startup_s = run.startup_s;
  p.wall_clock_s = p.startup_s + p.compute_s + p.first_seen_s + p.run_start_s + p.compile_s + p.optimizer_s +
                   p.checkpoint_s + p.eval_s;
  p.peak_gib = costs.peak_gib;
  p.memory_limit_gib = run.memory_limit_gib();
  p.memory_peak = costs.memory_peak;
  p.reserved_peak_gib = costs.reserved_peak_gib;
  p.cache_releases = costs.cache_releases;
  p.allocator = run.allocator;
  p.memory = judge_memory(costs.peak_gib, costs.reserved_peak_gib, costs.cache_releases, costs.run_memory,
                          p.memory_limit_gib);
  p.fits_memory = p.memory.verdict == MemoryVerdict::fits;
  if (costs.first_oom_batch >= 0) {
    const auto b = static_cast<size_t>(costs.first_oom_batch);
    p.oom = OutOfMemory{costs.first_oom_batch + 1, costs.first_oom_batch / run.accumulation + 1,
                        schedule.batch_row_begin[b + 1] - schedule.batch_row_begin[b], schedule.batch_width[b],
                        costs.first_oom_peak_gib, p.memory.usable_gib};
  }
  p.fits_window = run.window_hours <= 0 || p.wall_clock_s <= run.window_hours * 3600.0;
  p.roots_per_window = roots_per_window(corpus, schedule, run.accumulation);
  return p;
}

PlanResult simulate(const Corpus& corpus, const BatchingSpec& batching, const RunSpec& run,
                    const model::StepPredictor& predictor) {
  const Schedule schedule = build_schedule(corpus, batching, run.accumulation);
  const BatchCosts costs = evaluate(schedule, predictor, run);
  return assemble(corpus, schedule, batching, costs, run, resolve_optimizer_step(run.optimizer_step_s, predictor));
}

}  // namespace stepcast::planner
