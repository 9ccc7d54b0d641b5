// stepcast measure --suggest N --scenario S (cli/measure_suggest.cpp): answered without a GPU or the harness.
#include <nlohmann/json.hpp>
#include <set>

#include "catch.hpp"
#include "cli_runner.hpp"

using namespace stepcast::testing;
using Catch::Matchers::Contains;

namespace {
const std::string kScenarios = STEPCAST_SCENARIOS;
const std::string kMeasurements = STEPCAST_MEASUREMENTS;
const std::string kScenario = kScenarios + "/h200-gemma-4-26b-a4b.yaml";
const std::string kRecords = kMeasurements + "/records/h200-hf-peft.jsonl";
}  // namespace

TEST_CASE("measure --suggest proposes N distinct probes of the scenario's shapes, each lowering the wall-clock variance",
          "[suggest]") {
  const auto r = run_cli("measure --suggest 3 --scenario " + kScenario + " --measurements " + kRecords + " --format json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["suggested"].size() == 3);
  double before = j["variance_before"];
  std::set<std::string> points;
  for (const auto& s : j["suggested"]) {
    const std::string point = s["point"];
    CHECK((point.rfind("scaling:2x", 0) == 0 || point.rfind("padding:2x", 0) == 0));  // micro_batch: 2
    points.insert(point);
    CHECK(s["variance_after"].get<double>() < before);
    before = s["variance_after"];
  }
  CHECK(points.size() == 3);
}

TEST_CASE("measure --suggest refuses a count below 1 and a missing scenario with exit 2", "[suggest]") {
  auto r = run_cli("measure --suggest 0 --scenario " + kScenario);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("at least 1 probe"));
  r = run_cli("measure --suggest 2 --scenario /nonexistent/scenario.yaml");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("/nonexistent/scenario.yaml"));
  r = run_cli("measure --suggest 2");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--scenario"));
}
