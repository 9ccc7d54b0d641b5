// What every subcommand prints for scripts, through the real executable: the JSON envelope, CSV that reads
// back, exit codes for CI (--fail-on, drift, validate's bars), --version, progress off a terminal.
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "csv_reader.hpp"
#include "report/build_info.hpp"
#include "report/json_output.hpp"
#include "temp_file.hpp"

using stepcast::testing::read_csv;
using stepcast::testing::run_cli;
using stepcast::testing::slurp;
using stepcast::testing::TempFile;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const std::string kScenario = STEPCAST_SCENARIOS "/h200-gemma-4-26b-a4b.yaml";  // the README's: its baseline OOMs
const std::string kSeed = STEPCAST_SCENARIOS "/seed-sm120.yaml";
const std::string kCoefficients = STEPCAST_SCENARIOS "/coefficients/seed-sm120-hf-sdpa-efficient-sm80-loop.yaml";
const std::string kMeasurements = STEPCAST_MEASUREMENTS "/records/seed-sm120.jsonl";
const std::string kTrace = STEPCAST_TEST_DATA "/traces/h200_unpadded.json.gz";

bool built_with(const std::string& feature) {
  for (const auto& f : stepcast::report::build_features())
    if (f.name == feature) return f.on;
  return false;
}

nlohmann::json json_of(const std::string& args, int expected_exit = 0) {
  const auto r = run_cli(args + " --format json");
  INFO(args << "\n" << r.err);
  REQUIRE(r.exit_code == expected_exit);
  return nlohmann::json::parse(r.out);
}

void check_envelope(const nlohmann::json& j, const std::string& command) {
  INFO(command);
  REQUIRE(j.is_object());
  CHECK(j["schema_version"] == stepcast::report::kJsonSchemaVersion);
  CHECK(j["stepcast_version"] == stepcast::report::stepcast_version());
  CHECK(j["commit"] == stepcast::report::git_commit());
  CHECK(j["command"] == command);
}

// Every row as long as the header, and at least `rows` of them.
stepcast::testing::CsvRows csv_of(const std::string& args, size_t rows) {
  const auto r = run_cli(args + " --format csv");
  INFO(args << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const auto table = read_csv(r.out);
  REQUIRE(table.size() >= rows + 1);
  for (const auto& row : table) CHECK(row.size() == table.front().size());
  return table;
}

size_t column(const stepcast::testing::CsvRows& t, const std::string& name) {
  const auto it = std::find(t.front().begin(), t.front().end(), name);
  REQUIRE(it != t.front().end());
  return static_cast<size_t>(it - t.front().begin());
}

}  // namespace

TEST_CASE("every subcommand's JSON is an object with schema_version and stepcast_version", "[cli][json]") {
  check_envelope(json_of("describe --model gemma-4-26b-a4b"), "describe");
  check_envelope(json_of("plan " + kSeed + " --top 2"), "plan");
  const auto records = json_of("predict --coefficients " + kCoefficients + " --measurements " + kMeasurements);
  check_envelope(records, "predict");
  CHECK(records["records"].size() == 7);
  check_envelope(json_of("predict --coefficients " + kCoefficients + " --rows 2048,1024"), "predict");
  check_envelope(json_of("drift --coefficients " + kCoefficients + " --measurements " + kMeasurements), "drift");
  check_envelope(json_of("kernels " + kTrace), "kernels");
  if (built_with("calibrate")) {
    check_envelope(json_of("validate --measurements " + kMeasurements + " --folds 3"), "validate");
    check_envelope(json_of("calibrate --measurements " + kMeasurements), "calibrate");
  }
}

TEST_CASE("drift and validate JSON carry checks with name, value, bar and passed", "[cli][json][checks]") {
  const auto ok = json_of("drift --coefficients " + kCoefficients + " --measurements " + kMeasurements + " --tolerance 0.10");
  REQUIRE(ok["checks"].size() == 2);  // step_s and peak_gib: the sm_120 study has no OOM record
  for (const auto& c : ok["checks"]) {
    CHECK(c["passed"] == true);
    CHECK(c["bar"] == 0.10);
    CHECK(c["value"].get<double>() <= 0.10);
  }
  const auto bad =
      json_of("drift --coefficients " + kCoefficients + " --measurements " + kMeasurements + " --tolerance 0.009", 1);
  CHECK(bad["checks"][0]["name"] == "step_s_max_error_rel");
  CHECK(bad["checks"][0]["passed"] == false);
  CHECK(bad["checks"][0]["value"].get<double>() > 0.009);
  if (!built_with("calibrate")) return;
  const auto pass = json_of("validate --measurements " + kMeasurements + " --folds 3 --max-step-mape 0.5");
  REQUIRE(pass["checks"].size() == 1);
  CHECK(pass["checks"][0]["name"] == "leave_one_out_step_mape");
  CHECK(pass["checks"][0]["passed"] == true);
  CHECK(pass["checks"][0]["value"] == pass["leave_one_out"]["step"]["mape"]);
  const auto fail = json_of("validate --measurements " + kMeasurements + " --folds 3 --max-step-mape 0.0001", 1);
  CHECK(fail["checks"][0]["passed"] == false);
  CHECK(fail["checks"][0]["bar"] == 0.0001);
}

