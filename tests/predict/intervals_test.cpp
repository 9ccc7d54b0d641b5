// The measured intervals are what the committed records say of today's default predictor: the model-transfer
// row of model/intervals.cpp and each stack's error (model/stacks.cpp) are recomputed here from the records they
// cite, so a recalibrated default predictor cannot keep a stale interval (docs/method.md, "Intervals").
#include <cmath>

#include "calibrate/records.hpp"
#include "catch.hpp"
#include "model/intervals.hpp"
#include "model/stacks.hpp"
#include "predict/coverage.hpp"

using namespace stepcast;

namespace {
const std::string kRecords = std::string(STEPCAST_MEASUREMENTS) + "/records/";

std::vector<calibrate::Record> read_all(const std::vector<std::string>& files) {
  std::vector<calibrate::Record> out;
  for (const auto& f : files)
    for (auto& r : calibrate::read_records_required(kRecords + f)) out.push_back(std::move(r));
  return out;
}

const predict::CoverageGroup* group(const predict::CoverageReport& c, const std::string& kind, bool padded) {
  for (const auto& g : c.groups)
    if (g.kind == kind && g.padded == padded) return &g;
  return nullptr;
}
}  // namespace

TEST_CASE("the model-transfer interval is the conformal 90 % of the default predictor on families it never saw",
          "[intervals][golden]") {
  const auto records = read_all({"h200-llama-3-8b.jsonl", "h200-mixtral-8x7b.jsonl", "h200-qwen1.5-moe-a2.7b.jsonl",
                                 "h200-qwen3-30b-a3b.jsonl", "h200-transfer3/transfer3-qwen2.5-7b.jsonl",
                                 "h200-fewshot-check/h200-qwen2.5-7b-new-shapes.jsonl",
                                 "h200-fewshot-check/h200-qwen1.5-moe-a2.7b-new-shapes.jsonl",
                                 "h200-hf-peft-mixtral-8x7b.jsonl", "h200-hf-peft-qwen3-30b-a3b.jsonl"});
  predict::PredictorAsk base;
  base.transfer = true;  // Llama-3-8B's forced-backend records are a tier transfer besides
  const auto c = predict::interval_coverage(records, base);
  const model::IntervalSpec& row = model::kIntervalTable[model::kModelTransfer];
  for (bool padded : {false, true}) {
    INFO((padded ? "padded" : "unpadded"));
    const auto* g = group(c, "transferred-model", padded);
    REQUIRE(g != nullptr);
    CHECK(g->points == (padded ? row.points_padded : row.points_unpadded));
    CHECK(g->conformal == Approx(row.half_width.at(padded)).margin(0.0005));
    // In sample, by construction: at least 90 % inside.
    CHECK(g->share() >= 0.9);
  }
}

TEST_CASE("the conformal rule covers about 90 % of points it did not see", "[intervals]") {
  // Exchangeable points: the quantile of 19 covers a 20th at least 90 % of the time, over every choice of the 20th.
  std::vector<double> e;
  for (int i = 0; i < 20; ++i) e.push_back(0.01 * (i * 7 % 20 + 1));
  int inside = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    std::vector<double> others = e;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    inside += e[i] <= model::conformal_half_width(others) ? 1 : 0;
  }
  CHECK(inside == 18);  // 90 %: the two largest fall outside the quantile of the others
}

TEST_CASE("each stack's error is what the default predictor makes of that stack's records", "[intervals][stacks][golden]") {
  struct Case {
    std::string stack;
    std::vector<std::string> files;
  };
  for (const Case& k : {Case{"transformers-peft",
                             {"h200-hf-peft.jsonl", "h200-hf-peft-host.jsonl", "h200-hf-peft-host-m3.jsonl",
                              "h200-hf-peft-host-m4.jsonl"}},
                        Case{"harness", {"h200-harness-host.jsonl"}}}) {
    INFO(k.stack);
    const model::StackSpec& stack = model::stack_named(k.stack);
    std::vector<double> host, device;
    for (const auto& r : read_all(k.files)) {
      const auto probe = r.extra.find("probe");
      if (!r.step_s || r.oom || (probe != r.extra.end() && *probe == "run")) continue;
      predict::PredictorAsk ask;
      ask.model = r.model;
      ask.gpu = r.gpu;
      ask.tier = r.tier;
      ask.tier_from_records = true;
      const auto p = predict::choose_predictor(ask);
      REQUIRE(p.stack == &stack);
      const auto m = p.step_model(calibrate::lora_choice(r, p.transfer.coefficients.lora_rank));
      const auto b = calibrate::to_batch(r);
      const auto sides = m->sides(b);
      (sides.host_bound() ? host : device).push_back(model::ratio_error(*r.step_s, sides.step_s));
    }
    CHECK(static_cast<int64_t>(host.size()) == stack.error_points_host_bound);
    CHECK(model::conformal_half_width(host) == Approx(stack.error.host_bound).margin(0.0005));
    if (stack.error_points_device_bound > 0) {
      CHECK(static_cast<int64_t>(device.size()) == stack.error_points_device_bound);
      CHECK(model::conformal_half_width(device) == Approx(stack.error.device_bound).margin(0.0005));
    }
  }
}
