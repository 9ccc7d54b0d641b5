#pragma once
// Fitting coefficients to measurement records with Ceres (after robust_curve_fitting.cc) over the term tables
// of model/features.hpp: one parameter vector per fit (calibrate/solve.hpp), optional robust loss, standard
// errors from ceres::Covariance, and forward model selection that says why each term is in or out
// (calibrate/select.hpp). The step fit is calibrate/fit_step.cpp, the peak fit calibrate/fit_peak.cpp.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "model/coefficients.hpp"
#include "model/shape.hpp"

namespace stepcast::calibrate {

// A step term beyond the model's table (model::kStepTermTable): its row and its feature, tried by the fit like
// the table's own (a new term's trial before it joins the table; docs/method.md, "Adding a step term"). The
// row's strings must outlive the fit.
struct ExtraStepTerm {
  model::TermSpec spec;
  std::function<double(const model::MicroBatch&)> feature;
};

struct FitOptions {
  std::string loss = "none";     // none, huber, cauchy
  double loss_scale = 0.05;      // step: relative error where the robust loss bends; peak: x 10 GiB
  // Step residuals: "relative" ((predicted - measured) / measured; the bars are MAPEs, so every record
  // weighs the same) or "absolute" (seconds; the sm_120 study's own least squares).
  std::string residuals = "relative";
  double min_t_ratio = 2.0;      // an optional term stays only if estimate > min_t_ratio * standard error
  std::string tool_version = "dev";
  std::string date;              // provenance; empty = now (UTC)
  // Priors: coefficients of the same GPU to regularise toward (a Gaussian residual per term with a
  // relative sigma), so that a handful of points cannot fling a rate far from what the GPU does.
  std::optional<model::Coefficients> prior;
  std::string prior_name;        // where the prior came from, for provenance
  double prior_rel_sigma = 0.5;
  // What the expert rate prices: "per-flop" or "roofline" (model/coefficients.hpp); empty = the prior's, else the
  // roofline (a file written before the roofline is refitted as it was with "per-flop").
  std::string expert_work;
  // What the memory-bound rate prices: "plain" or "weighted" (model/coefficients.hpp); empty = the prior's, else
  // weighted.
  std::string memory_work;
  bool verbose = false;
  std::string records_file = "records";  // for file:line in messages about recorded runs
  std::vector<ExtraStepTerm> extra_step_terms;
};

struct StepResidualRow {
  std::string file;
  int64_t line = 0;
  double measured_s = 0;
  double predicted_s = 0;
  double error_rel() const { return (predicted_s - measured_s) / measured_s; }
};

struct PeakResidualRow {
  std::string file;
  int64_t line = 0;
  double measured_gib = 0;   // for an OOM record: the GPU's capacity (a lower bound)
  double predicted_gib = 0;
  bool oom_constraint = false;
  double error_rel() const { return (predicted_gib - measured_gib) / measured_gib; }
};

struct FitReport {
  model::Coefficients coefficients;
  std::vector<StepResidualRow> step_residuals;
  std::vector<PeakResidualRow> peak_residuals;
  std::vector<std::string> notes;
  std::vector<model::Term> extra_step;  // one per FitOptions::extra_step_terms
};

// The shapes a fit prices its records with: one shape for every record (a model's own fit), or, pooled, one per
// model name, so that several models share one rate per unit of work (docs/method.md, "The default predictor").
class FitShapes {
 public:
  explicit FitShapes(model::ModelShape single) : single_(std::move(single)) {}
  explicit FitShapes(std::map<std::string, model::ModelShape> by_model) : by_model_(std::move(by_model)) {}
  bool pooled() const { return !single_.has_value(); }
  // The shape of the record's model; InputError (at the record) when a pooled fit has none for it.
  const model::ModelShape& of(const Record& record) const;
  // The model names of a pooled fit, sorted; the single shape's name otherwise.
  std::vector<std::string> names() const;

 private:
  std::optional<model::ModelShape> single_;
  std::map<std::string, model::ModelShape> by_model_;
};

// Records must share one GPU and tier, and one model unless the fit is pooled (check_uniform says which lines do
// not). Throws InputError when nothing can be fitted (no step records, fewer than 2 points).
FitReport fit(const FitShapes& shapes, const std::vector<Record>& records, const FitOptions& options);
inline FitReport fit(const model::ModelShape& shape, const std::vector<Record>& records, const FitOptions& options) {
  return fit(FitShapes(shape), records, options);
}

void check_uniform(const std::vector<Record>& records, const std::string& file, bool pooled = false);

}  // namespace stepcast::calibrate
