#include "predict/coverage.hpp"

#include <map>
#include <memory>
#include <tuple>

#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/intervals.hpp"

namespace stepcast::predict {
namespace {

// The records one predictor prices: one model, GPU and tier label.
using GroupKey = std::tuple<std::string, std::string, std::string>;

PredictorAsk ask_for(const PredictorAsk& base, const calibrate::Record& r) {
  PredictorAsk ask = base;
  if (ask.model.empty()) ask.model = r.model;
  if (ask.coefficients.empty()) {
    if (ask.gpu.empty()) ask.gpu = r.gpu;
    if (ask.tier.empty()) {
      ask.tier = r.tier;
      ask.tier_from_records = true;
    }
  }
  return ask;
}

std::string kind_of(const model::Transfer& t) {
  std::string kind;
  for (auto p : t.provenance) {
    // Appended piece by piece: GCC 12's -Wrestrict misfires on `"+" + std::string` here.
    if (!kind.empty()) kind += '+';
    kind += model::provenance_name(p);
  }
  return kind;
}

bool counts(const calibrate::Record& r) {
  const auto probe = r.extra.find("probe");
  return r.step_s && !r.oom && !(probe != r.extra.end() && *probe == "run");
}

void price(const std::vector<calibrate::Record>& records, const Predictor& p, CoverageReport& out) {
  calibrate::check_lora_targets(records, model::lora_able_names(p.modules), p.shape.name);
  std::map<std::string, std::unique_ptr<model::StepModel>> models;  // one per LoRA plan
  for (const calibrate::Record& rec : records) {
    const calibrate::Record* r = &rec;
    const model::LoraChoice lora = calibrate::lora_choice(*r, p.transfer.coefficients.lora_rank);
    auto& m = models[calibrate::lora_key(lora)];
    if (!m) m = p.step_model(lora);
    const model::MicroBatch b = calibrate::to_batch(*r);
    const model::Transfer t = model::at_shape(p.transfer, static_cast<int64_t>(b.rows.size()), b.width);
    const double step = m->step_s(b);
    CoveragePoint point{r->where(), p.shape.name, kind_of(t), b.has_padding(), model::ratio_error(*r->step_s, step),
                        model::step_half_width(t, m->features().step(b), step, b.has_padding()), false};
    point.inside = point.ratio_error <= point.half_width;
    point.host_bound = m->sides(b).host_bound();
    out.points.push_back(point);
  }
}

void summarise(CoverageReport& out) {
  std::map<std::pair<std::string, bool>, std::vector<const CoveragePoint*>> by_kind;
  for (const auto& p : out.points) by_kind[{p.kind, p.padded}].push_back(&p);
  for (const auto& [key, points] : by_kind) {
    CoverageGroup g;
    g.kind = key.first;
    g.padded = key.second;
    std::vector<double> errors;
    for (const CoveragePoint* p : points) {
      ++g.points;
      g.inside += p->inside ? 1 : 0;
      g.stated_half_width = std::max(g.stated_half_width, p->half_width);
      errors.push_back(p->ratio_error);
    }
    g.conformal = model::conformal_half_width(errors);
    for (const CoveragePoint* p : points) {
      std::vector<double> others;
      for (const CoveragePoint* q : points)
        if (q->model != p->model) others.push_back(q->ratio_error);
      if (others.empty()) continue;
      ++g.other_models_points;
      g.other_models_inside += p->ratio_error <= model::conformal_half_width(others) ? 1 : 0;
    }
    out.groups.push_back(g);
  }
}

}  // namespace

CoverageReport interval_coverage(const std::vector<calibrate::Record>& records, const PredictorAsk& base) {
  std::map<GroupKey, std::vector<calibrate::Record>> groups;
  std::vector<GroupKey> order;
  for (const auto& r : records) {
    if (!counts(r)) continue;
    const GroupKey key{base.model.empty() ? r.model : base.model, r.gpu, r.tier};
    if (groups.find(key) == groups.end()) order.push_back(key);
    groups[key].push_back(r);
  }
  CoverageReport out;
  for (const GroupKey& key : order) {
    const auto& group = groups[key];
    Predictor p;
    try {
      p = choose_predictor(ask_for(base, group.front()));
    } catch (const InputError& e) {
      throw InputError(group.front().where() + ": " + e.what());
    }
    out.predictors.push_back(p.first_line);
    price(group, p, out);
  }
  if (out.points.empty())
    throw InputError("validate --coverage: no record with a step time to hold against its interval. Violated "
                     "constraint: at least one measured step (not OOM, not a recorded run's micro-batch)");
  summarise(out);
  return out;
}

}  // namespace stepcast::predict
