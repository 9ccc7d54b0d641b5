#include "model/step_model.hpp"

namespace stepcast::model {

StepModel::StepModel(const ModelShape& shape, const Coefficients& coefficients, const GpuInfo& gpu)
    : StepModel(shape, coefficients, gpu, LoraChoice{coefficients.lora_rank, {}}) {}

StepModel::StepModel(const ModelShape& shape, const Coefficients& coefficients, const GpuInfo& gpu, const LoraChoice& lora)
    : StepModel(shape, expand_modules(shape), coefficients, gpu, lora) {}

StepModel::StepModel(const ModelShape& shape, const ModuleTable& modules, const Coefficients& coefficients,
                     const GpuInfo& gpu, const LoraChoice& lora)
    : features_(shape, modules, tier_from_label(coefficients.tier), gpu, lora), coefficients_(coefficients) {
  for (int i = 0; i < kStepTerms; ++i) c_[i] = coefficients.step[i].selected ? coefficients.step[i].value : 0.0;
  for (int i = 0; i < kMemoryTerms; ++i) m_[i] = coefficients.memory[i].selected ? coefficients.memory[i].value : 0.0;
  for (int i = 0; i < kRunTerms; ++i) run_[i] = coefficients.run[i].selected ? coefficients.run[i].value : 0.0;
  features_.set_launches_per_step(coefficients.launches_per_step);
}

StepModel::StepModel(const ModelShape& shape, const Coefficients& coefficients)
    : StepModel(shape, coefficients, gpu_info(coefficients.gpu)) {}

StepModel::Sides StepModel::sides(const MicroBatch& batch) const {
  const StepFeatures f = features_.step(batch);
  Sides s;
  s.device_s = device_seconds(c_.data(), f);
  s.host_s = host_seconds(c_.data(), f);
  // step_seconds() would compute both sides again: combine the two just computed (the planner's hot path).
  s.step_s = s.host_s > 0 ? smooth_max(s.device_s, s.host_s, coefficients_.overlap_exponent) : s.device_s;
  return s;
}

double StepModel::step_s(const MicroBatch& batch) const { return sides(batch).step_s; }

double StepModel::first_seen_s(const MicroBatch& batch) const {
  return features_.all_varlen(batch) ? 0.0 : run_[kFirstSeen];
}
double StepModel::run_start_s() const { return run_[kRunStart]; }
double StepModel::optimizer_step_s() const { return run_[kOptimizerStep]; }

double StepModel::peak_gib(const MicroBatch& batch) const {
  const MemoryFeatures y = features_.memory(batch);
  double peak = y.base_gib;
  for (int i = 0; i < kMemoryTerms; ++i) peak += m_[i] * y.y[i];
  return peak;
}

MemoryTable StepModel::memory_table(const MicroBatch& batch) const {
  return model::memory_table(features_, features_.memory(batch), m_);
}

}  // namespace stepcast::model
