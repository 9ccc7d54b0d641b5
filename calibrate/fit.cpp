#include "calibrate/fit.hpp"

#include <algorithm>
#include <ctime>

#include "calibrate/fit_parts.hpp"
#include "calibrate/run_costs.hpp"
#include "calibrate/solve.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/features.hpp"
#include "model/tiers.hpp"

namespace stepcast::calibrate {

namespace {

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The shapes of the records the step fit used (its residual rows name them by file and line).
model::ShapeDomain step_domain(const std::vector<Record>& records, const std::vector<StepResidualRow>& fitted) {
  model::ShapeDomain d;
  for (const Record& r : records) {
    const bool used = std::any_of(fitted.begin(), fitted.end(),
                                  [&](const StepResidualRow& s) { return s.line == r.line && s.file == r.file; });
    if (!used) continue;
    const int64_t rows = static_cast<int64_t>(r.rows.size()), tokens = r.padded_tokens();
    if (!d.known) d = {true, rows, rows, r.width, r.width, tokens, tokens};
    d.rows_min = std::min(d.rows_min, rows);
    d.rows_max = std::max(d.rows_max, rows);
    d.width_min = std::min(d.width_min, r.width);
    d.width_max = std::max(d.width_max, r.width);
    d.tokens_min = std::min(d.tokens_min, tokens);
    d.tokens_max = std::max(d.tokens_max, tokens);
  }
  return d;
}

}  // namespace

const model::ModelShape& FitShapes::of(const Record& record) const {
  if (single_) return *single_;
  const auto it = by_model_.find(record.model);
  if (it == by_model_.end())
    throw InputError(record.where() + ": model '" + record.model + "'. Violated constraint: a model the pooled fit loaded");
  return it->second;
}

std::vector<std::string> FitShapes::names() const {
  if (single_) return {single_->name};
  std::vector<std::string> out;
  for (const auto& [name, shape] : by_model_) out.push_back(name);
  return out;
}

RecordFeatures::RecordFeatures(const FitShapes& shapes, const model::TierRules& tier, const model::GpuInfo& gpu,
                               int64_t default_rank, const std::vector<Record>& records, model::ExpertWork expert_work,
                               model::MemoryWork memory_work)
    : shapes_(shapes), default_rank_(default_rank) {
  std::map<std::string, std::vector<Record>> by_model;
  for (const Record& r : records) by_model[shapes.pooled() ? r.model : ""].push_back(r);
  for (const auto& [name, mine] : by_model) {
    const model::ModelShape& shape = shapes.of(mine.front());
    check_lora_targets(mine, model::lora_able_names(shape), shape.name);
  }
  for (const Record& r : records) {
    auto& maker = makers_[key(r)];
    if (!maker) maker = std::make_unique<model::FeatureMaker>(shapes.of(r), model::expand_modules(shapes.of(r)), tier, gpu,
                                                              lora_of(r), expert_work, memory_work);
  }
}

std::string RecordFeatures::key(const Record& record) const {
  return (shapes_.pooled() ? record.model + "|" : "") + lora_key(lora_of(record));
}

const model::FeatureMaker& RecordFeatures::of(const Record& record) const { return *makers_.at(key(record)); }

void check_uniform(const std::vector<Record>& records, const std::string& file, bool pooled) {
  if (records.empty()) throw InputError(file + ": no records. Violated constraint: at least 2 records");
  std::vector<std::string> problems;
  const Record& first = records.front();
  for (const Record& r : records) {
    auto differs = [&](const char* field, const std::string& a, const std::string& b) {
      if (a != b)
        problems.push_back((r.file.empty() ? file : r.file) + ":" + std::to_string(r.line) + ": " + field + " = '" + a + "' but line " +
                           first.where() + " has '" + b +
                           "'. Violated constraint: one model, GPU and tier per fit (filter with --tier/--gpu)");
    };
    if (!pooled) differs("model", r.model, first.model);
    differs("gpu", r.gpu, first.gpu);
    differs("tier", r.tier, first.tier);
  }
  if (!problems.empty()) throw InputError(problems);
}

FitReport fit(const FitShapes& shapes, const std::vector<Record>& records, const FitOptions& options) {
  if (options.residuals != "relative" && options.residuals != "absolute")
    throw InputError("--residuals = '" + options.residuals + "'. Violated constraint: relative or absolute");
  if (options.loss != "none" && options.loss != "huber" && options.loss != "cauchy")
    throw InputError("--loss = '" + options.loss + "'. Violated constraint: one of none, huber, cauchy");
  if (records.empty()) throw InputError("calibrate: no records to fit");
  FitReport report;
  auto& c = report.coefficients;
  c.model = shapes.pooled() ? model::kPooledModel : records.front().model;
  if (shapes.pooled()) c.models = shapes.names();
  c.gpu = records.front().gpu;
  c.tier = records.front().tier;
  c.tool_version = options.tool_version;
  c.date = options.date.empty() ? now_utc() : options.date;
  c.loss = options.loss;
  if (options.prior) {
    c.lora_rank = options.prior->lora_rank;
    c.prior = options.prior_name.empty() ? "given" : options.prior_name;
    report.notes.push_back("prior: " + c.prior + " (" + options.prior->gpu + ", tier " + options.prior->tier +
                           ", " + std::to_string(options.prior->points) + " points), each coefficient ±" +
                           fmt(options.prior_rel_sigma * 100) + " % against 1 % step noise");
  }
  // A prior's expert rate is per its own work: the fit prices the experts as the prior did (per FLOP in files
  // written before the roofline), and by the roofline without one (docs/method.md, "Experts by tokens per expert").
  c.expert_work = !options.expert_work.empty() ? options.expert_work
                  : options.prior                ? options.prior->expert_work
                                                 : "roofline";
  // So is its memory-bound rate (docs/method.md, "Memory-bound work").
  c.memory_work = !options.memory_work.empty() ? options.memory_work
                  : options.prior                ? options.prior->memory_work
                                                 : "weighted";
  const model::TierRules tier = model::tier_from_label(c.tier);
  const RecordFeatures maker(shapes, tier, model::gpu_info(c.gpu), c.lora_rank, records,
                             model::expert_work_from(c.expert_work), model::memory_work_from(c.memory_work));
  if (!tier.known)
    report.notes.push_back("tier '" + c.tier + "' is not a known label: Hugging Face sdpa mask semantics assumed, every "
                           "term free (the mask-path term included); the data decide");
  fit_step(maker, records, options, report);
  c.domain = step_domain(records, report.step_residuals);
  fit_peak(maker, records, options, report);
  fit_run_memory(maker, records, options, report);
  fit_run_costs(shapes, records, options.records_file, c, report.notes);
  return report;
}

}  // namespace stepcast::calibrate
