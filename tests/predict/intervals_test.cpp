// The measured intervals are what the committed records say: the model-transfer row of model/intervals.cpp (the
// default's recipe with each family left out) and each stack's error (model/stacks.cpp) are recomputed here from
// the records and files they cite, so a recalibrated default predictor cannot keep a stale interval
// (docs/method.md, "Intervals").
#include <cmath>
#include <filesystem>
#include <set>

#include "calibrate/records.hpp"
#include "catch.hpp"
#include "io/coefficients_io.hpp"
#include "model/intervals.hpp"
#include "model/stacks.hpp"
#include "predict/coverage.hpp"

using namespace stepcast;

namespace {
const std::string kRecords = std::string(STEPCAST_MEASUREMENTS) + "/records/";
// The families the shipped default was fitted on, as its file lists them.
std::set<std::string> pooled_models() {
  const auto c = io::load_coefficients(std::string(STEPCAST_SCENARIOS) + "/coefficients/h200-hf-peft-pooled.yaml");
  return {c.models.begin(), c.models.end()};
}

std::vector<calibrate::Record> read_all(const std::vector<std::string>& files) {
  std::vector<calibrate::Record> out;
  for (const auto& f : files)
    for (auto& r : calibrate::read_records_required(kRecords + f)) out.push_back(std::move(r));
  return out;
}

}  // namespace

TEST_CASE("the model-transfer interval is the conformal 90 % of every held-out model's device-bound probes",
          "[intervals][golden]") {
  // Each of the default's five families, predicted by the same recipe fitted without it (tools/fit_default.sh
  // --leave-out; scenarios/coefficients/held-out/): its probes' ratio errors, unpadded and padded.
  std::vector<double> errors[2];
  int host_bound = 0;
  for (const std::string family : {"llama-3-8b", "qwen1.5-moe-a2.7b", "gemma-2-9b", "phi-4", "deepseek-v2-lite"}) {
    INFO(family);
    const std::string dir = family == "deepseek-v2-lite" ? "h200-families-runs-deepseek" : "h200-families-runs";
    const auto records = read_all({dir + "/records/" + family + "__probes.jsonl"});
    predict::PredictorAsk base;
    base.coefficients = std::string(STEPCAST_SCENARIOS) + "/coefficients/held-out/h200-hf-peft-pooled-without-" + family + ".yaml";
    base.stack = "transformers-peft";
    base.dtype = "bfloat16";  // Gemma-2's config says float32; its runs loaded bfloat16
    for (const auto& p : predict::interval_coverage(records, base).points) {
      CHECK(p.kind == "transferred-model");
      if (p.host_bound) {  // the stack's error bounds these (model/intervals.cpp)
        ++host_bound;
        CHECK(p.half_width == Approx(model::default_stack().error.host_bound));
        continue;
      }
      errors[p.padded ? 1 : 0].push_back(p.ratio_error);
    }
  }
  CHECK(host_bound == 2);  // Qwen1.5-MoE's and DeepSeek-V2-Lite's 1 x 2048
  // Every model the shipped default was never fitted on: its probes, by the default, inside the fitted domain.
  std::set<std::string> models;
  const std::set<std::string> pooled = pooled_models();
  for (const auto& entry : std::filesystem::directory_iterator(kRecords)) {
    const std::string dir = entry.path().filename().string();
    if (dir.rfind("h200-", 0) != 0 || !entry.is_directory() || !std::filesystem::exists(entry.path() / "records")) continue;
    for (const auto& file : std::filesystem::directory_iterator(entry.path() / "records")) {
      const std::string name = file.path().filename().string();
      if (name.size() < 14 || name.substr(name.size() - 14) != "__probes.jsonl") continue;
      const auto records = calibrate::read_records_required(file.path().string());
      if (records.empty() || records.front().tier.rfind("hf-peft", 0) != 0 || pooled.contains(records.front().model)) continue;
      predict::PredictorAsk base;
      base.stack = "transformers-peft";
      base.dtype = "bfloat16";
      for (const auto& p : predict::interval_coverage(records, base).points) {
        if (p.kind != "transferred-model") continue;  // outside the fitted domain: the extrapolated kind adds its own
        if (p.host_bound) {
          ++host_bound;
          continue;
        }
        models.insert(p.model);
        errors[p.padded ? 1 : 0].push_back(p.ratio_error);
      }
    }
  }
  CHECK(models.size() == 16);
  CHECK(host_bound == 7);  // the five families' two and five more (model/intervals.cpp)
  const model::IntervalSpec& row = model::kIntervalTable[model::kModelTransfer];
  CHECK(static_cast<int64_t>(errors[0].size()) == row.points_unpadded);
  CHECK(static_cast<int64_t>(errors[1].size()) == row.points_padded);
  CHECK(model::conformal_half_width(errors[0]) == Approx(row.half_width.unpadded).margin(0.0005));
  CHECK(model::conformal_half_width(errors[1]) == Approx(row.half_width.padded).margin(0.0005));
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

TEST_CASE("each stack's error is what its host side adds to Gemma-4's calibrated device side on that stack's records", "[intervals][stacks][golden]") {
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
      // Gemma-4's own calibrated device side (the records are Gemma-4's), the stack's host side: what the
      // stack's host adds. A stack's label ("hf-peft/...") is a stack question, not a tier.
      predict::PredictorAsk ask;
      ask.model = r.model;
      ask.gpu = r.gpu;
      ask.coefficients = std::string(STEPCAST_SCENARIOS) + "/coefficients/h200-gemma4-categories.yaml";
      ask.stack = k.stack;
      ask.tier = stack.record_tier_prefix.empty() ? r.tier : "";
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
