#pragma once
// Do the 90 % intervals hold 90 %? Each measured record is priced by the predictor its own model, GPU and tier
// label get (predict/predictor.hpp), and its step is inside or outside the interval of its kind
// (model/intervals.hpp). `stepcast validate --coverage` prints this; the held-out records of families a predictor
// was not fitted on measure its model-transfer interval (docs/method.md, "Intervals").
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "predict/predictor.hpp"

namespace stepcast::predict {

struct CoveragePoint {
  std::string where;  // file:line
  std::string model;
  std::string kind;   // the provenance names joined by '+': "calibrated", "transferred-model", ...
  bool padded = false;
  double ratio_error = 0;  // max(measured / predicted, predicted / measured) - 1
  double half_width = 0;   // the interval's
  bool inside = false;
  bool host_bound = false;  // the predictor says the host, not the device, bounds this step
};

struct CoverageGroup {
  std::string kind;
  bool padded = false;
  int64_t points = 0;
  int64_t inside = 0;
  double stated_half_width = 0;  // the largest half-width the predictors gave these points
  double conformal = 0;          // the conformal 90 % half-width of these points' errors (what the table would hold)
  // Each point against the conformal half-width of the group's points of other models: the coverage a model never
  // seen can expect (0 points when the group has one model).
  int64_t other_models_points = 0;
  int64_t other_models_inside = 0;
  double share() const { return points > 0 ? static_cast<double>(inside) / static_cast<double>(points) : 0.0; }
};

struct CoverageReport {
  std::vector<std::string> predictors;  // each predictor's first line, once
  std::vector<CoveragePoint> points;
  std::vector<CoverageGroup> groups;    // by kind, then unpadded before padded
};

// `base` is the question every record shares (coefficients, stack, transfer, a --model for all); each record adds
// its model (unless `base.model`), and on the default predictor its GPU and tier label. Records without a step
// (OOM) and micro-batches of recorded runs (they pay one-off costs) are left out. Throws InputError (exit 2) as
// choose_predictor does, at the first record of the group.
CoverageReport interval_coverage(const std::vector<calibrate::Record>& records, const PredictorAsk& base);

}  // namespace stepcast::predict
