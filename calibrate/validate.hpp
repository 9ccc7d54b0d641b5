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
  bool padded = false;  // a row shorter than the width (model/intervals.hpp: padded points err more)
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

// The calibrated interval of a fit (model/coefficients.hpp HeldOut): the conformal 90 % half-widths of the held-out
// step ratio errors (model/intervals.hpp), padded and unpadded apart; a kind without rows takes all the rows'.
model::HeldOut held_out_errors(const Validation& v);

// How often a held-out step falls inside the interval the others would give it: each row of a kind against the
// conformal half-width of the other rows of that kind (leave-one-out on the held-out errors themselves).
struct IntervalCoverage {
  int64_t points = 0;
  int64_t inside = 0;
  double half_width = 0;  // the conformal half-width of all the rows of the kind
  double share() const { return points > 0 ? static_cast<double>(inside) / static_cast<double>(points) : 0.0; }
};
IntervalCoverage interval_coverage(const Validation& v, bool padded);

// What calibrate records in a coefficient file: leave-one-out up to kHeldOutLooMax records, else 10-fold (each
// fold refits, so leave-one-out of hundreds of records would cost hundreds of fits).
inline constexpr size_t kHeldOutLooMax = 30;
model::HeldOut fit_held_out(const model::ModelShape& shape, const std::vector<Record>& records, const FitOptions& options);

}  // namespace stepcast::calibrate
