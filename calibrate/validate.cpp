#include "calibrate/validate.hpp"

#include <cmath>

#include "model/errors.hpp"
#include "model/step_model.hpp"

namespace stepcast::calibrate {

ErrorStats error_stats(const std::vector<HeldOutRow>& rows, bool peak) {
  ErrorStats s;
  double sum = 0;
  for (const auto& r : rows) {
    const auto& m = peak ? r.measured_peak_gib : r.measured_step_s;
    const auto& p = peak ? r.predicted_peak_gib : r.predicted_step_s;
    if (!m || !p) continue;
    const double e = std::abs(*p - *m) / *m;
    sum += e;
    ++s.count;
    if (e >= s.max_abs) {
      s.max_abs = e;
      s.max_line = r.line;
      s.max_file = r.file;
    }
  }
  s.mape = s.count > 0 ? sum / static_cast<double>(s.count) : 0.0;
  return s;
}

Validation cross_validate(const model::ModelShape& shape, const std::vector<Record>& records, const FitOptions& options,
                          int folds) {
  Validation v;
  const int n = static_cast<int>(records.size());
  if (n < 3) throw InputError("validate: " + std::to_string(n) + " records. Violated constraint: at least 3");
  const bool loo = folds <= 0 || folds >= n;
  v.folds = loo ? n : folds;
  v.scheme = loo ? "leave-one-out" : "k-fold";
  for (int k = 0; k < v.folds; ++k) {
    std::vector<Record> train, test;
    for (int i = 0; i < n; ++i) (i % v.folds == k ? test : train).push_back(records[static_cast<size_t>(i)]);
    FitReport fitted;
    try {
      fitted = fit(shape, train, options);
    } catch (const InputError& e) {
      v.notes.push_back("fold " + std::to_string(k) + " skipped: " + e.what());
      continue;
    }
    const model::StepModel m(shape, fitted.coefficients);
    for (const Record& r : test) {
      // A recorded run's micro-batches pay first-seen and start costs: `validate --run` checks those.
      const auto probe = r.extra.find("probe");
      if (probe != r.extra.end() && *probe == "run") continue;
      HeldOutRow row;
      row.file = r.file;
      row.line = r.line;
      row.fold = k;
      const model::MicroBatch b = to_batch(r);
      if (r.step_s && !r.oom) {
        row.measured_step_s = *r.step_s;
        row.predicted_step_s = m.step_s(b);
      }
      if (r.usable_peak() && fitted.coefficients.peak_points > 0) {
        row.measured_peak_gib = *r.peak_gib;
        row.predicted_peak_gib = m.peak_gib(b);
      }
      v.rows.push_back(row);
    }
  }
  v.step = error_stats(v.rows, false);
  v.peak = error_stats(v.rows, true);
  return v;
}

}  // namespace stepcast::calibrate
