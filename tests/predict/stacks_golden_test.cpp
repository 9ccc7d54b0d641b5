// Each stack's host figures are what their documented fits give (model/stacks.cpp): transformers + peft's from
// its host records fitted with Gemma-4's calibrated device rates held as a prior, the harness's from its
// shipped run file; both per launch of model/launches.hpp's count for Gemma-4.
#include "calibrate/fit.hpp"
#include "calibrate/records.hpp"
#include "catch.hpp"
#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/launches.hpp"
#include "model/stacks.hpp"
#include "predict/predictor.hpp"

using namespace stepcast;

namespace {
const std::string kRecords = std::string(STEPCAST_MEASUREMENTS) + "/records/";
const std::string kCoefficients = std::string(STEPCAST_SCENARIOS) + "/coefficients/";

double gemma_launches() {
  const model::ModelShape gemma = io::load_model("gemma-4-26b-a4b");
  return model::LaunchModel(gemma, model::tier_from_label(model::kDefaultTier), 16).per_step_all_experts();
}
}  // namespace

TEST_CASE("transformers + peft's host figures are the fit of its host records on Gemma-4's device rates",
          "[stacks][golden]") {
  std::vector<calibrate::Record> records;
  for (const char* f : {"h200-hf-peft-host.jsonl", "h200-hf-peft-host-m3.jsonl", "h200-hf-peft-host-m4.jsonl"})
    for (auto& r : calibrate::read_records_required(kRecords + f)) records.push_back(std::move(r));
  calibrate::FitOptions o;
  // Gemma-4's own calibrated device side: the host records are Gemma-4's (the stack's rate per launch is then
  // carried to every family by its launches; docs/host.md).
  o.prior = io::load_coefficients(kCoefficients + "h200-gemma4-categories.yaml");
  o.prior_rel_sigma = 0.02;
  const model::Coefficients fit = calibrate::fit(io::load_model("gemma-4-26b-a4b"), records, o).coefficients;
  REQUIRE(fit.step[model::kHost].selected);
  const model::StackSpec& s = model::stack_named("transformers-peft");
  // The fit's host floor (its rate x the profiler's launch count) over launches.* count of the same step.
  CHECK(fit.step[model::kHost].value * fit.launches_per_step / gemma_launches() == Approx(s.host_s_per_klaunch).epsilon(0.002));
  CHECK(fit.overlap_exponent == s.overlap_exponent);
  // The run one-offs are the shipped transformers + peft file's (docs/host.md).
  const model::Coefficients shipped = io::load_coefficients(kCoefficients + "h200-hf-peft-sdpa-grouped_mm.yaml");
  for (int i = 0; i < model::kRunTerms; ++i) CHECK(s.run_s[i] == shipped.run[i].value);
}

TEST_CASE("the harness's host figures are its shipped run file's", "[stacks][golden]") {
  const model::Coefficients c = io::load_coefficients(kCoefficients + "h200-gemma4-harness-run.yaml");
  const model::StackSpec& s = model::stack_named("harness");
  CHECK(c.step[model::kHost].value * c.launches_per_step / gemma_launches() == Approx(s.host_s_per_klaunch).epsilon(0.002));
  CHECK(c.overlap_exponent == s.overlap_exponent);
  for (int i = 0; i < model::kRunTerms; ++i) CHECK(s.run_s[i] == c.run[i].value);
}
