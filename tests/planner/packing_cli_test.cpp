// stepcast plan with packing: the flags and keys, bad values (exit 2, file:line:col), and a recommendation
// that packs when, and only when, packing wins.
#include <nlohmann/json.hpp>

#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"

using stepcast::testing::run_cli;
using stepcast::testing::TempFile;
using Catch::Matchers::Contains;

namespace {

// The sm_120 study's equation (scenarios/seed-sm120.yaml) over `corpus`, sweeping padded and packed
// policies; `baseline_extra` and `sweep_extra` add keys.
std::string scenario(const std::string& corpus, const std::string& baseline_extra = "",
                     const std::string& sweep_extra = "") {
  return "schema_version: 1\n"
         "predictor:\n"
         "  width_quadratic: {step_s_per_token: 3.436e-4, step_s_per_token_width: 4.4255e-8, step_s_fixed: 0,\n"
         "                    masked_step_factor: 1.094, peak_gib_fixed: 49.49, peak_gib_per_token: 8.192e-4}\n"
         "gpu: {name: test, memory_gib: 95.0}\n"
         "corpus: {file: " + corpus + "}\n"
         "baseline:\n"
         "  policy: pad-to-longest\n"
         "  micro_batch: 2\n"
         "  accumulation: 4\n"
         "  max_length: 4096\n" + baseline_extra +
         "run: {epochs: 1, optimizer_step_s: 0, startup_s: 0}\n"
         "window_hours: 0\n"
         "sweep:\n"
         "  policies: [pad-to-longest, bucket-to-pair, padding-free, pack]\n"
         "  pack_attentions: [varlen]\n" + sweep_extra;
}

std::string lengths(int n, int first, int step, int modulo) {
  std::string s;
  for (int i = 0; i < n; ++i) s += std::to_string(first + (i * step) % modulo) + "\n";
  return s;
}

nlohmann::json plan(const std::string& scenario_path, const std::string& flags = "") {
  const auto r = run_cli("plan " + scenario_path + " --format json " + flags);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("packing is recommended on mixed lengths with varlen, not on equal lengths", "[planner][cli][packing]") {
  TempFile mixed(lengths(400, 100, 997, 3000), ".txt");
  TempFile mixed_scenario(scenario(mixed.path()), ".yaml");
  const auto wins = plan(mixed_scenario.path());
  const auto& best = wins["recommendations"][0];
  CHECK(best["pack_attention"] == "varlen");
  CHECK(best["documents_attend_each_other"] == false);
  // Equal lengths: nothing to pad, so nothing to win; bucket-to-pair ties pad-to-longest and comes first.
  TempFile equal(lengths(400, 1000, 0, 1), ".txt");
  TempFile equal_scenario(scenario(equal.path()), ".yaml");
  const auto loses = plan(equal_scenario.path());
  CHECK(loses["recommendations"][0]["pack_attention"].is_null());
  for (const auto& p : loses["recommendations"])
    if (!p["pack_attention"].is_null()) CHECK(p["wall_clock_s"].get<double>() >= loses["baseline"]["wall_clock_s"].get<double>());
}

TEST_CASE("padding-free keeps samples per step, pack says how they change, cross warns", "[planner][cli][packing]") {
  TempFile mixed(lengths(400, 100, 997, 3000), ".txt");
  TempFile s(scenario(mixed.path()), ".yaml");
  const auto free = plan(s.path(), "--policy padding-free --pack-attention varlen --no-sweep")["baseline"];
  CHECK(free["samples_per_step"].get<double>() == 8.0);  // 2 samples per micro-batch x 4
  CHECK(free["label"] == "padding-free R2x4 L4096 varlen");
  const auto cross = run_cli("plan " + s.path() + " --policy pack --pack-attention cross --packer ffd --no-sweep");
  REQUIRE(cross.exit_code == 0);
  CHECK_THAT(cross.out, Contains("pack R2x4 L4096 ffd cross") && Contains("attend to each other"));
  const auto j = plan(s.path(), "--policy pack --pack-attention cross --packer ffd --no-sweep")["baseline"];
  CHECK(j["documents_attend_each_other"] == true);
  CHECK(j["packer"] == "ffd");
  CHECK(j["samples_per_step"].get<double>() > 8.0);  // full rows of 4096 hold more than 2 samples each
}

TEST_CASE("bad packing flags and keys exit 2 with their place", "[planner][cli][packing]") {
  TempFile mixed(lengths(40, 100, 997, 3000), ".txt");
  TempFile s(scenario(mixed.path()), ".yaml");
  const auto flag = run_cli("plan " + s.path() + " --pack-attention flex --packer best-fit");
  CHECK(flag.exit_code == 2);
  CHECK_THAT(flag.err, Contains("--pack-attention = 'flex'. Violated constraint: one of varlen, block-mask, cross"));
  CHECK_THAT(flag.err, Contains("--packer = 'best-fit'. Violated constraint: one of next-fit, ffd, multipack"));
  TempFile bad(scenario(mixed.path(), "  pack_attention: flex\n", "  packers: [next-fit, best-fit]\n"), ".yaml");
  const auto key = run_cli("plan " + bad.path());
  CHECK(key.exit_code == 2);
  CHECK_THAT(key.err, Contains(bad.path() + ":12:19: baseline.pack_attention = 'flex'"));
  CHECK_THAT(key.err, Contains(":18:23: sweep.packers[1] = 'best-fit'"));
}
