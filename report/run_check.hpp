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
  std::optional<double> planned_s;   // plan
  std::optional<bool> planned_batches_match;  // the planner's micro-batches = the recorded ones (as a multiset)
  int64_t jit_batches = 0;           // micro-batches that added kernels to a cold driver JIT cache (when labelled)
  double jit_excess_s = 0;           // their measured time over the prediction
  double accounted_s = 0;            // sum of the micro-batches' step_s and optimizer_s (vs measured_s, the wall clock)
  double error_rel() const { return predicted_s / measured_s - 1.0; }
};

struct SavingCheck {
  std::string baseline_id;
  std::string other_id;
  double measured = 0;    // 1 - T_other / T_baseline
  double predicted = 0;   // the same from the replay predictions
  std::optional<double> planned;  // the same from the planner's schedules
  double error_pp() const { return (predicted - measured) * 100.0; }
};

struct RunValidation {
  std::vector<RunCheck> runs;
  std::vector<SavingCheck> savings;
};

RunValidation check_runs(const std::vector<calibrate::RecordedRun>& runs, const model::StepModel& model);

// Files the driver's JIT cache gained during a micro-batch (the record's jit_cache_files_added, written by the
// transformers + peft executors; 0 when absent): > 0 means kernels were compiled for a cold cache (docs/host.md).
int64_t jit_cache_growth(const calibrate::Record& record);

nlohmann::json run_validation_json(const RunValidation& v);
void print_run_validation(const RunValidation& v, const std::string& file, std::ostream& out);

}  // namespace stepcast::report
