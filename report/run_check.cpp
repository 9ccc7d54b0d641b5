#include "report/run_check.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "model/intervals.hpp"
#include "report/format.hpp"
#include "planner/batching.hpp"
#include "planner/simulate.hpp"
#include "planner/memory_timeline.hpp"
#include "planner/timeline.hpp"

namespace stepcast::report {
namespace {

std::vector<model::MicroBatch> recorded_batches(const calibrate::RecordedRun& run) {
  std::vector<model::MicroBatch> batches;
  for (const auto& step : run.steps) batches.push_back(calibrate::run_batch(run, step));
  return batches;
}

// The planner's own prediction of the run from its corpus, and whether its micro-batches are the recorded ones.
void plan_from_corpus(const calibrate::RecordedRun& run, const model::StepModel& model, RunCheck& check) {
  const auto policy = planner::parse_policy(run.policy);
  if (!policy || run.corpus_lengths.empty() || run.max_length <= 0) return;
  planner::Corpus corpus;
  corpus.lengths = run.corpus_lengths;
  planner::BatchingSpec spec;
  spec.policy = *policy;
  spec.micro_batch = run.micro_batch;
  spec.max_length = run.max_length;
  spec.pad_to_multiple_of = run.pad_to_multiple_of;
  spec.seed = run.seed;
  if (run.pack_attention) spec.pack_attention = *run.pack_attention;
  if (const auto packer = planner::parse_packer(run.packer)) spec.packer = *packer;
  planner::RunSpec run_spec;
  run_spec.accumulation = run.accumulation;
  run_spec.gpu_memory_gib = 1e9;  // memory is not what is checked here
  check.planned_s = planner::simulate(corpus, spec, run_spec, model).wall_clock_s;
  const planner::Schedule schedule = planner::build_schedule(corpus, spec);
  std::vector<std::pair<std::vector<int64_t>, int64_t>> planned, recorded;
  model::MicroBatch b;
  for (int64_t i = 0; i < schedule.num_batches(); ++i) {
    schedule.fill(i, b);
    std::vector<int64_t> rows = b.rows;
    std::sort(rows.begin(), rows.end());
    planned.emplace_back(rows, b.width);
  }
  for (const auto& step : run.steps) {
    std::vector<int64_t> rows = step.record.rows;
    std::sort(rows.begin(), rows.end());
    recorded.emplace_back(rows, step.record.width);
  }
  std::sort(planned.begin(), planned.end());
  std::sort(recorded.begin(), recorded.end());
  check.planned_batches_match = planned == recorded;
}

// The allocated peak the run measured: its micro-batches' peak_gib and its optimizer steps' optimizer_peak_gib.
void measured_peaks(const calibrate::RecordedRun& run, RunMemoryCheck& m) {
  m.measured_peak_gib = -1;
  for (size_t i = 0; i < run.steps.size(); ++i) {
    const auto& step = run.steps[i];
    if (step.record.usable_peak() && *step.record.peak_gib > m.measured_peak_gib)
      m.measured_peak_gib = *step.record.peak_gib, m.measured_at = static_cast<int64_t>(i), m.measured_at_optimizer = false;
    if (step.memory && step.memory->optimizer_peak_gib && *step.memory->optimizer_peak_gib > m.measured_peak_gib)
      m.measured_peak_gib = *step.memory->optimizer_peak_gib, m.measured_at = static_cast<int64_t>(i),
      m.measured_at_optimizer = true;
    for (const auto& r : {step.peak_reserved_gib, step.memory ? step.memory->optimizer_reserved_gib : std::nullopt})
      if (r) m.measured_reserved_gib = std::max(m.measured_reserved_gib.value_or(0), *r);
  }
}

std::optional<RunMemoryCheck> check_memory(const calibrate::RecordedRun& run, const std::vector<model::MicroBatch>& batches,
                                           const model::StepModel& model) {
  if (std::none_of(run.steps.begin(), run.steps.end(), [](const auto& s) { return s.record.usable_peak(); })) return std::nullopt;
  RunMemoryCheck m;
  const model::Allocator allocator = run.memory_start ? run.memory_start->allocator : model::Allocator::caching;
  m.allocator = model::allocator_name(allocator);
  const model::RunMemory memory = model.run_memory(allocator);
  planner::MemoryTimeline timeline(memory, run.accumulation, 1, 0);
  double sum_abs = 0, sum_missing = 0, sum_missing_kib = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& step = run.steps[i];
    const double predicted = timeline.add(batches[i], model.memory_parts(batches[i]), step.first_seen);
    if (step.optimizer_s || i + 1 == batches.size()) timeline.optimizer_step();
    if (!step.record.usable_peak()) continue;
    const double miss = *step.record.peak_gib - predicted;
    const double err = std::abs(predicted / *step.record.peak_gib - 1.0);
    ++m.micro_batches;
    m.ratios.push_back(*step.record.peak_gib / predicted);
    sum_abs += err;
    sum_missing += miss;
    sum_missing_kib += miss * 1048576.0 / static_cast<double>(batches[i].padded_tokens());
    if (err > m.micro_batch_max_abs) m.micro_batch_max_abs = err, m.micro_batch_max_index = static_cast<int64_t>(i);
  }
  const auto n = static_cast<double>(std::max<int64_t>(1, m.micro_batches));
  m.micro_batch_mape = sum_abs / n;
  m.missing_gib = sum_missing / n;
  m.missing_kib_per_token = sum_missing_kib / n;
  const planner::MemoryPeak peak = timeline.peak();
  m.predicted_peak_gib = peak.allocated_gib;
  m.predicted_at = peak.micro_batch;
  m.predicted_at_optimizer = peak.at_optimizer_step;
  m.predicted_reserved_gib = timeline.reserved_peak_gib();
  if (memory.interval) {
    m.interval_low_gib = peak.allocated_gib * memory.interval->low;
    m.interval_high_gib = peak.allocated_gib * memory.interval->high;
  }
  measured_peaks(run, m);
  return m;
}

RunCheck check_run(const calibrate::RecordedRun& run, const model::StepModel& model) {
  RunCheck c;
  c.id = run.id;
  c.policy = run.policy;
  c.micro_batches = static_cast<int64_t>(run.steps.size());
  c.measured_s = run.total_s();
  const auto batches = recorded_batches(run);
  const planner::Timeline t = planner::predict_timeline(batches, run.accumulation, model, std::nullopt);
  c.predicted_s = t.wall_clock_s;
  c.predicted_first_seen_s = t.first_seen_s;
  c.predicted_optimizer_s = t.optimizer_s;
  c.predicted_run_start_s = t.run_start_s;
  c.distinct_shapes = t.distinct_shapes;
  double sum = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& e = t.batches[i];
    const auto& step = run.steps[i];
    const double measured = *step.record.step_s + step.optimizer_s.value_or(0);
    c.accounted_s += measured;
    const double predicted = e.step_s + e.first_seen_s + e.run_start_s + e.optimizer_s;
    const double err = std::abs(predicted / measured - 1.0);
    sum += err;
    if (err > c.batch_max_abs) {
      c.batch_max_abs = err;
      c.batch_max_index = static_cast<int64_t>(i);
    }
    if (e.host_bound) ++c.host_bound;
    c.padded = c.padded || batches[i].has_padding();
    if (jit_cache_growth(step.record) > 0) {
      ++c.jit_batches;
      c.jit_excess_s += measured - predicted;
    }
  }
  c.batch_mape = batches.empty() ? 0 : sum / static_cast<double>(batches.size());
  plan_from_corpus(run, model, c);
  c.memory = check_memory(run, batches, model);
  return c;
}

