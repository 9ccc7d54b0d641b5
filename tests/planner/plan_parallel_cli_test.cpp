// stepcast plan on several GPUs: --gpus / --strategy / --sampler on the shipped H200 scenario, the JSON's
// `parallel` block with its straggler time, the sweep over N, and the refusals.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"

using stepcast::testing::run_cli;
using Catch::Matchers::Contains;

namespace {

const std::string kH200 = STEPCAST_SCENARIOS "/h200-gemma-4-26b-a4b.yaml";

nlohmann::json parallel_of(const std::string& args) {
  const auto r = run_cli("plan " + kH200 + " " + args + " --format json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["parallel"];
}

}  // namespace

TEST_CASE("plan --gpus 4: straggler per step, per-rank peak, GPU-hours", "[planner][cli][parallel]") {
  const auto plain = parallel_of("--gpus 4 --no-sweep")["baseline"];
  CHECK(plain["gpus"] == 4);
  CHECK(plain["strategy"] == "ddp");
  CHECK(plain["sampler"] == "distributed");
  CHECK(plain["straggler_per_step_s"].get<double>() > 0);
  CHECK(plain["gpu_hours"].get<double>() == Approx(plain["wall_clock_s"].get<double>() * 4 / 3600));
  const auto grouped = parallel_of("--gpus 4 --sampler length-grouped --no-sweep")["baseline"];
  CHECK(grouped["straggler_per_step_s"].get<double>() < plain["straggler_per_step_s"].get<double>());
  CHECK(grouped["steps"] == plain["steps"]);
  // FSDP shards the 48 GiB of bf16 weights: a lower peak per rank than DDP's whole copy.
  const auto fsdp = parallel_of("--gpus 4 --strategy fsdp --no-sweep")["baseline"];
  CHECK(fsdp["peak_gib_per_rank"].get<double>() < plain["peak_gib_per_rank"].get<double>() - 20);
}

TEST_CASE("plan --gpus sweeps N x strategies x samplers, ranked two ways", "[planner][cli][parallel]") {
  const auto p = parallel_of("--gpus 2");
  const auto& by_wall = p["by_wall_clock"];
  REQUIRE(by_wall.size() >= 10);
  for (size_t i = 1; i < by_wall.size(); ++i)
    if (by_wall[i]["fits_memory"] == by_wall[i - 1]["fits_memory"])
      CHECK(by_wall[i - 1]["wall_clock_s"].get<double>() <= by_wall[i]["wall_clock_s"].get<double>());
  std::set<std::string> strategies;
  for (const auto& plan : by_wall) strategies.insert(plan["strategy"].get<std::string>());
  CHECK(strategies == std::set<std::string>{"ddp", "fsdp", "ep"});  // Gemma-4 26B-A4B has routed experts
  stepcast::testing::TempFile html("", ".html");
  std::filesystem::remove(html.path());
  const auto text = run_cli("plan " + kH200 + " --gpus 2 --report " + html.path());
  CHECK_THAT(text.out, Contains("straggler") && Contains("by GPU-hours"));
  CHECK_THAT(stepcast::testing::slurp(html.path()), Contains("On 2 GPUs (ddp x2 distributed)") && Contains("straggler"));
}

TEST_CASE("plan: several GPUs refused without a model, a --gpus, or experts", "[planner][cli][parallel]") {
  const auto no_gpus = run_cli("plan " + kH200 + " --strategy fsdp --no-sweep");
  CHECK(no_gpus.exit_code == 2);
  CHECK_THAT(no_gpus.err, Contains("--gpus"));
  const auto seed = run_cli("plan " STEPCAST_SCENARIOS "/seed-sm120.yaml --gpus 2 --no-sweep");
  CHECK(seed.exit_code == 2);
  CHECK_THAT(seed.err, Contains("model's shape"));
  const auto bad = run_cli("plan " + kH200 + " --gpus 2 --strategy zero9");
  CHECK(bad.exit_code == 2);
}
