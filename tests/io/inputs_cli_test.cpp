// The inputs people have, as a user gives them to the program: corpora as JSON Lines, CSV, gzip and stdin;
// a model directory and an org/name from the local Hugging Face cache; a cold machine.
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "io/scenario_io.hpp"
#include "model/kernel_compiles.hpp"
#include "temp_file.hpp"

using stepcast::testing::run_cli;
using stepcast::testing::TempFile;
using Catch::Matchers::Contains;

namespace {

const std::string kScenario = STEPCAST_SCENARIOS "/h200-hf-peft-64.yaml";

nlohmann::json plan(const std::string& args) {
  const auto r = run_cli("plan " + kScenario + " --no-sweep --format json " + args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("plan reads a gzip JSON Lines corpus, a CSV with extra columns, and stdin alike", "[cli][corpus]") {
  TempFile gz("", ".jsonl.gz");
  {
    gzFile f = gzopen(gz.path().c_str(), "wb");
    const std::string text = "{\"input_ids\": [5, 6, 7], \"id\": 1}\n{\"num_tokens\": 300}\n{\"length\": 1200}\n";
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  }
  TempFile csv("id,\"text, quoted\",length\n1,\"a, b\",3\n2,c,300\n3,\"say \"\"hi\"\"\",1200\n", ".csv");
  const auto a = plan("--corpus " + gz.path());
  const auto b = plan("--corpus " + csv.path());
  const auto c = plan("--corpus - < " + csv.path());
  for (const auto* j : {&a, &b, &c}) {
    CHECK((*j)["corpus"]["samples"] == 3);
    CHECK((*j)["corpus"]["tokens"] == 1503);
  }
  CHECK(c["corpus"]["source"] == "stdin");
  CHECK(a["baseline"]["wall_clock_s"] == b["baseline"]["wall_clock_s"]);
}

TEST_CASE("plan --length-field names the corpus's length, and a bad corpus exits 2 with file:line", "[cli][corpus]") {
  TempFile jsonl("{\"n\": 100, \"length\": 1}\n{\"n\": 200, \"length\": 1}\n", ".jsonl");
  CHECK(plan("--corpus " + jsonl.path() + " --length-field n")["corpus"]["tokens"] == 300);
  TempFile bad("{\"length\": 100}\n{\"length\": -4}\n", ".jsonl");
  auto r = run_cli("plan " + kScenario + " --corpus " + bad.path());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(bad.path() + ":2:1: length = -4"));
  TempFile garbage(std::string("\x1f\x8b\x08\x00garbage", 11), ".gz");
  r = run_cli("plan " + kScenario + " --corpus " + garbage.path());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(garbage.path() + ": cannot decompress the corpus"));
  CHECK(r.err.find('\x1f') == std::string::npos);
}

TEST_CASE("plan --cold-start charges each kernel class the run meets first", "[cli][cold_start]") {
  const auto warm = plan("");
  const auto cold = plan("--cold-start");
  CHECK(warm["cold_start"] == false);
  CHECK(cold["cold_start"] == true);
  CHECK(warm["baseline"]["compile_classes"] == 0);
  CHECK(warm["baseline"]["breakdown_s"]["kernel_compiles"] == 0.0);
  // Gemma-4 26B-A4B's sliding layers (head_dim 256) run cuDNN and compile; its 512-wide global layers run a
  // prebuilt backend (cuDNN takes at most 256) and compile nothing. The scenario pads to the longest, so its classes
  // are padded widths' alignments (1..6).
  const auto classes = cold["baseline"]["compile_classes"].get<int64_t>();
  CHECK(classes >= 1);
  CHECK(classes <= 6);
  const double compiles = cold["baseline"]["breakdown_s"]["kernel_compiles"].get<double>();
  CHECK(compiles == Approx(static_cast<double>(classes) * stepcast::model::kKernelCompileS));
  CHECK(cold["baseline"]["breakdown_s"]["startup"] == warm["baseline"]["breakdown_s"]["startup"]);
  CHECK(cold["baseline"]["wall_clock_s"].get<double>() ==
        Approx(warm["baseline"]["wall_clock_s"].get<double>() + compiles));
  const auto r = run_cli("plan " + kScenario + " --no-sweep --cold-start");
  CHECK_THAT(r.out, Contains("cold machine: " + std::to_string(classes) + " kernel classes x 1 head size(s) compile"));
}

TEST_CASE("describe takes a model directory and an org/name from the Hugging Face cache", "[cli][model_path]") {
  namespace fs = std::filesystem;
  const fs::path home = fs::temp_directory_path() / ("stepcast_hf_home_" + std::to_string(::getpid()));
  const fs::path snapshot = home / "hub" / "models--acme--gemma-copy" / "snapshots" / "0123abc";
  fs::create_directories(snapshot);
  fs::copy_file(STEPCAST_SCENARIOS "/models/gemma-4-26b-a4b.json", snapshot / "config.json");
  auto r = run_cli("describe --model " + snapshot.string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("25,233,141,760"));
  const std::string env = "--version >/dev/null; HF_HUB_CACHE= HF_HOME=" + home.string() + " " + STEPCAST_EXE + " ";
  r = run_cli(env + "describe --model acme/gemma-copy");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("gemma-copy") && Contains("25,233,141,760"));
  r = run_cli(env + "describe --model acme/not-downloaded");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("not in the local Hugging Face cache"));
  fs::remove_all(home);
}
