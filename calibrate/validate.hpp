#pragma once
// Held-out validation: k-fold and leave-one-out. Each fold is fitted on the rest (with the same model
// selection), then predicts its own records; MAPE and max error for step time and peak.
#include <optional>
#include <string>
#include <vector>

#include "calibrate/fit.hpp"

namespace stepcast::calibrate {

struct HeldOutRow {
  std::string file;
  int64_t line = 0;
  int fold = 0;
  std::optional<double> measured_step_s, predicted_step_s;
  std::optional<double> measured_peak_gib, predicted_peak_gib;
};

struct ErrorStats {
  int64_t count = 0;
  double mape = 0;        // mean absolute relative error, as a fraction
  double max_abs = 0;     // largest absolute relative error, as a fraction
  int64_t max_line = 0;   // where it was
  std::string max_file;
};

struct Validation {
  std::string scheme;     // "leave-one-out" or "k-fold"
  int folds = 0;
  std::vector<HeldOutRow> rows;
  ErrorStats step, peak;
  std::vector<std::string> notes;
};

// folds <= 0 or >= the number of records: leave-one-out. Records are dealt to folds in file order
// (record i goes to fold i mod k), so each fold spans the measured range.
Validation cross_validate(const FitShapes& shapes, const std::vector<Record>& records, const FitOptions& options,
                          int folds);
inline Validation cross_validate(const model::ModelShape& shape, const std::vector<Record>& records,
                                 const FitOptions& options, int folds) {
  return cross_validate(FitShapes(shape), records, options, folds);
}
// A pooled fit's transfer error: each model's records held out together, predicted by a fit on the other models
// (the default predictor meeting a model it was not fitted on; docs/method.md, "The default predictor").
Validation leave_one_model_out(const FitShapes& shapes, const std::vector<Record>& records, const FitOptions& options);

// Statistics of (predicted - measured) / measured over pairs.
ErrorStats error_stats(const std::vector<HeldOutRow>& rows, bool peak);

}  // namespace stepcast::calibrate
