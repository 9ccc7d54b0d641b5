#pragma once
// The one-off costs of a real run on top of the steady step model (model/batch.hpp StepPredictor):
//   first_seen_s     - what the first micro-batch of a rows x width new to the process pays on top of its
//                      steady step: first-seen probes (first_step_s - step_s) and recorded runs' first-seen
//                      micro-batches (step_s - the steady model's step)
//   run_start_s      - what the process's very first micro-batch pays on top of that (library initialisation),
//                      plus the first optimizer step's extra (AdamW allocates its state)
//   optimizer_step_s - a steady optimizer step (clip, AdamW, zero_grad): recorded runs' optimizer_s after the
//                      first, and optimizer probes (optimizer_times_s after the first)
// Each is the median of its samples (robust to the few ~5 s stalls of a cold driver JIT cache, docs/host.md),
// with the standard error of a median, 1.2533 * sd / sqrt(n).
#include <string>
#include <vector>

#include "calibrate/fit.hpp"
#include "calibrate/records.hpp"
#include "model/coefficients.hpp"
#include "model/shape.hpp"

namespace stepcast::calibrate {

// Fills coefficients.run from `records` (terms without samples stay unselected, with the reason) given the
// steady coefficients already fitted in `coefficients`. Notes say how many samples came from where.
// Each record's steady step is priced with its own model (pooled fits) and adapters.
void fit_run_costs(const FitShapes& shapes, const std::vector<Record>& records, const std::string& file,
                   model::Coefficients& coefficients, std::vector<std::string>& notes);
inline void fit_run_costs(const model::ModelShape& shape, const std::vector<Record>& records, const std::string& file,
                          model::Coefficients& coefficients, std::vector<std::string>& notes) {
  fit_run_costs(FitShapes(shape), records, file, coefficients, notes);
}

// The median of `v`, and its standard error (sqrt(pi / 2) x 1.4826 MAD / sqrt(n): robust to a few cold-cache
// stalls); 0 for fewer than two samples. Shared by the run-cost and run-memory fits.
double median(std::vector<double> v);
double median_std_error(const std::vector<double>& v);

}  // namespace stepcast::calibrate
