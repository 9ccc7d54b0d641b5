// calibrate --prior-transfer: few shot = the zero-shot transfer of a categories file as the prior, plus a handful
// of probes of the new family (docs/families.md, "Few shot from the transferred prior").
#include <nlohmann/json.hpp>

#include <cmath>

#include "catch.hpp"
#include "cli/fit_options.hpp"
#include "cli/transfer_options.hpp"
#include "cli_runner.hpp"
#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"

using namespace stepcast;
using namespace stepcast::testing;
using Catch::Matchers::Contains;

namespace {
const std::string kScenarios = STEPCAST_SCENARIOS;
const std::string kCategories = kScenarios + "/coefficients/h200-gemma4-categories.yaml";
const std::string kProbes = std::string(STEPCAST_TEST_DATA) + "/fewshot/qwen1.5-moe-a2.7b-probes.jsonl";
const std::string kModel = "qwen1.5-moe-a2.7b";

nlohmann::json json_of(const std::string& args) {
  const auto r = run_cli(args + " --format json");
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

double mean_abs(const nlohmann::json& rows, const char* key) {
  double sum = 0;
  for (const auto& r : rows) sum += std::abs(r[key].get<double>());
  return sum / static_cast<double>(rows.size());
}

double calibrated_gemm(const nlohmann::json& calibrate_out) {
  return calibrate_out["coefficients"]["step"]["gemm_s_per_tflop"]["value"].get<double>();
}
}  // namespace

TEST_CASE("the transferred prior is what predict --model M --transfer predicts with", "[fewshot]") {
  const model::Coefficients categories = io::load_coefficients(kCategories);
  const auto records = calibrate::read_records_required(kProbes);
  const model::Transfer prior = cli::transferred_prior(kCategories, kModel, records);
  // predict --coefficients CATEGORIES --model qwen1.5-moe-a2.7b --transfer (cli/cmd_predict.cpp's call).
  const model::Transfer predict =
      predict::choose_predictor(cli::predictor_ask(kCategories, kModel, {"", "", "", true})).transfer;
  REQUIRE(prior.provenance == predict.provenance);
  CHECK(prior.provenance == std::vector{model::Provenance::transferred_model});
  for (size_t j = 0; j < model::kStepTerms; ++j) {
    CHECK(prior.coefficients.step[j].selected == predict.coefficients.step[j].selected);
    CHECK(prior.coefficients.step[j].value == predict.coefficients.step[j].value);
  }
  for (size_t j = 0; j < model::kMemoryTerms; ++j)
    CHECK(prior.coefficients.memory[j].value == predict.coefficients.memory[j].value);
  CHECK(prior.coefficients.model == kModel);
  // Really carried: the host side is re-priced by the two models' launches, so fixed_s is not Gemma-4's.
  CHECK(prior.coefficients.step[model::kFixed].value != categories.step[model::kFixed].value);
}

TEST_CASE("a fit with the transferred prior moves from the prior toward the probes", "[fewshot]") {
  const auto zero_shot = json_of("predict --coefficients " + kCategories + " --model " + kModel +
                                 " --transfer --measurements " + kProbes);
  const std::string fit = "calibrate --measurements " + kProbes + " --prior " + kCategories + " --prior-transfer";
  const auto loose = json_of(fit + " --prior-sigma 0.5");
  const auto tight = json_of(fit + " --prior-sigma 0.01");
  CHECK_THAT(loose["notes"][0].get<std::string>(), Contains("prior transferred: model 'gemma-4-26b-a4b' -> '" + kModel));
  // The probes' own error falls from the zero-shot transfer's (tens of per cent) as the prior loosens.
  const double zero = mean_abs(zero_shot["records"], "step_error_rel");
  const double tight_err = mean_abs(tight["step_residuals"], "error_rel");
  const double loose_err = mean_abs(loose["step_residuals"], "error_rel");
  CHECK(zero > 0.10);
  CHECK(loose_err < tight_err);
  CHECK(loose_err < 0.5 * zero);
  // And the GEMM rate leaves the prior's value further the looser the prior is.
  const model::Transfer prior = cli::transferred_prior(kCategories, kModel, calibrate::read_records_required(kProbes));
  const double at_prior = prior.coefficients.step[model::kGemm].value;
  CHECK(std::abs(calibrated_gemm(loose) - at_prior) > std::abs(calibrated_gemm(tight) - at_prior));
}

TEST_CASE("calibrate --prior-transfer without a prior file is exit 2", "[fewshot]") {
  const auto r = run_cli("calibrate --measurements " + kProbes + " --prior none --prior-transfer");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--prior-transfer needs --prior PATH"));
}
