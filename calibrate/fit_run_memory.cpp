// The memory terms of a whole run that are not a micro-batch's allocated peak (model/features.hpp kMemoryTermTable,
// forms optimizer_peak, reserved and device), fitted from recorded runs with a `memory` object
// (calibrate/run_records.hpp), and the 90 % interval on a run's allocated peak from held-out runs
// (docs/method.md, "Memory of a run" and "An interval on the peak"):
//   optimizer_transient_scale        median over optimizer steps of (optimizer_peak_gib - the state alive then)
//                                    per GiB of that step's trained parameters (their gradients' GiB)
//   context_gib                      median over runs of the largest device_used_gib - peak_reserved_gib of a
//                                    micro-batch before any allocator retry (the context grows as kernels load)
//   fragmentation_share (and the expandable one, by memory_start.allocator)
//                                    least squares of each micro-batch's peak_reserved_gib against the reserved
//                                    recursion of planner/memory_timeline.hpp replayed on the measured allocated
//                                    memory, up to a run's first allocator retry
//   peak interval                    leave one run out: the peak fit without the run, its micro-batches' measured /
//                                    predicted ratios; the 5th and 95th percentiles of all of them
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "calibrate/fit_parts.hpp"
#include "calibrate/run_costs.hpp"
#include "calibrate/run_records.hpp"

