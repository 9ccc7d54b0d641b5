// `stepcast measure` as a user runs it: help, bad input (exit 2, every problem named), a tiny CPU run.
#include <filesystem>

#include "calibrate/records.hpp"
#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"

using stepcast::testing::run_cli;

TEST_CASE("measure --help shows examples", "[harness][cli]") {
  const auto r = run_cli("measure --help");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("--probe") != std::string::npos);
  CHECK(r.out.find("Examples") != std::string::npos);
}

TEST_CASE("measure: bad input exits 2 with a message, before any model is built", "[harness][cli]") {
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-gemma4.json";
  const auto [args, message] = GENERATE_COPY(table<std::string, std::string>({
      {"--probe speed --shapes 1x64", "--probe 'speed'"},
      {"--probe scaling --shapes 1x64 --tiers sdpa-fast/loop", "attention 'sdpa-fast'"},
      {"--probe scaling --shapes 1by64", "--shapes '1by64'"},
      {"--probe scaling --shapes 1x64 --padding 1.5", "0 <= padding < 1"},
      {"--probe scaling --shapes 1x64 --lora-targets q_projj", "q_projj"},
      {"--points first-seen:1x64,first-seen:1x64", "a shape new to the process"},
      {"--run-synthetic 64 --policy pad-to-longest", "--run-synthetic '64'"},
      {"--run-synthetic 64:7 --policy longest", "--policy 'longest'"},
      {"--run-synthetic 64:7 --policy pad-to-longest --points host-floor", "a run process runs nothing else"},
      {"--run-synthetic 64:7 --policy pack --packer best-fit", "--packer 'best-fit'"},
      {"--run-synthetic 64:7 --policy padding-free --pack-attention flex", "--pack-attention 'flex'"},
      {"--run-synthetic 64:7 --policy pad-to-longest --accumulation 0", "--accumulation = 0"},
      {"--run-synthetic 64:7 --policy pad-to-longest --pad-to-multiple-of 0", "--pad-to-multiple-of = 0"},
      {"--run-corpus /nonexistent/corpus.txt --policy pad-to-longest", "corpus.txt"},
      {"--policy pad-to-longest --probe scaling --shapes 1x64", "--policy without a run"},
  }));
  CAPTURE(args);
  stepcast::testing::TempFile out("", ".jsonl");
  const auto r = run_cli("measure --model " + model + " --device cpu --out " + out.path() + " " + args);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(message) != std::string::npos);
}

TEST_CASE("measure: a tiny CPU run writes records", "[harness][cli]") {
  // Tier loop: Debian's LibTorch 1.13 has no grouped GEMM for the default tier's experts.
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json";
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  const auto r = run_cli("measure --model " + model + " --device cpu --dtype float32 --probe scaling,padding " +
                         "--shapes 2x32 --padding 0.5 --repetitions 1 --tiers sdpa-auto/loop --format json --out " + out.path());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("\"measured\": 2") != std::string::npos);
  CHECK(r.err.find("[2/2] padding sdpa-auto/loop 2x32") != std::string::npos);
  const auto records = stepcast::calibrate::read_records(out.path());
  REQUIRE(records.size() == 2);
  CHECK(records[1].rows == std::vector<int64_t>{32, 2});
  CHECK(records[0].extra["source"].get<std::string>().find("stepcast measure") != std::string::npos);
}

TEST_CASE("measure with a tiny CPU run probe writes one record per micro-batch", "[harness][cli][run]") {
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json";
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  const std::string args = "measure --model " + model + " --device cpu --dtype float32 --tiers sdpa-auto/loop " +
                           "--run-synthetic 9:3 --policy bucket-to-pair --micro-batch 2 --accumulation 2 " +
                           "--max-length 48 --format json --out " + out.path();
  const auto r = run_cli(args);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("\"micro_batches\": 5") != std::string::npos);
  CHECK(r.out.find("\"optimizer_steps\": 3") != std::string::npos);
  CHECK(r.err.find("micro-batch 5/5") != std::string::npos);
  const auto records = stepcast::calibrate::read_records(out.path());
  REQUIRE(records.size() == 5);
  CHECK(records[0].extra["run"]["id"] == "synthetic-9-3/bucket-to-pair");
  CHECK(records[0].extra["run"]["corpus_lengths"].size() == 9);
  CHECK(records[4].extra["run"]["seed"] == 3);
  const auto again = run_cli(args);  // the same run id into the same file: refused, nothing appended
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("already recorded") != std::string::npos);
  CHECK(stepcast::calibrate::read_records(out.path()).size() == 5);
}
