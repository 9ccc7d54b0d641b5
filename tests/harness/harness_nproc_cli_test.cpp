// `stepcast measure --nproc 2` as a user runs it: two Gloo ranks of the tiny model on the CPU, each with its
// DistributedSampler shard, every record carrying its rank and the world size.
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

TEST_CASE("measure --nproc: refused without a run, or with fsdp, before any rank starts", "[harness][cli][distributed]") {
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json";
  stepcast::testing::TempFile out("", ".jsonl");
  const auto probes = run_cli("measure --model " + model + " --device cpu --probe scaling --shapes 1x32 --nproc 2 --out " +
                              out.path());
  CHECK(probes.exit_code == 2);
  CHECK(probes.err.find("without a run") != std::string::npos);
  const auto fsdp = run_cli("measure --model " + model + " --device cpu --run-synthetic 9:3 --policy pad-to-longest " +
                            "--nproc 2 --strategy fsdp --out " + out.path());
  CHECK(fsdp.exit_code == 2);
  CHECK(fsdp.err.find("not wired") != std::string::npos);
}