bool same_corpus(const calibrate::RecordedRun& a, const calibrate::RecordedRun& b) {
  return !a.corpus_lengths.empty() && a.corpus_lengths == b.corpus_lengths && a.micro_batch == b.micro_batch &&
         a.accumulation == b.accumulation && a.policy != b.policy;
}

double quantile_of(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<size_t>(at);
  return i + 1 < v.size() ? v[i] + (at - static_cast<double>(i)) * (v[i + 1] - v[i]) : v[i];
}

std::optional<MemorySummary> summarize_memory(const std::vector<RunCheck>& runs, const model::StepModel& model) {
  std::vector<double> ratios;
  for (const auto& r : runs)
    if (r.memory) ratios.insert(ratios.end(), r.memory->ratios.begin(), r.memory->ratios.end());
  if (ratios.empty()) return std::nullopt;
  MemorySummary s;
  s.micro_batches = static_cast<int64_t>(ratios.size());
  s.ratio_p05 = quantile_of(ratios, 0.05);
  s.ratio_p50 = quantile_of(ratios, 0.50);
  s.ratio_p95 = quantile_of(ratios, 0.95);
  if (const auto& i = model.coefficients().peak_interval) {
    s.interval_low = i->low;
    s.interval_high = i->high;
    for (double r : ratios) s.inside += (r >= i->low && r <= i->high) ? 1 : 0;
  }
  return s;
}

}  // namespace

