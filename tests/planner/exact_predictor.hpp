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

namespace stepcast::testing {

// ExactPredictor plus hand-computable one-off costs: first_seen = f0 + f1*W for a new shape, a run
// start and an optimizer step, as the calibrated StepModel offers them.
class OneOffPredictor : public ExactPredictor {
 public:
  OneOffPredictor(double a, double b, double c, double f0, double f1, double run_start_s, double optimizer_step_s)
      : ExactPredictor(a, b, c, 0.0, 0.0), f0_(f0), f1_(f1), run_start_s_(run_start_s), optimizer_step_s_(optimizer_step_s) {}
  double first_seen_s(const model::MicroBatch& batch) const override { return f0_ + f1_ * static_cast<double>(batch.width); }
  double run_start_s() const override { return run_start_s_; }
  double optimizer_step_s() const override { return optimizer_step_s_; }

 private:
  double f0_, f1_, run_start_s_, optimizer_step_s_;
};

}  // namespace stepcast::testing

namespace stepcast::testing {

// ExactPredictor's step as the device side, with a constant host floor H combined as max(D, H).
class FloorPredictor : public ExactPredictor {
 public:
  FloorPredictor(double a, double host_s) : ExactPredictor(a, 0.0, 0.0, 0.0, 0.0), host_s_(host_s) {}
  model::StepSides step_sides(const model::MicroBatch& batch) const override {
    const double device = ExactPredictor::step_s(batch);
    return {device > host_s_ ? device : host_s_, device, host_s_};
  }
  double step_s(const model::MicroBatch& batch) const override { return step_sides(batch).step_s; }

 private:
  double host_s_;
};

}  // namespace stepcast::testing

namespace stepcast::testing {

// ExactPredictor whose memory is itemised by hand (model/run_memory.hpp): a micro-batch adds step = m1*R*W,
// run = r1*R*W and, for a new shape, first = s1*R*W GiB to the run's state; `run` says the rest.
class RunMemoryPredictor : public ExactPredictor {
 public:
  RunMemoryPredictor(double m1, double r1, double s1, model::RunMemory run)
      : ExactPredictor(1e-4, 0.0, 0.01, 0.0, m1), m1_(m1), r1_(r1), s1_(s1), run_(std::move(run)) {}
  model::MemoryParts memory_parts(const model::MicroBatch& batch) const override {
    const auto t = static_cast<double>(batch.padded_tokens());
    return {m1_ * t, r1_ * t, s1_ * t};
  }
  model::RunMemory run_memory(model::Allocator allocator) const override {
    model::RunMemory r = run_;
    r.allocator = allocator;
    return r;
  }

 private:
  double m1_, r1_, s1_;
  model::RunMemory run_;
};

}  // namespace stepcast::testing
