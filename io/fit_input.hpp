#pragma once
// The inputs calibrate and validate share: records (filtered to one model, GPU and tier), the shape,
// and the fit options (robust loss, priors).
#include <map>
#include <string>
#include <vector>

#include "calibrate/fit.hpp"
#include "calibrate/records.hpp"
#include "model/shape.hpp"

namespace stepcast::io {

struct FitInputOptions {
  std::vector<std::string> measurements;  // one or more JSON Lines files, fitted together
  std::string model;        // empty: the records' model name
  std::string tier;         // empty: all records (which must then share one tier)
  std::string gpu;
  // Records of several models fitted at once, each priced with its own model's work: one rate per unit of work
  // for all (docs/method.md, "The default predictor"). The models are the records' names (--model is refused).
  bool pooled = false;
  // The weights' dtype as the records were measured (a record's own `dtype` field wins); empty: the config's
  // torch_dtype, which some configs give as float32 for weights trained in bfloat16 (Gemma-2-9B).
  std::string dtype;
  std::string loss = "none";
  double loss_scale = 0.05;
  std::string residuals = "relative";
  // "auto": find_prior's choice, if any; "none"; or a path.
  std::string prior = "auto";
  double prior_sigma = 0.5;
  // What the expert rate prices (calibrate/fit.hpp FitOptions::expert_work): empty = the prior's, else the roofline.
  std::string expert_work;
  // What the memory-bound rate prices (calibrate/fit.hpp FitOptions::memory_work): empty = the prior's, else weighted.
  std::string memory_work;
};

struct FitInput {
  std::vector<calibrate::Record> records;
  model::ModelShape shape;                                  // the (first) model's
  std::map<std::string, model::ModelShape> pooled_shapes;   // pooled: every record's model by name; else empty
  calibrate::FitOptions options;
  calibrate::FitShapes shapes() const {
    return pooled_shapes.empty() ? calibrate::FitShapes(shape) : calibrate::FitShapes(pooled_shapes);
  }
};

FitInput load_fit_input(const FitInputOptions& o, const std::string& tool_version);
std::string measurements_label(const FitInputOptions& o);  // the files, comma-separated

// A record's identity for provenance: 16 hex digits of FNV-1a over its model, GPU, tier, rows, width,
// step_s, peak_gib, oom and the fields a writer added. The same measurement read again gives the same
// fingerprint; any other measurement almost surely (2^-64) does not.
std::string record_fingerprint(const calibrate::Record& r);
// The fingerprints of the records given to a fit, sorted, unique, space-separated: what `calibrate` writes
// as a coefficient file's `fitted_records`.
std::string record_fingerprints(const std::vector<calibrate::Record>& records);

// Why coefficient file `c` must not be the auto prior when fitting or validating `judged`, or empty when it
// may: it must be of the records' model, GPU and tier, list the records it was fitted on, and share none
// of them with `judged` (a prior fitted on the records it judges makes held-out errors look better than
// they are).
std::string prior_refusal(const model::Coefficients& c, const std::vector<calibrate::Record>& judged);

// The auto prior for `judged`: of the coefficient files under scenarios/coefficients/
// ($STEPCAST_COEFFICIENTS_DIR overrides) that prior_refusal accepts, the one fitted on most points; a path,
// or empty.
std::string find_prior(const std::vector<calibrate::Record>& judged);

}  // namespace stepcast::io
