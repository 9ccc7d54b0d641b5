#pragma once
// The inputs calibrate and validate share: records (filtered to one model, GPU and tier), the shape,
// and the fit options (robust loss, priors).
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
  std::string loss = "none";
  double loss_scale = 0.05;
  std::string residuals = "relative";
  // "auto": the shipped coefficient file of the same model and GPU (same tier first) under
  // scenarios/coefficients/ ($STEPCAST_COEFFICIENTS_DIR overrides), if any; "none"; or a path.
  std::string prior = "auto";
  double prior_sigma = 0.5;
};

struct FitInput {
  std::vector<calibrate::Record> records;
  model::ModelShape shape;
  calibrate::FitOptions options;
};

FitInput load_fit_input(const FitInputOptions& o, const std::string& tool_version);
std::string measurements_label(const FitInputOptions& o);  // the files, comma-separated

// The auto prior's choice for records of this model, GPU and tier: a path, or empty.
std::string find_prior(const std::string& model, const std::string& gpu, const std::string& tier);

}  // namespace stepcast::io
