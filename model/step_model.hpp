#pragma once
// The calibrated step-time and memory model: features of the shape and tier times coefficients.
#include <array>

#include "model/batch.hpp"
#include "model/coefficients.hpp"
#include "model/features.hpp"
#include "model/memory.hpp"

namespace stepcast::model {

class StepModel : public StepPredictor {
 public:
  StepModel(const ModelShape& shape, const Coefficients& coefficients, const GpuInfo& gpu);
  StepModel(const ModelShape& shape, const Coefficients& coefficients);  // GPU from coefficients.gpu

  double step_s(const MicroBatch& batch) const override;
  double peak_gib(const MicroBatch& batch) const override;
  MemoryTable memory_table(const MicroBatch& batch) const;

  const FeatureMaker& features() const { return features_; }
  const Coefficients& coefficients() const { return coefficients_; }

 private:
  FeatureMaker features_;
  Coefficients coefficients_;
  std::array<double, kStepTerms> c_{};
  std::array<double, kMemoryTerms> m_{};
};

}  // namespace stepcast::model