std::optional<bool> RunCheck::inside_interval() const {
  if (!wall_clock_half_width) return std::nullopt;
  return model::ratio_error(measured_s, predicted_s) <= *wall_clock_half_width;
}

int64_t jit_cache_growth(const calibrate::Record& r) {
  const auto it = r.extra.find("jit_cache_files_added");
  return it != r.extra.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

RunValidation check_runs(const std::vector<calibrate::RecordedRun>& runs, const model::StepModel& model) {
  RunValidation v;
  for (const auto& run : runs) v.runs.push_back(check_run(run, model));
  v.memory = summarize_memory(v.runs, model);
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t j = i + 1; j < runs.size(); ++j) {
      if (!same_corpus(runs[i], runs[j])) continue;
      const RunCheck& a = v.runs[i];
      const RunCheck& b = v.runs[j];
      SavingCheck s{a.id, b.id, 1.0 - b.measured_s / a.measured_s, 1.0 - b.predicted_s / a.predicted_s, std::nullopt};
      if (a.planned_s && b.planned_s) s.planned = 1.0 - *b.planned_s / *a.planned_s;
      v.savings.push_back(s);
    }
  return v;
}

namespace {

nlohmann::json memory_check_json(const RunMemoryCheck& m) {
  auto at = [](int64_t i, bool optimizer) {
    return nlohmann::json{{"micro_batch", i}, {"kind", optimizer ? "optimizer_step" : "micro_batch"}};
  };
  nlohmann::json j{{"allocator", m.allocator},
                   {"measured_peak_gib", m.measured_peak_gib},
                   {"predicted_peak_gib", m.predicted_peak_gib},
                   {"error_rel", m.error_rel()},
                   {"measured_at", at(m.measured_at, m.measured_at_optimizer)},
                   {"predicted_at", at(m.predicted_at, m.predicted_at_optimizer)},
                   {"predicted_reserved_gib", m.predicted_reserved_gib},
                   {"micro_batches", m.micro_batches},
                   {"micro_batch_mape", m.micro_batch_mape},
                   {"micro_batch_max_abs_error", m.micro_batch_max_abs},
                   {"micro_batch_max_index", m.micro_batch_max_index},
                   {"missing_gib", m.missing_gib},
                   {"missing_kib_per_token", m.missing_kib_per_token}};
  // Absent when not recorded / not known (every JSON figure is a number).
  if (m.measured_reserved_gib) j["measured_reserved_gib"] = *m.measured_reserved_gib;
  if (m.interval_low_gib) {
    j["interval_gib"] = {*m.interval_low_gib, *m.interval_high_gib};
    j["inside_interval"] = *m.inside();
  }
  return j;
}

std::string at_text(int64_t i, bool optimizer) {
  return optimizer ? "the optimizer step after micro-batch " + std::to_string(i) : "micro-batch " + std::to_string(i);
}

void print_memory_check(const RunMemoryCheck& m, std::ostream& out) {
  out << "    memory (" << m.allocator << " allocator): allocated peak measured " << fixed(m.measured_peak_gib, 2)
      << " GiB at " << at_text(m.measured_at, m.measured_at_optimizer) << ", predicted " << fixed(m.predicted_peak_gib, 2)
      << " GiB at " << at_text(m.predicted_at, m.predicted_at_optimizer) << " (" << (m.error_rel() >= 0 ? "+" : "")
      << fixed(m.error_rel() * 100, 1) << " %)";
  if (m.interval_low_gib)
    out << ", 90 % interval " << fixed(*m.interval_low_gib, 2) << "-" << fixed(*m.interval_high_gib, 2) << " GiB ("
        << (m.inside().value_or(false) ? "inside" : "OUTSIDE") << ")";
  out << "\n      reserved: measured " << (m.measured_reserved_gib ? fixed(*m.measured_reserved_gib, 2) + " GiB" : std::string("-"))
      << ", predicted " << fixed(m.predicted_reserved_gib, 2) << " GiB; per micro-batch: MAPE "
      << fixed(m.micro_batch_mape * 100, 2) << " %, max " << fixed(m.micro_batch_max_abs * 100, 2) << " % (micro-batch "
      << m.micro_batch_max_index << "); missing " << fixed(m.missing_gib, 3) << " GiB per micro-batch, "
      << fixed(m.missing_kib_per_token, 1) << " KiB per processed token\n";
}

}  // namespace

