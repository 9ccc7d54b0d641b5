// `stepcast campaign ...` as people run it: exit codes (0, 1 a miss or not ready, 2 bad input), messages at
// file:line:col, the refusal to overwrite a registered prediction, the report's formats and --out.
#include <filesystem>
#include <nlohmann/json.hpp>

#include <string>

#include "campaign_fixture.hpp"
#include "catch.hpp"
#include "cli_runner.hpp"

using stepcast::testing::campaign_head;
using stepcast::testing::CampaignRoot;
using stepcast::testing::run_cli;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const std::string kFamilies2 = std::string(STEPCAST_MEASUREMENTS) + "/campaigns/families2.yaml";
const std::string kRecords = std::string(STEPCAST_MEASUREMENTS) + "/records/h200-qwen1.5-moe-a2.7b.jsonl";

}  // namespace

TEST_CASE("campaign check: 0 for the shipped campaign, 2 with every problem located", "[campaign][cli]") {
  const auto ok = run_cli("campaign check " + kFamilies2);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Contains("families2 (measurements/campaigns/families2.yaml): valid"));
  const auto json = run_cli("campaign check " + kFamilies2 + " --format json");
  REQUIRE(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out)["processes"][0]["id"] == "qwen1.5-moe-a2.7b/probes");

  CampaignRoot root;
  const std::string bad = root.campaign("bad", campaign_head("bad") + "items:\n  - {stack: gpu, probes: {points: [3]}}\n");
  const auto r = run_cli("campaign check " + bad);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("bad.yaml:8:13: items[0].stack = 'gpu'"));
  CHECK_THAT(r.err, Contains("bad.yaml:8:36: items[0].probes.points[0] = '3'"));
  CHECK_THAT(r.err, Contains("checks = null"));
  CHECK(run_cli("campaign check " + root.path("measurements/campaigns/none.yaml")).exit_code == 2);
}

TEST_CASE("campaign check names the default predictor when the campaign names no coefficients", "[campaign][cli]") {
  const auto r = run_cli("campaign check " + std::string(STEPCAST_MEASUREMENTS) + "/campaigns/families-runs.yaml");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("predictor the default per-category predictor ("));
  CHECK_THAT(r.out, Contains(") on NVIDIA H200"));
  CHECK_THAT(r.out, !Contains("predictor  on"));
  // A GPU with no default of its own: the H200's, carried by the campaign's transfer, as `campaign predict` does.
  const auto h100 = run_cli("campaign check " + std::string(STEPCAST_MEASUREMENTS) + "/campaigns/h100-transfer.yaml");
  REQUIRE(h100.exit_code == 0);
  CHECK_THAT(h100.out, Contains("h200-hf-peft-pooled.yaml, NVIDIA H200's, carried by the transfer) on NVIDIA H100"));
}

TEST_CASE("campaign predict: a registered prediction is refused, --out writes both elsewhere", "[campaign][cli]") {
  const auto refused = run_cli("campaign predict " + kFamilies2);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Contains("families2-merged.jsonl: exists. Violated constraint: a pre-registered prediction is "
                                   "never overwritten"));
  CampaignRoot root;
  const auto dry = run_cli("campaign predict " + kFamilies2 + " --out " + root.path("dry") + " --format json");
  REQUIRE(dry.exit_code == 0);
  const auto j = nlohmann::json::parse(dry.out);
  CHECK(j["lines"] == 12);
  CHECK(j["processes"] == 1);
  CHECK(std::filesystem::is_regular_file(root.path("dry/families2-merged.jsonl")));
  CHECK(std::filesystem::is_regular_file(root.path("dry/families2.plan.json")));
}

TEST_CASE("campaign ready: 1 naming what to commit", "[campaign][cli]") {
  CampaignRoot root;
  const std::string c = root.campaign("r", campaign_head("r") + R"(items:
  - {model: tests/data/configs/tiny-llama.json, stack: hf-peft, lora: {targets: [q_proj]}, time_limit_s: 9,
     probes: {points: [1x64]}}
checks:
  - {metric: step_time, goal: {error: 0.1}}
)");
  const auto r = run_cli("campaign ready " + c);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("is not a git repository"));
}

TEST_CASE("campaign report: misses first and exit 1, json, csv, --out atomic and never over an input", "[campaign][cli]") {
  const auto md = run_cli("campaign report " + kFamilies2 + " --records " + kRecords);
  CHECK(md.exit_code == 1);
  CHECK_THAT(md.out, StartsWith("MISS qwen1.5-moe-a2.7b/probes step_time: MAPE 36.5 %, max +67.0 %"));
  CHECK_THAT(md.out, Contains("| qwen1.5-moe-a2.7b/probes | peak_allocated | 12 | 37.15 GiB | 37.04 GiB | +0.3 % | "
                              "0.3 % | +0.4 % | within 5 % | pass |"));
  CHECK_THAT(md.err, Contains("check failed: 1 check row(s) missed their goal"));
  const auto json = run_cli("campaign report " + kFamilies2 + " --records " + kRecords + " --format json");
  CHECK(json.exit_code == 1);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["rows"].size() == 2);
  CHECK(j["misses"].size() == 1);
  const auto csv = run_cli("campaign report " + kFamilies2 + " --records " + kRecords + " --format csv");
  CHECK_THAT(csv.out, StartsWith("item,metric,unit,n,predicted,measured,mean_error_rel,mape_rel,max_error_rel,goal,"));

  CampaignRoot root;
  const std::string out = root.path("table.md");
  CHECK(run_cli("campaign report " + kFamilies2 + " --records " + kRecords + " --out " + out).exit_code == 1);
  CHECK_THAT(root.read("table.md"), Contains("| qwen1.5-moe-a2.7b/probes | step_time | 12 |"));
  const auto again = run_cli("campaign report " + kFamilies2 + " --records " + kRecords + " --out " + out);
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.err, Contains("--force"));
  CHECK(run_cli("campaign report " + kFamilies2 + " --records " + kRecords + " --out " + kRecords + " --force")
            .exit_code == 2);
  CHECK(run_cli("campaign report " + kFamilies2 + " --records " + root.path("nowhere")).exit_code == 2);
}

TEST_CASE("campaign --help teaches the flow with examples", "[campaign][cli]") {
  const auto r = run_cli("campaign --help");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("Examples:"));
  CHECK_THAT(r.out, Contains("stepcast campaign report measurements/campaigns/families2.yaml"));
  for (const char* verb : {"check", "predict", "ready", "report"}) {
    CAPTURE(verb);
    CHECK_THAT(run_cli(std::string("campaign ") + verb + " --help").out, Contains("Examples:"));
  }
}
