// The reporters without the program: units by magnitude, CSV quoting, the JSON envelope, and the plan's
// headline, groups and HTML report on plans built by hand.
#include <nlohmann/json.hpp>

#include <sstream>
#include <tuple>

#include "catch.hpp"
#include "csv_reader.hpp"
#include "report/build_info.hpp"
#include "report/csv.hpp"
#include "report/format.hpp"
#include "report/json_output.hpp"
#include "report/plan_output.hpp"
#include "report/report_html.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

planner::PlanResult plan(double wall_s, int64_t truncated_tokens = 0) {
  planner::PlanResult p;
  p.batching.policy = planner::Policy::pad_to_longest;
  p.batching.micro_batch = 2;
  p.batching.max_length = 16384;
  p.accumulation = 8;
  p.wall_clock_s = wall_s;
  p.real_tokens = 1'000'000;
  p.truncated.tokens = truncated_tokens;
  p.peak_gib = 100;
  p.memory_limit_gib = 139.8;
  p.memory.verdict = planner::MemoryVerdict::fits;  // at the interval's upper bound
  p.memory.limit_gib = p.memory.usable_gib = 139.8;
  p.memory.need_gib = p.memory.need_high_gib = 100;
  p.memory.margin_gib = 39.8;
  return p;
}

struct Fixture {
  planner::Corpus corpus;
  report::PlanOutput out;
  explicit Fixture(planner::PlanResult baseline, std::vector<planner::PlanResult> recommendations = {}) {
    corpus.lengths = {100, 200, 300};
    out.scenario = "hand-made";
    out.gpu_name = "NVIDIA H200";
    out.gpu_memory_gib = 139.8;
    out.window_hours = 13.9;
    out.corpus = &corpus;
    out.corpus_source = "three lengths";
    out.predictor = "none";
    out.result.baseline = std::move(baseline);
    out.result.recommendations = std::move(recommendations);
    out.result.configurations = static_cast<int64_t>(out.result.recommendations.size());
  }
};

planner::PlanResult out_of_memory(double wall_s) {
  planner::PlanResult p = plan(wall_s);
  p.fits_memory = false;
  p.peak_gib = 182.1;
  p.memory.verdict = planner::MemoryVerdict::out_of_memory;
  p.memory.need_gib = p.memory.need_high_gib = 182.1;
  p.memory.margin_gib = 139.8 - 182.1;
  p.oom = planner::OutOfMemory{41, 6, 2, 11358, 140.5, 139.8};
  return p;
}

std::string html_of(const report::PlanOutput& out) {
  report::ReportInput in;
  in.plan = &out;
  return report::report_html(in);
}

}  // namespace

TEST_CASE("durations pick s, min or h by magnitude: 36 s, 40 min, 6 h", "[report][units]") {
  CHECK(report::duration(36) == "36.0 s");
  CHECK(report::duration(40 * 60) == "40.0 min");
  CHECK(report::duration(6 * 3600) == "6.00 h");
  CHECK(report::time_unit_for(36).long_name == "seconds");
  CHECK(report::time_unit_for(40 * 60).long_name == "minutes");
  CHECK(report::time_unit_for(6 * 3600).long_name == "hours");
}

TEST_CASE("the report's wall-clock axis and bars read in the plans' own unit", "[report][units][html]") {
  for (const auto& [wall_s, axis, bar] : std::vector<std::tuple<double, std::string, std::string>>{
           {36, ">seconds", ">36.0<"}, {40 * 60, ">minutes", ">40.0<"}, {6 * 3600, ">hours<", ">6.00<"}}) {
    INFO(wall_s);
    Fixture f(plan(wall_s), {plan(wall_s * 0.5)});
    const std::string page = html_of(f.out);
    CHECK_THAT(page, Contains(axis) && Contains(bar));
  }
  // A 36 s run in a 13.9 h window: the window is named, not drawn in hours.
  Fixture f(plan(36), {});
  CHECK_THAT(html_of(f.out), Contains("seconds (the window, 13.90 h, is far beyond the bars)"));
}