nlohmann::json run_validation_json(const RunValidation& v) {
  nlohmann::json j;
  j["runs"] = nlohmann::json::array();
  for (const auto& r : v.runs) {
    nlohmann::json o{{"id", r.id},
                     {"policy", r.policy},
                     {"micro_batches", r.micro_batches},
                     {"distinct_shapes", r.distinct_shapes},
                     {"host_bound_micro_batches", r.host_bound},
                     {"measured_s", r.measured_s},
                     {"predicted_s", r.predicted_s},
                     {"error_rel", r.error_rel()},
                     {"predicted_first_seen_s", r.predicted_first_seen_s},
                     {"predicted_run_start_s", r.predicted_run_start_s},
                     {"predicted_optimizer_s", r.predicted_optimizer_s},
                     {"micro_batch_mape", r.batch_mape},
                     {"micro_batch_max_abs_error", r.batch_max_abs},
                     {"micro_batch_max_index", r.batch_max_index},
                     {"jit_micro_batches", r.jit_batches},
                     {"jit_excess_s", r.jit_excess_s},
                     {"accounted_s", r.accounted_s}};
    if (r.wall_clock_half_width) {
      o["wall_clock_half_width"] = *r.wall_clock_half_width;
      o["inside_interval"] = *r.inside_interval();
    }
    if (r.planned_s) {
      o["planned_s"] = *r.planned_s;
      o["planned_error_rel"] = *r.planned_s / r.measured_s - 1.0;
    }
    if (r.planned_batches_match) o["planned_batches_match"] = *r.planned_batches_match;
    if (r.memory) o["memory"] = memory_check_json(*r.memory);
    j["runs"].push_back(o);
  }
  j["memory"] = nullptr;  // no run recorded peaks
  if (v.memory) {
    const auto& m = *v.memory;
    j["memory"] = {{"micro_batches", m.micro_batches},
                   {"ratio_measured_over_predicted", {{"p05", m.ratio_p05}, {"p50", m.ratio_p50}, {"p95", m.ratio_p95}}},
                   {"interval", m.interval_low ? nlohmann::json{*m.interval_low, *m.interval_high} : nlohmann::json()},
                   {"inside_interval", m.interval_low ? nlohmann::json(m.inside) : nlohmann::json()}};
  }
  j["savings"] = nlohmann::json::array();
  for (const auto& s : v.savings) {
    nlohmann::json o{{"baseline", s.baseline_id},
                     {"other", s.other_id},
                     {"measured", s.measured},
                     {"predicted", s.predicted},
                     {"error_pp", s.error_pp()}};
    if (s.planned) o["planned"] = *s.planned;
    j["savings"].push_back(o);
  }
  return j;
}

