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