TEST_CASE("the report scales to the window and explains itself", "[report][html]") {
  Fixture f(plan(6 * 3600), {plan(4 * 3600), plan(3 * 3600, 5000)});
  const std::string page = html_of(f.out);
  CHECK_THAT(page, Contains("viewBox='0 0 1000 ") && !Contains("<svg xmlns='http://www.w3.org/2000/svg' width="));
  CHECK_THAT(page, Contains("svg { display: block; width: 100%; height: auto;"));
  CHECK_THAT(page, Contains("Plan labels:") && Contains("R2x8: 2 rows per micro-batch x 8 micro-batches"));
  CHECK_THAT(page, Contains("<th>vs baseline</th>") && Contains("-33.3 %") && Contains("-50.0 %"));
  CHECK_THAT(page, Contains("Time per trained token") && Contains("ms per token"));
  CHECK_THAT(page, Contains("keeps every token</td>") && Contains("truncates 5,000 more tokens than the baseline</td>"));
  CHECK_THAT(page, Contains("<p class='headline good'>FITS: the baseline"));
}

TEST_CASE("a plan that runs out of memory says DOES NOT FIT first, in every form", "[report][headline]") {
  Fixture f(out_of_memory(6.38 * 3600), {plan(4.4 * 3600)});
  const std::string line = report::headline(f.out);
  CHECK_THAT(line, StartsWith("DOES NOT FIT: the baseline (pad-to-longest R2x8 L16384) runs out of memory at "
                              "micro-batch 41, optimizer step 6 (2 x 11358: 140.5 GiB > 139.8 GiB usable)"));
  CHECK_THAT(line, Contains("best plan that fits in memory: 1. pad-to-longest R2x8 L16384, 4.40 h"));
  std::ostringstream text;
  report::print_plan_text(text, f.out);
  CHECK_THAT(text.str(), StartsWith("DOES NOT FIT:") && !Contains("fits the window"));
  const auto j = report::versioned("plan", report::plan_json(f.out));
  CHECK_THAT(j["headline"].get<std::string>(), StartsWith("DOES NOT FIT:"));
  CHECK(j["fits"] == false);
  CHECK(std::next(j.begin(), 4).key() == "headline");  // right after the envelope
  const std::string page = html_of(f.out);
  CHECK(page.find("<p class='headline bad'>DOES NOT FIT:") < page.find("<svg"));
  CHECK_THAT(page, !Contains("fits the window"));
  // The checks say which limit failed, with its value and bar.
  const auto checks = report::plan_checks(f.out);
  REQUIRE(checks.size() == 3);
  CHECK(checks[0].name == "fits_memory");
  CHECK_FALSE(checks[0].passed);
  CHECK(checks[0].value == Approx(182.1));
  CHECK(checks[1].passed);
}

TEST_CASE("a plan past the window DOES NOT FIT the window", "[report][headline]") {
  planner::PlanResult late = plan(20 * 3600);
  late.fits_window = false;
  Fixture f(late);
  CHECK_THAT(report::headline(f.out), StartsWith("DOES NOT FIT the 13.9 h window: the baseline") && Contains("20.00 h"));
  CHECK_FALSE(report::plan_checks(f.out)[1].passed);
}

TEST_CASE("recommendations come in groups with the tokens they lose", "[report][groups]") {
  Fixture f(plan(6 * 3600, 100), {plan(4 * 3600, 100), plan(5 * 3600, 50), plan(3 * 3600, 2600)});
  std::ostringstream text;
  report::print_plan_text(text, f.out);
  const std::string t = text.str();
  const auto keeps = t.find("-- keeps every token the baseline keeps:");
  const auto truncates = t.find("-- truncates 2,500 more tokens than the baseline:");
  REQUIRE(keeps != std::string::npos);
  REQUIRE(truncates != std::string::npos);
  CHECK(keeps < t.find("\n1 "));
  CHECK(t.find("\n2 ") < truncates);
  CHECK(truncates < t.find("\n3 "));
  CHECK_THAT(t, Contains("ranked: " + planner::ranking_rule()));
  const auto j = report::plan_json(f.out);
  CHECK(j["recommendations"][0]["group"] == "keeps_every_token");
  CHECK(j["recommendations"][2]["group"] == "truncates_more");
  CHECK(j["recommendations"][2]["extra_truncated_tokens"] == 2500);
  CHECK(j["ranking_rule"] == planner::ranking_rule());
}

