#include "model/step_model.hpp"

#include <bit>

#include "model/allocator.hpp"
#include "model/gpu_efficiency.hpp"

namespace stepcast::model {

StepModel::StepModel(const ModelShape& shape, const Coefficients& coefficients, const GpuInfo& gpu)
    : StepModel(shape, coefficients, gpu, LoraChoice{coefficients.lora_rank, {}}) {}

namespace {

constexpr double kGiB = 1073741824.0;

// What the caching allocator reserves beyond the persistent tensors' bytes, GiB, for one allocator mode.
double persistent_rounding_gib(const ModelShape& shape, const LoraChoice& lora, Allocator allocator) {
  TrainingSetup setup;
  setup.lora_rank = lora.rank;
  setup.lora_targets = lora.targets;
  setup.full = lora.full;
  const std::vector<int64_t> tensors = persistent_tensor_bytes(shape, setup);
  double bytes = 0;
  for (int64_t b : tensors) bytes += static_cast<double>(b);
  return (static_cast<double>(persistent_footprint(tensors, allocator).reserved) - bytes) / kGiB;
}

// Seconds of `bytes` of AdamW update at the copy bandwidth the public measurements give `gpu` for one of its passes.
double update_s(double bytes, const GpuInfo& gpu) {
  if (bytes <= 0) return 0;
  const double pass_bytes = bytes / adamw_bytes_per_param(1);  // one element pass over every parameter, 1 byte each
  const Achieved a = shipped_efficiency().achieved(gpu, KernelCategory::memory, pass_bytes);
  const double gbs = a.rate > 0 ? a.rate : gpu.peaks.memory_gbs;
  return gbs > 0 ? bytes / (gbs * 1e9) : 0;
}
}  // namespace

StepModel::StepModel(const ModelShape& shape, const Coefficients& coefficients, const GpuInfo& gpu, const LoraChoice& lora)
    : StepModel(shape, expand_modules(shape), coefficients, gpu, lora) {}

StepModel::StepModel(const ModelShape& shape, const ModuleTable& modules, const Coefficients& coefficients,
                     const GpuInfo& gpu, const LoraChoice& lora)
    : features_(shape, modules, tier_from_label(coefficients.tier), gpu, lora,
                expert_work_from(coefficients.expert_work), memory_work_from(coefficients.memory_work)),
      coefficients_(coefficients) {
  for (int i = 0; i < kStepTerms; ++i) c_[i] = coefficients.step[i].selected ? coefficients.step[i].value : 0.0;
  for (int i = 0; i < kMemoryTerms; ++i) m_[i] = coefficients.memory[i].selected ? coefficients.memory[i].value : 0.0;
  for (int i = 0; i < kRunTerms; ++i) run_[i] = coefficients.run[i].selected ? coefficients.run[i].value : 0.0;
  features_.set_launches_per_step(coefficients.launches_per_step);
  full_update_s_ = update_s(features_.optimizer_update_bytes(), gpu);
  for (Allocator a : {Allocator::caching, Allocator::expandable_segments})
    persistent_rounding_gib_[static_cast<size_t>(a)] = persistent_rounding_gib(shape, lora, a);
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
  return run_[kFirstSeen] * std::popcount(first_seen_graphs(batch));
}
double StepModel::run_start_s() const { return run_[kRunStart]; }
double StepModel::optimizer_step_s() const { return run_[kOptimizerStep] + full_update_s(); }

double StepModel::peak_of(const MemoryFeatures& y) const {
  double peak = y.base_gib;
  for (int i = 0; i < kMemoryTerms; ++i) peak += m_[i] * y.y[i];
  return std::max(peak, y.base_gib + y.floor_gib + m_[kMemFixed] * y.y[kMemFixed]);
}

double StepModel::peak_gib(const MicroBatch& batch) const { return peak_of(features_.memory(batch)); }

double StepModel::peak_gib(const MicroBatch& batch, const RunPosition& at) const {
  return peak_of(features_.memory(batch, at));
}

MemoryParts StepModel::memory_parts(const MicroBatch& batch) const {
  const MemoryFeatures y = features_.memory(batch);
  MemoryParts p;
  for (int i = 0; i < kMemoryTerms; ++i)
    if (kMemoryTermTable[i].form == TermForm::linear && i != kMemFixed) p.step_gib += m_[i] * y.y[i];
  // The run-only per-token terms (zero in a probe's features) on the micro-batch's processed tokens.
  p.run_gib = m_[kMemRunToken] * y.y[kMemToken];
  p.first_seen_gib = m_[kMemFirstSeenToken] * y.y[kMemToken];
  return p;
}

RunMemory StepModel::run_memory(Allocator allocator) const {
  const TrainableGib& t = features_.trainable();
  const auto selected = [&](MemoryTerm term) { return coefficients_.memory[term].selected; };
  RunMemory r;
  r.itemised = true;
  r.allocator = allocator;
  r.weights_gib = features_.weights_gib();
  r.trainable_gib = t.params;
  r.gradients_gib = t.gradients;
  r.optimizer_state_gib = t.optimizer_states;
  r.fixed_gib = m_[kMemFixed];
  // Temporaries of clip_grad_norm_ and AdamW's foreach update, per byte of the trained parameters in their own
  // dtype (the gradients' GiB): torch.optim.AdamW's foreach path allocates one list like them (sqrt of exp_avg_sq)
  // and updates the rest in place (docs/method.md, "Memory of a run"). LoRA's fp32 adapters and a full fine-tune's
  // bf16 (or fp32 master) weights alike.
  r.optimizer_transient_gib = m_[kMemOptimizerTransient] * t.gradients;
  r.optimizer_transient_known = selected(kMemOptimizerTransient);
  r.embedding_backward_gib = features_.embedding_backward_gib(true);
  r.persistent_rounding_gib = persistent_rounding_gib_[static_cast<size_t>(allocator)];
  const MemoryTerm share = allocator == Allocator::caching ? kMemFragmentation : kMemExpandableFragmentation;
  r.fragmentation_share = m_[share];
  r.fragmentation_known = selected(share);
  r.context_gib = m_[kMemContext];
  r.context_known = selected(kMemContext);
  r.interval = coefficients_.peak_interval;
  return r;
}

MemoryTable StepModel::memory_table(const MicroBatch& batch) const {
  return model::memory_table(features_, features_.memory(batch), m_);
}

}  // namespace stepcast::model
