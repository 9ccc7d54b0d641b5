#pragma once
// The two fits behind calibrate::fit (calibrate/fit.hpp): each fills its part of the report.
#include "calibrate/fit.hpp"
#include <map>
#include <memory>

#include "model/features.hpp"

namespace stepcast::calibrate {

// The features of each record, priced with the adapters it trained (lora_choice): one FeatureMaker per distinct
// LoRA plan among the records.
// A pooled fit keeps one per model and LoRA plan (calibrate/fit.hpp FitShapes).
class RecordFeatures {
 public:
  RecordFeatures(const FitShapes& shapes, const model::TierRules& tier, const model::GpuInfo& gpu,
                 int64_t default_rank, const std::vector<Record>& records,
                 model::ExpertWork expert_work = model::ExpertWork::roofline,
                 model::MemoryWork memory_work = model::MemoryWork::weighted);
  const model::FeatureMaker& of(const Record& record) const;
  // The record's model and adapters: what its steady step is priced with (the run costs' baseline).
  const model::ModelShape& shape_of(const Record& record) const { return shapes_.of(record); }
  model::LoraChoice lora_of(const Record& record) const { return lora_choice(record, default_rank_); }

 private:
  std::string key(const Record& record) const;
  const FitShapes& shapes_;
  int64_t default_rank_;
  std::map<std::string, std::unique_ptr<model::FeatureMaker>> makers_;
};

void fit_step(const RecordFeatures& maker, const std::vector<Record>& records, const FitOptions& o,
              FitReport& report);
void fit_peak(const RecordFeatures& maker, const std::vector<Record>& records, const FitOptions& o,
              FitReport& report);
// After fit_peak: the optimizer step's, the reserved memory's and the context's terms from recorded runs' memory,
// and the interval on the allocated peak from held-out runs (calibrate/fit_run_memory.cpp).
void fit_run_memory(const RecordFeatures& maker, const std::vector<Record>& records, const FitOptions& o,
                    FitReport& report);

}  // namespace stepcast::calibrate
