#pragma once
// The two fits behind calibrate::fit (calibrate/fit.hpp): each fills its part of the report.
#include "calibrate/fit.hpp"
#include "model/features.hpp"

namespace stepcast::calibrate {

void fit_step(const model::FeatureMaker& maker, const std::vector<Record>& records, const FitOptions& o,
              FitReport& report);
void fit_peak(const model::FeatureMaker& maker, const std::vector<Record>& records, const FitOptions& o,
              FitReport& report);

}  // namespace stepcast::calibrate
