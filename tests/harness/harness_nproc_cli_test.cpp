// `stepcast measure --nproc 2` as a user runs it: two Gloo ranks of the tiny model on the CPU, each with its
// DistributedSampler shard, every record carrying its rank and the world size.
#include <cmath>
#include <filesystem>
#include <set>

#include "calibrate/records.hpp"
#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"

using stepcast::testing::run_cli;

TEST_CASE("measure --nproc 2: every record carries its rank", "[harness][cli][distributed]") {
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json";
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  const auto r = run_cli("measure --model " + model + " --device cpu --dtype float32 --tiers sdpa-auto/loop " +
                         "--run-synthetic 9:3 --policy pad-to-longest --micro-batch 2 --accumulation 2 " +
                         "--max-length 48 --nproc 2 --strategy ddp --format json --out " + out.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"world_size\": 2") != std::string::npos);
  const auto records = stepcast::calibrate::read_records(out.path());
  // 9 samples padded to 10 (drop_last=False), 5 per rank: 3 micro-batches of 2 rows each.
  REQUIRE(records.size() == 6);
  std::multiset<int64_t> ranks;
  for (const auto& rec : records) {
    REQUIRE(rec.rank.has_value());
    CHECK(rec.world_size == 2);
    ranks.insert(*rec.rank);
    CHECK(rec.extra["run"]["id"].get<std::string>().find("/rank-" + std::to_string(*rec.rank) + "-of-2") !=
          std::string::npos);
  }
  CHECK(ranks.count(0) == 3);
  CHECK(ranks.count(1) == 3);
}

TEST_CASE("measure --nproc: refused without a run, before any rank starts", "[harness][cli][distributed]") {
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json";
  stepcast::testing::TempFile out("", ".jsonl");
  const auto probes = run_cli("measure --model " + model + " --device cpu --probe scaling --shapes 1x32 --nproc 2 --out " +
                              out.path());
  CHECK(probes.exit_code == 2);
  CHECK(probes.err.find("without a run") != std::string::npos);
  const auto strategy = run_cli("measure --model " + model + " --device cpu --probe scaling --shapes 1x32 " +
                                "--strategy fsdp --out " + out.path());
  CHECK(strategy.exit_code == 2);
  CHECK(strategy.err.find("without a run") != std::string::npos);
}

namespace {

// FSDP as a user runs it, at 2 ranks and at an explicit --nproc 1 (still a rank over c10d: the device script's
// one-GPU FSDP): records carry the strategy, the rank and the world size.
void check_fsdp_cli(int nproc) {
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json";
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  const auto r = run_cli("measure --model " + model + " --device cpu --dtype float32 --tiers sdpa-auto/loop " +
                         "--run-synthetic 8:3 --policy pad-to-longest --micro-batch 2 --accumulation 2 " +
                         "--max-length 48 --nproc " + std::to_string(nproc) + " --strategy fsdp --out " + out.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("fsdp rank 0 of " + std::to_string(nproc)) != std::string::npos);
  const auto records = stepcast::calibrate::read_records(out.path());
  REQUIRE(records.size() == 4);  // 8 samples, 8 / nproc per rank, 2 rows a micro-batch
  for (const auto& rec : records) {
    REQUIRE(rec.rank.has_value());
    CHECK(rec.world_size == nproc);
    CHECK(rec.extra.value("strategy", "") == "fsdp");
    CHECK(std::isfinite(rec.extra["loss"].get<double>()));
  }
}

}  // namespace

TEST_CASE("measure --nproc 2 --strategy fsdp: sharded ranks run and record their strategy", "[harness][cli][distributed]") {
  check_fsdp_cli(2);
}

TEST_CASE("measure --nproc 1 --strategy fsdp: one rank over c10d", "[harness][cli][distributed]") {
  check_fsdp_cli(1);
}
