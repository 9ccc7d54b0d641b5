#pragma once
// A hand-computable predictor for tests: step = a*R*W + b*R*W^2 + c, peak = m0 + m1*R*W.
#include "model/batch.hpp"

namespace stepcast::testing {

class ExactPredictor : public model::StepPredictor {
 public:
  ExactPredictor(double a, double b, double c, double m0, double m1) : a_(a), b_(b), c_(c), m0_(m0), m1_(m1) {}
  double step_s(const model::MicroBatch& batch) const override {
    const auto t = static_cast<double>(batch.padded_tokens());
    return a_ * t + b_ * t * static_cast<double>(batch.width) + c_;
  }
  double peak_gib(const model::MicroBatch& batch) const override {
    return m0_ + m1_ * static_cast<double>(batch.padded_tokens());
  }

 private:
  double a_, b_, c_, m0_, m1_;
};

}  // namespace stepcast::testing