void print_run_validation(const RunValidation& v, const std::string& file, std::ostream& out) {
  out << "recorded runs in " << file << " (prediction: the recorded micro-batches through the planner's cost rule)\n";
  for (const auto& r : v.runs) {
    out << "  " << r.id << " (" << r.policy << ", " << r.micro_batches << " micro-batches, " << r.distinct_shapes
        << " shapes, " << r.host_bound << " host-bound)\n";
    out << "    total: measured " << fixed(r.measured_s, 2) << " s, predicted " << fixed(r.predicted_s, 2) << " s ("
        << (r.error_rel() >= 0 ? "+" : "") << fixed(r.error_rel() * 100, 1) << " %): first-seen "
        << fixed(r.predicted_first_seen_s, 2) << " s, start " << fixed(r.predicted_run_start_s, 2) << " s, optimizer "
        << fixed(r.predicted_optimizer_s, 2) << " s\n";
    if (r.wall_clock_half_width)
      out << "    90 % interval " << fixed(r.predicted_s / (1 + *r.wall_clock_half_width), 2) << "-"
          << fixed(r.predicted_s * (1 + *r.wall_clock_half_width), 2) << " s (+-" << fixed(*r.wall_clock_half_width * 100, 1)
          << " %, " << fixed(r.host_bound_share() * 100, 0) << " % of micro-batches host-bound): "
          << (*r.inside_interval() ? "inside" : "OUTSIDE") << "\n";
    out << "    per micro-batch: MAPE " << fixed(r.batch_mape * 100, 1) << " %, max " << fixed(r.batch_max_abs * 100, 1)
        << " % (micro-batch " << r.batch_max_index << ")\n";
    if (r.planned_s)
      out << "    planner from the corpus: " << fixed(*r.planned_s, 2) << " s ("
          << (*r.planned_s >= r.measured_s ? "+" : "") << fixed((*r.planned_s / r.measured_s - 1) * 100, 1)
          << " %), its micro-batches " << (r.planned_batches_match.value_or(false) ? "are" : "are NOT")
          << " the recorded ones\n";
    if (std::abs(r.accounted_s - r.measured_s) > 0.02 * r.measured_s)
      out << "    note: its micro-batches and optimizer steps account for " << fixed(r.accounted_s, 2) << " s of its "
          << fixed(r.measured_s, 2) << " s wall clock; the rest (data loading, logging, evaluation?) is not predicted\n";
    if (r.memory) print_memory_check(*r.memory, out);
    if (r.jit_batches > 0)
      out << "    cold kernel cache: " << r.jit_batches << " micro-batch(es) JIT-compiled kernels, "
          << fixed(r.jit_excess_s, 2) << " s over their prediction (a one-off per machine; docs/host.md)\n";
  }
  if (v.memory) {
    const auto& m = *v.memory;
    out << "  allocated peaks of " << m.micro_batches << " micro-batches, measured / predicted: 5 % " << fixed(m.ratio_p05, 4)
        << ", median " << fixed(m.ratio_p50, 4) << ", 95 % " << fixed(m.ratio_p95, 4);
    if (m.interval_low)
      out << "; the coefficients' interval " << fixed(*m.interval_low, 4) << "-" << fixed(*m.interval_high, 4) << " holds "
          << m.inside << " (" << fixed(100.0 * static_cast<double>(m.inside) / static_cast<double>(m.micro_batches), 1) << " %)";
    else
      out << "; the coefficients carry no interval";
    out << "\n";
  }
  for (const auto& s : v.savings) {
    out << "  saving of " << s.other_id << " over " << s.baseline_id << ": measured " << fixed(s.measured * 100, 1)
        << " %, predicted " << fixed(s.predicted * 100, 1) << " % (" << (s.error_pp() >= 0 ? "+" : "")
        << fixed(s.error_pp(), 1) << " pp)";
    if (s.planned) out << ", planner " << fixed(*s.planned * 100, 1) << " %";
    out << "\n";
  }
}

}  // namespace stepcast::report
