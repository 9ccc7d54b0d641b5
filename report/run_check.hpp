#pragma once
// `stepcast validate --run FILE`: the planner's prediction of a recorded run (calibrate/run_records.hpp)
// against its measurement, in two ways:
//   replay - the recorded micro-batches, in their recorded order, through planner::predict_timeline (the cost
//            rule the planner simulates with): total, per micro-batch, first-seen and optimizer parts
//   plan   - when the run recorded its corpus and a policy the planner knows: the planner's own schedule of that
//            corpus (planner::simulate), as `stepcast plan` would predict it before the run
// and, for runs over the same corpus under different policies, the saving between them (measured and predicted).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "calibrate/run_records.hpp"
#include "model/step_model.hpp"

namespace stepcast::report {

// A recorded run's memory against the planner's timeline replayed on its micro-batches (planner/memory_timeline.hpp),
// when the run recorded peaks: allocated (peak_gib, the optimizer steps' optimizer_peak_gib) and reserved
// (peak_reserved_gib, optimizer_reserved_gib), where each peak happened, the interval, and what is missing.
struct RunMemoryCheck {
  std::string allocator;                  // memory_start.allocator (default when not recorded)
  double measured_peak_gib = 0;
  double predicted_peak_gib = 0;
  int64_t measured_at = 0;                // 0-based micro-batch (the optimizer step after it when ..._optimizer)
  bool measured_at_optimizer = false;
  int64_t predicted_at = 0;
  bool predicted_at_optimizer = false;
  std::optional<double> measured_reserved_gib;
  double predicted_reserved_gib = 0;
  std::optional<double> interval_low_gib, interval_high_gib;  // around the predicted peak
  int64_t micro_batches = 0;              // with a usable peak
  double micro_batch_mape = 0;            // allocated peaks, per micro-batch
  double micro_batch_max_abs = 0;
  int64_t micro_batch_max_index = 0;
  double missing_gib = 0;                 // mean over micro-batches of measured - predicted
  double missing_kib_per_token = 0;       // the same per processed token (KiB)
  std::vector<double> ratios;             // measured / predicted allocated peak of each micro-batch
  double error_rel() const { return predicted_peak_gib / measured_peak_gib - 1.0; }
  std::optional<bool> inside() const {
    if (!interval_low_gib) return std::nullopt;
    return measured_peak_gib >= *interval_low_gib && measured_peak_gib <= *interval_high_gib;
  }
};

struct RunCheck {
  std::string id;
  std::string policy;
  int64_t micro_batches = 0;
  int64_t distinct_shapes = 0;
  double measured_s = 0;
  double predicted_s = 0;            // replay
  double predicted_first_seen_s = 0;
  double predicted_optimizer_s = 0;
  double predicted_run_start_s = 0;
  double batch_mape = 0;             // per micro-batch (step + its optimizer step), replay
  double batch_max_abs = 0;
  int64_t batch_max_index = 0;
  int64_t host_bound = 0;            // micro-batches the model says the host bounds
  bool padded = false;               // some micro-batch carries padding (rows shorter than its width)
  // The predictor's 90 % half-width for this run's wall clock (predict::Predictor::wall_clock_half_width), set by
  // the front end that knows the predictor; empty when none was asked.
  std::optional<double> wall_clock_half_width;
  std::optional<double> planned_s;   // plan
  std::optional<bool> planned_batches_match;  // the planner's micro-batches = the recorded ones (as a multiset)
  int64_t jit_batches = 0;           // micro-batches that added kernels to a cold driver JIT cache (when labelled)
  double jit_excess_s = 0;           // their measured time over the prediction
  double accounted_s = 0;            // sum of the micro-batches' step_s and optimizer_s (vs measured_s, the wall clock)
  std::optional<RunMemoryCheck> memory;  // when the run recorded peaks
  double error_rel() const { return predicted_s / measured_s - 1.0; }
  // Whether the measured wall clock lies inside predicted x / (1 + h) ... x (1 + h): model/intervals.hpp's ratio
  // error, the same reading as every other interval of the tool.
  std::optional<bool> inside_interval() const;
  double host_bound_share() const { return micro_batches > 0 ? static_cast<double>(host_bound) / micro_batches : 0.0; }
};

struct SavingCheck {
  std::string baseline_id;
  std::string other_id;
  double measured = 0;    // 1 - T_other / T_baseline
  double predicted = 0;   // the same from the replay predictions
  std::optional<double> planned;  // the same from the planner's schedules
  double error_pp() const { return (predicted - measured) * 100.0; }
};

// Over every recorded micro-batch of the file: the spread of measured / predicted allocated peaks (these runs'
// held-out errors when the coefficients were not fitted on them) and how many the coefficients' interval holds.
struct MemorySummary {
  int64_t micro_batches = 0;
  double ratio_p05 = 1, ratio_p50 = 1, ratio_p95 = 1;
  std::optional<double> interval_low, interval_high;  // the coefficients' peak_interval
  int64_t inside = 0;                                   // micro-batches whose ratio it holds
};

struct RunValidation {
  std::vector<RunCheck> runs;
  std::vector<SavingCheck> savings;
  std::optional<MemorySummary> memory;
};

RunValidation check_runs(const std::vector<calibrate::RecordedRun>& runs, const model::StepModel& model);

// Files the driver's JIT cache gained during a micro-batch (the record's jit_cache_files_added, written by the
// transformers + peft executors; 0 when absent): > 0 means kernels were compiled for a cold cache (docs/host.md).
int64_t jit_cache_growth(const calibrate::Record& record);

nlohmann::json run_validation_json(const RunValidation& v);
void print_run_validation(const RunValidation& v, const std::string& file, std::ostream& out);

}  // namespace stepcast::report