namespace stepcast::calibrate {

namespace {

using model::Term;

std::string number(double v) {
  std::ostringstream o;
  o.precision(4);
  o << v;
  return o.str();
}

Term median_term(const std::vector<double>& samples, double scale, const std::string& what) {
  if (samples.empty()) return {0, 0, false, "not selected: no " + what + " in these records"};
  return {std::max(0.0, median(samples)) / scale, median_std_error(samples) / scale, true,
          "median of " + std::to_string(samples.size()) + " " + what};
}

// --- optimizer step ----------------------------------------------------------------------------------------------

// Each step's excess is divided by its own model's trained fp32 GiB before the median: pooled runs of models whose
// adapters differ tenfold share one scale only per GiB trained.
Term fit_optimizer_transient(const RecordFeatures& maker, const std::vector<RecordedRun>& runs, double fixed_gib) {
  std::vector<double> excess_per_gib;
  for (const RecordedRun& run : runs)
    for (const RunStep& step : run.steps) {
      if (!step.memory || !step.memory->optimizer_peak_gib) continue;
      const model::FeatureMaker& f = maker.of(step.record);
      const model::TrainableGib& t = f.trainable();
      if (t.gradients <= 0) continue;
      excess_per_gib.push_back((*step.memory->optimizer_peak_gib - (f.weights_gib() + t.total() + fixed_gib)) /
                               t.gradients);
    }
  return median_term(excess_per_gib, 1.0, "optimizer steps' peaks over the state alive then, per GiB trained");
}

// --- CUDA context --------------------------------------------------------------------------------------------------

Term fit_context(const std::vector<RecordedRun>& runs) {
  std::vector<double> largest;  // per run
  for (const RecordedRun& run : runs) {
    double most = -1;
    for (const RunStep& step : run.steps) {
      if (!step.memory || !step.memory->device_used_gib || !step.peak_reserved_gib) continue;
      if (step.memory->alloc_retries.value_or(0) > 0) break;  // a release shrank reserved: no longer comparable
      most = std::max(most, *step.memory->device_used_gib - *step.peak_reserved_gib);
    }
    if (most < 0 && run.memory_start && run.memory_start->context_gib) most = *run.memory_start->context_gib;
    if (most >= 0) largest.push_back(most);
  }
  return median_term(largest, 1.0, "runs' largest device_used_gib - peak_reserved_gib (CUDA context and libraries)");
}

// --- fragmentation -------------------------------------------------------------------------------------------------

// One micro-batch of a run as the reserved recursion replays it, from measured allocated memory.
struct ReservedPoint {
  double state_gib = 0;        // allocated before it, plus the persistent segments' rounding measured at the start
  double working_set_gib = 0;  // its allocated peak less the state
  double floor_gib = 0;        // reserved already measured before it (the start, an optimizer step)
  double measured_gib = 0;     // its peak_reserved_gib
  bool first = false;          // a run's first micro-batch: the recursion starts again
};

std::vector<ReservedPoint> reserved_points(const std::vector<RecordedRun>& runs, model::Allocator allocator) {
  std::vector<ReservedPoint> points;
  for (const RecordedRun& run : runs) {
    const model::Allocator a = run.memory_start ? run.memory_start->allocator : model::Allocator::caching;
    if (a != allocator || run.steps.empty()) continue;
    const auto& m0 = run.steps.front().memory;
    if (!m0 || !m0->allocated_before_gib || !m0->reserved_before_gib) continue;
    const double rounding = *m0->reserved_before_gib - *m0->allocated_before_gib;
    double floor = *m0->reserved_before_gib;
    bool first = true;
    for (const RunStep& step : run.steps) {
      const auto& m = step.memory;
      if (!m || !m->allocated_before_gib || !step.record.usable_peak() || !step.peak_reserved_gib) break;
      if (m->alloc_retries.value_or(0) > 0) break;  // the allocator released its cache: the recursion ends here
      points.push_back({*m->allocated_before_gib + rounding, *step.record.peak_gib - *m->allocated_before_gib, floor,
                        *step.peak_reserved_gib, first});
      first = false;
      floor = std::max(floor, m->optimizer_reserved_gib.value_or(0));
    }
  }
  return points;
}

// The reserved recursion of planner/memory_timeline.hpp (MemoryTimeline::reserve) with share f.
double reserved_rss(const std::vector<ReservedPoint>& points, double f) {
  double rss = 0, reserved = 0, largest = 0;
  for (const ReservedPoint& p : points) {
    if (p.first) reserved = largest = 0;
    double need = p.state_gib + p.working_set_gib;
    if (p.working_set_gib > largest) {
      need += f * largest;
      largest = p.working_set_gib;
    }
    reserved = std::max({reserved, need, p.floor_gib});
    rss += (reserved - p.measured_gib) * (reserved - p.measured_gib);
  }
  return rss;
}

// True when some micro-batch's working set exceeds an earlier one of its run: only then does f change anything.
bool share_identified(const std::vector<ReservedPoint>& points) {
  double largest = 0;
  for (const ReservedPoint& p : points) {
    if (p.first) largest = 0;
    if (p.working_set_gib > largest && largest > 0) return true;
    largest = std::max(largest, p.working_set_gib);
  }
  return false;
}

Term fit_fragmentation(const std::vector<RecordedRun>& runs, model::Allocator allocator) {
  const std::vector<ReservedPoint> points = reserved_points(runs, allocator);
  const std::string mode = model::allocator_name(allocator) + " allocator";
  if (points.size() < 2) return {0, 0, false, "not selected: no run under the " + mode + " records reserved memory"};
  if (!share_identified(points))
    return {0, 0, false, "not selected: no micro-batch under the " + mode + " outgrows an earlier one (nothing to fit)"};
  // One parameter on [0, 4]: a grid of 0.001, then a golden-section refinement around the best point.
  constexpr double kMaxShare = 4.0;
  double best = 0, best_rss = reserved_rss(points, 0);
  for (int i = 1; i <= 4000; ++i) {
    const double f = kMaxShare * i / 4000.0;
    const double rss = reserved_rss(points, f);
    if (rss < best_rss) best_rss = rss, best = f;
  }
  double lo = std::max(0.0, best - 0.001), hi = std::min(kMaxShare, best + 0.001);
  for (int i = 0; i < 60; ++i) {
    const double a = hi - 0.618 * (hi - lo), b = lo + 0.618 * (hi - lo);
    if (reserved_rss(points, a) < reserved_rss(points, b)) {
      hi = b;
    } else {
      lo = a;
    }
  }
  best = 0.5 * (lo + hi);
  best_rss = reserved_rss(points, best);
  // Standard error from the curvature of the residual sum of squares: se^2 = 2 sigma^2 / RSS''.
  const double h = 0.01;
  const double curvature = (reserved_rss(points, best + h) - 2 * best_rss + reserved_rss(points, std::max(0.0, best - h))) / (h * h);
  const double sigma2 = best_rss / static_cast<double>(points.size() - 1);
  const double se = curvature > 0 ? std::sqrt(2 * sigma2 / curvature) : 0;
  return {best, se, true,
          "least squares over " + std::to_string(points.size()) + " micro-batches' peak_reserved_gib (" + mode +
              "), RMS " + number(std::sqrt(best_rss / static_cast<double>(points.size()))) + " GiB"};
}

// --- interval on the allocated peak --------------------------------------------------------------------------------

std::string run_key(const Record& r) {
  const auto run = r.extra.find("run");
  if (r.extra.value("probe", "") != "run" || run == r.extra.end() || !run->is_object()) return "";
  return r.file + "\n" + run->value("id", "");
}

// measured / predicted of every micro-batch of run `key`, the peak refitted without it.
std::vector<double> held_out_ratios(const RecordFeatures& maker, const std::vector<Record>& records, const std::string& key,
                                    const FitOptions& o) {
  std::vector<Record> rest;
  for (const Record& r : records)
    if (run_key(r) != key) rest.push_back(r);
  FitReport fold;
  fit_peak(maker, rest, o, fold);
  std::vector<double> ratios;
  for (const Record& r : records) {
    if (run_key(r) != key || !r.usable_peak()) continue;
    const model::MemoryFeatures y = maker.of(r).memory(to_batch(r), run_position(r));
    double predicted = y.base_gib;
    for (int j = 0; j < model::kMemoryTerms; ++j)
      if (fold.coefficients.memory[j].selected) predicted += fold.coefficients.memory[j].value * y.y[j];
    if (predicted > 0) ratios.push_back(*r.peak_gib / predicted);
  }
  return ratios;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<size_t>(std::floor(at));
  return i + 1 < v.size() ? v[i] + (at - static_cast<double>(i)) * (v[i + 1] - v[i]) : v[i];
}

// [low, high] of measured / predicted: the 5th and 95th percentiles of at least 10 ratios, else mean -+ 1.645 sd.
std::pair<double, double> ratio_interval(const std::vector<double>& ratios) {
  if (ratios.size() >= 10) return {quantile(ratios, 0.05), quantile(ratios, 0.95)};
  double mean = 0, var = 0;
  for (double r : ratios) mean += r / static_cast<double>(ratios.size());
  for (double r : ratios) var += (r - mean) * (r - mean) / static_cast<double>(ratios.size() - 1);
  return {mean - 1.645 * std::sqrt(var), mean + 1.645 * std::sqrt(var)};
}

std::optional<model::PeakInterval> peak_interval(const RecordFeatures& maker, const std::vector<Record>& records,
                                                 const FitOptions& o, std::vector<std::string>& notes) {
  std::vector<std::string> keys;
  for (const Record& r : records) {
    const std::string key = run_key(r);
    if (!key.empty() && r.usable_peak() && std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  if (keys.size() == 1) {
    notes.push_back("peak interval: " + std::to_string(keys.size()) +
                    " recorded run with peaks; at least 2 are needed to hold one out (no interval written)");
    return std::nullopt;
  }
  if (keys.empty()) return std::nullopt;
  std::map<std::string, std::vector<double>> by_run;
  std::vector<double> all;
  for (const std::string& key : keys) {
    by_run[key] = held_out_ratios(maker, records, key, o);
    all.insert(all.end(), by_run[key].begin(), by_run[key].end());
  }
  if (all.size() < 3) return std::nullopt;
  model::PeakInterval p;
  std::tie(p.low, p.high) = ratio_interval(all);
  p.low = std::min(p.low, 1.0);  // the interval holds the point estimate
  p.high = std::max(p.high, 1.0);
  p.points = static_cast<int64_t>(all.size());
  p.runs = static_cast<int64_t>(keys.size());
  // Coverage: each run's ratios against the interval the other runs' ratios give (at least 3 runs).
  if (keys.size() >= 3) {
    int64_t inside = 0, total = 0;
    for (const std::string& key : keys) {
      std::vector<double> others;
      for (const auto& [k, v] : by_run)
        if (k != key) others.insert(others.end(), v.begin(), v.end());
      if (others.size() < 3) continue;
      const auto [lo, hi] = ratio_interval(others);
      for (double r : by_run[key]) inside += (r >= std::min(lo, 1.0) && r <= std::max(hi, 1.0)) ? 1 : 0;
      total += static_cast<int64_t>(by_run[key].size());
    }
    if (total > 0) p.coverage = static_cast<double>(inside) / static_cast<double>(total);
  }
  p.source = "leave one run out: measured / predicted allocated peak of " + std::to_string(p.points) +
             " micro-batches of " + std::to_string(p.runs) + " recorded runs, the peak refitted without each run";
  char range[64];
  std::snprintf(range, sizeof range, "%.5f - %.5f", p.low, p.high);
  notes.push_back("peak interval: " + std::string(range) + " x the predicted peak (" + p.source +
                  (p.coverage >= 0 ? "; coverage " + number(100 * p.coverage) + " % of held-out micro-batches" : "") + ")");
  return p;
}

}  // namespace

void fit_run_memory(const RecordFeatures& maker, const std::vector<Record>& records, const FitOptions& o,
                    FitReport& report) {
  auto& memory = report.coefficients.memory;
  const std::vector<RecordedRun> runs = read_runs(records, o.records_file);
  const double fixed = memory[model::kMemFixed].selected ? memory[model::kMemFixed].value : 0.0;
  memory[model::kMemOptimizerTransient] = fit_optimizer_transient(maker, runs, fixed);
  memory[model::kMemContext] = fit_context(runs);
  memory[model::kMemFragmentation] = fit_fragmentation(runs, model::Allocator::caching);
  memory[model::kMemExpandableFragmentation] = fit_fragmentation(runs, model::Allocator::expandable_segments);
  report.coefficients.peak_interval = peak_interval(maker, records, o, report.notes);
}

}  // namespace stepcast::calibrate
