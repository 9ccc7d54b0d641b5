#include "report/run_check.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "report/format.hpp"
#include "planner/batching.hpp"
#include "planner/simulate.hpp"
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
    if (jit_cache_growth(step.record) > 0) {
      ++c.jit_batches;
      c.jit_excess_s += measured - predicted;
    }
  }
  c.batch_mape = batches.empty() ? 0 : sum / static_cast<double>(batches.size());
  plan_from_corpus(run, model, c);
  return c;
}

bool same_corpus(const calibrate::RecordedRun& a, const calibrate::RecordedRun& b) {
  return !a.corpus_lengths.empty() && a.corpus_lengths == b.corpus_lengths && a.micro_batch == b.micro_batch &&
         a.accumulation == b.accumulation && a.policy != b.policy;
}

}  // namespace

int64_t jit_cache_growth(const calibrate::Record& r) {
  const auto it = r.extra.find("jit_cache_files_added");
  return it != r.extra.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

RunValidation check_runs(const std::vector<calibrate::RecordedRun>& runs, const model::StepModel& model) {
  RunValidation v;
  for (const auto& run : runs) v.runs.push_back(check_run(run, model));
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
    if (r.planned_s) {
      o["planned_s"] = *r.planned_s;
      o["planned_error_rel"] = *r.planned_s / r.measured_s - 1.0;
    }
    if (r.planned_batches_match) o["planned_batches_match"] = *r.planned_batches_match;
    j["runs"].push_back(o);
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
    if (r.jit_batches > 0)
      out << "    cold kernel cache: " << r.jit_batches << " micro-batch(es) JIT-compiled kernels, "
          << fixed(r.jit_excess_s, 2) << " s over their prediction (a one-off per machine; docs/host.md)\n";
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
