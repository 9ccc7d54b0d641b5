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
  // The adapters a measurement record trained instead of the coefficients' rank on the default targets.
  StepModel(const ModelShape& shape, const Coefficients& coefficients, const GpuInfo& gpu, const LoraChoice& lora);
  // The same from the shape's module table, expanded once by the caller (model/modules.hpp).
  StepModel(const ModelShape& shape, const ModuleTable& modules, const Coefficients& coefficients, const GpuInfo& gpu,
            const LoraChoice& lora);

  double step_s(const MicroBatch& batch) const override;
  double peak_gib(const MicroBatch& batch) const override;  // a micro-batch of steady training (all state alive)
  // The peak where a record sits: a probe step (no optimizer step ever ran: FeatureMaker::probe_base_gib) or a run's
  // micro-batch (its state then, and the run-only terms): what a record measured (calibrate::run_position).
  double peak_gib(const MicroBatch& batch, const RunPosition& at) const;
  double probe_peak_gib(const MicroBatch& batch) const { return peak_gib(batch, RunPosition{}); }
  double first_seen_s(const MicroBatch& batch) const override;  // first_seen_s per graph x the batch's graphs
  uint32_t first_seen_graphs(const MicroBatch& batch) const override { return features_.cudnn_graphs(batch); }
  double run_start_s() const override;
  // The fitted optimizer step (LoRA: clip, AdamW over the adapters, zero_grad), plus under full fine-tuning the
  // update of every parameter at what the GPU's copies achieve (full_update_s).
  double optimizer_step_s() const override;
  double optimizer_update_s() const override { return full_update_s(); }
  // Full fine-tuning's AdamW and clip over every parameter: FeatureMaker::optimizer_update_bytes at the bandwidth
  // the public copy measurements give this GPU for one of its passes (model/gpu_efficiency.hpp); 0 under LoRA.
  double full_update_s() const { return full_update_s_; }
  MemoryParts memory_parts(const MicroBatch& batch) const override;
  RunMemory run_memory(Allocator allocator) const override;

  // Which side bounds a micro-batch: the two sides apart and their smooth maximum (step_s).
  using Sides = StepSides;
  Sides sides(const MicroBatch& batch) const;
  StepSides step_sides(const MicroBatch& batch) const override { return sides(batch); }
  MemoryTable memory_table(const MicroBatch& batch) const;

  const FeatureMaker& features() const { return features_; }
  const Coefficients& coefficients() const { return coefficients_; }

 private:
  double peak_of(const MemoryFeatures& y) const;  // the file's memory terms over y, GiB
  FeatureMaker features_;
  Coefficients coefficients_;
  std::array<double, kStepTerms> c_{};
  std::array<double, kMemoryTerms> m_{};
  std::array<double, kRunTerms> run_{};
  // Segments the allocator reserves for the persistent tensors beyond their bytes, by Allocator (model/allocator.hpp).
  std::array<double, 2> persistent_rounding_gib_{};
  double full_update_s_ = 0;  // full_update_s(), computed once: the optimizer step is asked for every window
};

}  // namespace stepcast::model