TEST_CASE("CSV quotes what needs quoting and reads back", "[report][csv]") {
  CHECK(report::csv_field("plain") == "plain");
  CHECK(report::csv_field("a,b") == "\"a,b\"");
  CHECK(report::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  const report::Table t{{"name", "note", "value"},
                        {{"x", "comma, inside", report::csv_number(0.1)}, {"y", "line\nbreak \"quoted\"", "2"}}};
  std::ostringstream out;
  report::write_csv(out, t);
  const auto rows = testing::read_csv(out.str());
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == t.columns);
  CHECK(rows[1] == t.rows[0]);
  CHECK(rows[2] == t.rows[1]);
  CHECK(std::stod(rows[1][2]) == 0.1);  // the shortest text that reads back exactly
}

TEST_CASE("the JSON envelope carries the schema and the build", "[report][json]") {
  const auto j = report::versioned("predict", nlohmann::json{{"records", nlohmann::json::array()}, {"checks", 1}});
  CHECK(j["schema_version"] == report::kJsonSchemaVersion);
  CHECK(j["stepcast_version"] == report::stepcast_version());
  CHECK(j["commit"] == report::git_commit());
  CHECK(j["command"] == "predict");
  CHECK(j["records"].is_array());
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"schema_version", "stepcast_version", "commit", "command", "checks", "records"});
  const auto checks = report::checks_json({{"a", 1.5, 2, true}, {"b", 3, 2, false}});
  CHECK(checks[1] == nlohmann::json{{"name", "b"}, {"value", 3.0}, {"bar", 2.0}, {"passed", false}});
  CHECK_FALSE(report::all_passed({{"a", 1.5, 2, true}, {"b", 3, 2, false}}));
  CHECK_THAT(report::version_text(), StartsWith("stepcast " + report::stepcast_version() + " (commit ") &&
                                         Contains("features: calibrate ") && Contains("harness ") && Contains("cupti "));
}

TEST_CASE("a plan that fits at the point estimate only says AT RISK, amber, and fails --fail-on oom", "[report][headline]") {
  planner::PlanResult risky = plan(6 * 3600);
  risky.fits_memory = false;
  risky.memory.verdict = planner::MemoryVerdict::at_risk;
  risky.memory.peak_low_gib = 98.0;
  risky.memory.peak_high_gib = 141.0;
  risky.memory.need_high_gib = 141.0;
  risky.memory.margin_gib = 139.8 - 141.0;
  risky.memory.risks = {"fits at the point estimate only: the 90 % upper bound needs 141.0 GiB of 139.8 GiB"};
  Fixture f(risky);
  const std::string line = report::headline(f.out);
  CHECK_THAT(line, StartsWith("AT RISK: the baseline (pad-to-longest R2x8 L16384) takes 6.00 h of the 13.9 h window, "
                              "peak 100.0 GiB (90 %: 98.0-141.0 GiB) of 139.8 GiB usable, margin -1.2 GiB; at risk: fits "
                              "at the point estimate only"));
  CHECK_THAT(html_of(f.out), Contains("<p class='headline risk'>AT RISK:") && Contains("<td>at risk</td>"));
  const auto checks = report::plan_checks(f.out);
  CHECK(checks[0].name == "fits_memory");
  CHECK_FALSE(checks[0].passed);
  CHECK(checks[0].value == Approx(141.0));
  CHECK(checks[0].bar == Approx(139.8));
  const auto j = report::plan_json(f.out);
  CHECK(j["baseline"]["memory_verdict"] == "at_risk");
  CHECK(j["baseline"]["memory"]["margin_gib"].get<double>() == Approx(-1.2));
  CHECK(j["fits"] == false);
}