TEST_CASE("csv output (--format csv) writes the tables, and they read back", "[cli][csv]") {
  const auto j = json_of("plan " + kScenario);
  const auto plans = csv_of("plan " + kScenario, 2);
  CHECK(plans.size() == 2 + j["recommendations"].size());  // header, baseline, recommendations
  CHECK(plans[1][column(plans, "rank")] == "baseline");
  CHECK(plans[1][column(plans, "fits_memory")] == "false");
  CHECK(std::stod(plans[2][column(plans, "wall_clock_s")]) == j["recommendations"][0]["wall_clock_s"].get<double>());
  CHECK(plans[2][column(plans, "label")] == j["recommendations"][0]["label"]);
  const auto predicted = csv_of("predict --coefficients " + kCoefficients + " --measurements " + kMeasurements, 7);
  CHECK(predicted.size() == 8);
  CHECK(std::stod(predicted[1][column(predicted, "step_s")]) == Approx(1.776));
  const auto drift = csv_of("drift --coefficients " + kCoefficients + " --measurements " + kMeasurements, 7);
  CHECK(drift[1][column(drift, "drifted")] == "false");
  const auto modules = csv_of("describe --model gemma-4-26b-a4b", 205);
  size_t lora = 0;
  for (size_t i = 1; i < modules.size(); ++i) lora += modules[i][column(modules, "lora_target")] == "true";
  CHECK(lora == 205);  // describe's JSON: 205 LoRA modules
  if (built_with("calibrate")) csv_of("validate --measurements " + kMeasurements + " --folds 3", 14);
  // Where the output is not a table, csv is refused like any bad value (exit 2).
  CHECK(run_cli("kernels " + kTrace + " --format csv").exit_code == 2);
}

TEST_CASE("plan --fail-on exits 1 after printing, naming the failed check", "[cli][fail-on]") {
  auto r = run_cli("plan " + kScenario + " --fail-on oom");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, StartsWith("DOES NOT FIT:"));
  CHECK_THAT(r.err, Contains("--fail-on: oom (fits_memory: ") && Contains(" against 139.0). DOES NOT FIT:"));
  CHECK(run_cli("plan " + kScenario + " --fail-on window").exit_code == 0);  // 6.4 h of 13.9 h
  CHECK(run_cli("plan " + kScenario + " --fail-on window,truncation").exit_code == 1);  // 467,476 tokens truncated
  // The seed's plan fits at the point estimate, but its equation has no measured whole-run error: at risk.
  const auto risky = run_cli("plan " + kSeed + " --fail-on oom --format json");
  CHECK(risky.exit_code == 1);
  CHECK(nlohmann::json::parse(risky.out)["baseline"]["memory_verdict"] == "at_risk");
  CHECK(run_cli("plan " + kScenario + " --fail-on memory").exit_code == 2);
}

TEST_CASE("the README's plan says DOES NOT FIT on its first line: text, JSON, report", "[cli][headline]") {
  TempFile html("", ".html");
  const auto r = run_cli("plan " + kScenario + " --report " + html.path() + " --force");  // TempFile made it
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, StartsWith("DOES NOT FIT: the baseline (pad-to-longest R2x8 L16384) runs out of memory"));
  CHECK_THAT(r.out, !Contains("fits the window"));
  CHECK_THAT(r.out, Contains("-- keeps every token the baseline keeps:") && Contains("more tokens than the baseline:"));
  CHECK_THAT(r.out, Contains("ranked: plans that fit in memory"));
  const auto j = json_of("plan " + kScenario);
  CHECK_THAT(j["headline"].get<std::string>(), StartsWith("DOES NOT FIT:"));
  CHECK(j["fits"] == false);
  const std::string page = slurp(html.path());
  CHECK(page.find("DOES NOT FIT:") < page.find("<svg"));
}

TEST_CASE("the version flag names the version, the commit and the build's features", "[cli][version]") {
  const auto r = run_cli("--version");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, StartsWith("stepcast " + stepcast::report::stepcast_version() + " (commit " +
                               stepcast::report::git_commit() + ")"));
  for (const char* feature : {"calibrate", "harness", "cupti"})
    CHECK_THAT(r.out, Contains(std::string(feature) + (built_with(feature) ? " on" : " off")));
}

TEST_CASE("progress goes to a terminal only, and the progress flag prints lines without carriage returns", "[cli][progress]") {
  const auto quiet = run_cli("plan " + kScenario);  // stderr is a file here, as in CI
  CHECK(quiet.err.empty());
  const auto forced = run_cli("plan " + kScenario + " --progress");
  CHECK_THAT(forced.err, Contains("plan: simulated 236/236 configurations (100 %)\n"));
  CHECK(forced.err.find('\r') == std::string::npos);
}

TEST_CASE("drift lists each finding once", "[cli][drift]") {
  const auto r = run_cli("drift --coefficients " + kCoefficients + " --measurements " + kMeasurements + " --tolerance 0.009");
  CHECK(r.exit_code == 1);
  const std::string finding = "seed-sm120.jsonl:5: step_s";
  const auto first = r.out.find(finding);
  REQUIRE(first != std::string::npos);
  CHECK(r.out.find(finding, first + 1) == std::string::npos);
  CHECK(r.err.find(finding) == std::string::npos);
  CHECK_THAT(r.err, Contains("4 measurement(s)") && Contains("(listed on stdout)"));
}
