// The real executable: calibrate, predict, validate and drift on the shipped seed records; exit codes
// 0 / 1 / 2, line numbers in drift and reader errors, --force, --format json.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"

using stepcast::testing::run_cli;
using stepcast::testing::slurp;
using stepcast::testing::TempFile;
using Catch::Matchers::Contains;

namespace {
const std::string kSeed = std::string(STEPCAST_MEASUREMENTS) + "/records/seed-sm120.jsonl";

std::string temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() / (stem + std::to_string(::getpid()) + ".yaml")).string();
}

// Calibrates the sm_120 study once per test case into a temporary coefficient file.
struct SeedCoefficients {
  std::string path = temp_path("stepcast_seed_coeffs_");
  SeedCoefficients() {
    std::filesystem::remove(path);
    const auto r = run_cli("calibrate --measurements " + kSeed + " --prior none --out " + path);
    REQUIRE(r.exit_code == 0);
  }
  ~SeedCoefficients() { std::filesystem::remove(path); }
};
}  // namespace

TEST_CASE("every command has --help with examples", "[cli]") {
  for (const char* cmd : {"calibrate", "predict", "validate", "drift"}) {
    const auto r = run_cli(std::string(cmd) + " --help");
    INFO(cmd);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Examples:") != std::string::npos);
  }
}

TEST_CASE("calibrate prints terms with reasons and never overwrites without --force", "[cli]") {
  const std::string out = temp_path("stepcast_calibrate_out_");
  std::filesystem::remove(out);
  auto r = run_cli("calibrate --measurements " + kSeed + " --prior none --out " + out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("gemm_s_per_tflop") != std::string::npos);
  CHECK(r.out.find("fixed_s") != std::string::npos);
  CHECK(r.out.find("seed-sm120.jsonl:5") != std::string::npos);  // residual per record, by line
  CHECK(std::filesystem::exists(out));
  r = run_cli("calibrate --measurements " + kSeed + " --prior none --out " + out);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--force") != std::string::npos);
  r = run_cli("calibrate --measurements " + kSeed + " --prior none --out " + out + " --force --format json");
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["coefficients"]["step"]["gemm_s_per_tflop"]["selected"] == true);
  CHECK(j["coefficients"]["points"] == 7);
  CHECK(j["coefficients"]["model"] == "gemma-4-26b-a4b");
  CHECK(j["step_residuals"].size() == 7);
  std::filesystem::remove(out);
}

TEST_CASE("predict: per record and for one batch", "[cli]") {
  SeedCoefficients c;
  auto r = run_cli("predict --coefficients " + c.path + " --measurements " + kSeed + " --format json");
  REQUIRE(r.exit_code == 0);
  const auto records = nlohmann::json::parse(r.out)["records"];
  REQUIRE(records.size() == 7);
  for (const auto& rec : records) {
    CHECK(rec["predicted_step_s"].get<double>() > 0);
    CHECK(std::abs(rec["step_error_rel"].get<double>()) < 0.03);
    CHECK(std::abs(rec["peak_error_rel"].get<double>()) < 0.03);
    CHECK(rec.contains("section"));  // the record's own fields come along
  }
  r = run_cli("predict --coefficients " + c.path + " --rows 2048,1024 --width 2048 --format json");
  REQUIRE(r.exit_code == 0);
  const auto one = nlohmann::json::parse(r.out);
  CHECK(one["predicted_step_s"].get<double>() > 0.5);
  CHECK(one["memory"]["items"].size() >= 4);
  CHECK(one["predicted_peak_gib"].get<double>() == Approx(one["memory"]["total_gib"].get<double>()));
  CHECK(run_cli("predict --coefficients " + c.path).exit_code == 2);
  CHECK(run_cli("predict --coefficients " + c.path + " --rows 4096 --width 2048").exit_code == 2);
}

TEST_CASE("drift: exit 0 within tolerance, exit 1 naming every line beyond it", "[cli]") {
  SeedCoefficients c;
  auto r = run_cli("drift --coefficients " + c.path + " --measurements " + kSeed + " --tolerance 0.10");
  CHECK(r.exit_code == 0);
  r = run_cli("drift --coefficients " + c.path + " --measurements " + kSeed + " --tolerance 0.009");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("seed-sm120.jsonl:5: step_s") != std::string::npos);  // the padded point, +1.2 %
  CHECK(r.out.find("seed-sm120.jsonl:7: step_s") != std::string::npos);  // 2 x 4096, -1.4 %
  CHECK(r.out.find("seed-sm120.jsonl:3: step_s") == std::string::npos);  // 0.1 %: within
  CHECK(r.err.find("seed-sm120.jsonl:5: step_s") == std::string::npos);  // listed once, on stdout
  r = run_cli("drift --coefficients " + c.path + " --measurements " + kSeed + " --tolerance 0.009 --format json");
  CHECK(r.exit_code == 1);
  CHECK(nlohmann::json::parse(r.out)["drifted"].size() >= 2);
}

TEST_CASE("bad input: exit 2 with file and line", "[cli]") {
  SeedCoefficients c;
  TempFile bad(R"({"model": "gemma-4-26b-a4b", "gpu": "g", "tier": "t", "rows": [1], "width": 8, "step_s": 1})"
               "\n{\"model\": \"gemma-4-26b-a4b\", \"rows\": [9], \"width\": 8}\n",
               ".jsonl");
  for (const std::string& cmd : {"calibrate --measurements " + bad.path(),
                                "drift --coefficients " + c.path + " --measurements " + bad.path(),
                                "predict --coefficients " + c.path + " --measurements " + bad.path()}) {
    const auto r = run_cli(cmd);
    INFO(cmd << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(".jsonl:2") != std::string::npos);
  }
  TempFile yaml("model: gemma-4-26b-a4b\nmodle: typo\n", ".yaml");
  const auto r = run_cli("predict --coefficients " + yaml.path() + " --rows 2048");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(".yaml:2:1: unknown key 'modle'") != std::string::npos);
  CHECK(r.err.find("gpu is missing") != std::string::npos);
  CHECK(run_cli("calibrate --measurements /nonexistent.jsonl").exit_code == 2);
  CHECK(run_cli("calibrate --measurements " + kSeed + " --loss bogus").exit_code == 2);
}

TEST_CASE("validate: k-fold and leave-one-out, and a bar", "[cli]") {
  auto r = run_cli("validate --measurements " + kSeed + " --prior none --folds 3 --format json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["leave_one_out"]["scheme"] == "leave-one-out");
  CHECK(j["leave_one_out"]["step"]["count"] == 7);
  CHECK(j["k_fold"]["folds"] == 3);
  CHECK(j["leave_one_out"]["step"]["mape"].get<double>() < 0.05);
  r = run_cli("validate --measurements " + kSeed + " --max-step-mape 0.0001");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("MAPE") != std::string::npos);
}

TEST_CASE("the auto prior takes a file of the same model, GPU and tier not fitted on the records judged",
          "[cli][prior]") {
  const auto dir = std::filesystem::temp_directory_path() / ("stepcast_priors_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string prior = (dir / "seed-prior.yaml").string();
  REQUIRE(run_cli("calibrate --measurements " + kSeed + " --prior none --out " + prior).exit_code == 0);
  CHECK_THAT(slurp(prior), Contains("fitted_records: "));  // the provenance the rule reads
  std::filesystem::copy_file(kSeed, dir / "not-coefficients.yaml");  // not a coefficient file: skipped
  const std::string env = "STEPCAST_COEFFICIENTS_DIR=" + dir.string() + " ";
  auto records = [](const std::string& tier) {
    return std::string(R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA RTX PRO 6000 Blackwell", "tier": ")") + tier +
           R"(", "rows": [4096, 4096], "width": 4096, "step_s": 4.4})" + "\n" +
           R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA RTX PRO 6000 Blackwell", "tier": ")" + tier +
           R"(", "rows": [8192, 8192], "width": 8192, "step_s": 11.6})" + "\n";
  };
  TempFile same_tier(records("hf-sdpa-efficient-sm80/loop"), ".jsonl");
  TempFile other_tier(records("t"), ".jsonl");
  // run_cli prefixes the executable; the environment goes through /bin/sh's `env`.
  auto prior_of = [&](const std::string& args) {
    const auto r = run_cli("--version >/dev/null; " + env + std::string(STEPCAST_EXE) + " " + args + " --format json");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out)["coefficients"]["prior"].get<std::string>();
  };
  CHECK(prior_of("calibrate --measurements " + same_tier.path()) == prior);
  CHECK(prior_of("calibrate --measurements " + same_tier.path() + " --prior none") == "");
  CHECK(prior_of("calibrate --measurements " + other_tier.path()) == "");  // another tier's file: never
  CHECK(prior_of("calibrate --measurements " + kSeed) == "");              // fitted on these very records
  CHECK(prior_of("calibrate --measurements " + kSeed + " " + same_tier.path()) == "");  // on some of them
  // A file that does not list its records cannot show it was not fitted on these: skipped.
  std::string text = slurp(prior);
  const auto at = text.find("fitted_records: ");
  text.erase(at, text.find('\n', at) - at + 1);
  std::ofstream(prior) << text;
  CHECK(prior_of("calibrate --measurements " + same_tier.path()) == "");
  std::filesystem::remove_all(dir);
}

TEST_CASE("validate on records none of which can be held out exits 2 instead of passing", "[cli][validate]") {
  const std::string oom =
      R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "hf-peft/sdpa-grouped_mm", "rows": [512], "width": 512, "oom": true})";
  const TempFile f(oom + "\n" + oom + "\n" + oom + "\n" + oom + "\n", ".jsonl");
  const auto r = run_cli("validate --measurements " + f.path() + " --prior none");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(f.path() + ":1: no record could be held out"));
}

TEST_CASE("calibrate records the file's own held-out errors, and predictions with it carry them", "[cli][intervals]") {
  const SeedCoefficients c;  // the seed's 7 records: leave-one-out
  const std::string text = slurp(c.path);
  CHECK_THAT(text, Contains("held_out: {scheme: leave-one-out, unpadded: {points: "));
  const auto v = run_cli("validate --measurements " + kSeed + " --prior none --format json");
  REQUIRE(v.exit_code == 0);
  const auto loo = nlohmann::json::parse(v.out)["leave_one_out"];
  const auto p = run_cli("predict --coefficients " + c.path + " --rows 4096,4096 --format json");
  REQUIRE(p.exit_code == 0);
  const auto j = nlohmann::json::parse(p.out);
  // The unpadded half-width is the conformal 90 % of validate's leave-one-out errors of the unpadded records.
  const double step = j["predicted_step_s"];
  CHECK(j["step_interval_s"][1].get<double>() / step - 1 ==
        Approx(loo["interval"]["unpadded"]["half_width"].get<double>()).epsilon(1e-6));
  // A held_out block is checked like any other.
  std::string bad = text;
  bad.replace(bad.find("half_width: "), 12, "half_width: -");
  const TempFile f(bad, ".yaml");
  const auto r = run_cli("predict --coefficients " + f.path() + " --rows 512");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(f.path() + ":") && Contains("held_out.unpadded.half_width"));
}

TEST_CASE("validate --coverage holds each record against the interval of the predictor its model gets",
          "[cli][intervals]") {
  const std::string records = std::string(STEPCAST_MEASUREMENTS) + "/records/";
  const auto r = run_cli("validate --coverage --measurements " + records + "h200-qwen3-30b-a3b.jsonl " + records +
                         "h200-transfer3/transfer3-qwen2.5-7b.jsonl --format json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto c = nlohmann::json::parse(r.out)["coverage"];
  REQUIRE(c["predictors"].size() == 2);  // one per model
  int64_t points = 0;
  for (const auto& g : c["groups"]) {
    // Harness records: another model, and the harness's tier re-planned at the default's rates.
    CHECK_THAT(g["kind"].get<std::string>(), Catch::Matchers::StartsWith("transferred-model+transferred-tier"));
    points += g["points"].get<int64_t>();
    CHECK(g["inside"].get<int64_t>() <= g["points"].get<int64_t>());
    // Unpadded, both models: each against the other's quantile; padded records are Qwen3's alone.
    CHECK((g["other_models_points"].get<int64_t>() > 0) == !g["padded"].get<bool>());
  }
  CHECK(points == 24);  // every record with a step
  CHECK(c["points"].size() == 24);
  // Text names the groups; nothing to hold is exit 2.
  const auto text = run_cli("validate --coverage --measurements " + records + "h200-qwen3-30b-a3b.jsonl");
  CHECK_THAT(text.out, Contains("transferred-model+transferred-tier, unpadded: ") && Contains("inside"));
  CHECK(run_cli("validate --coverage").exit_code == 2);
}

TEST_CASE("calibrate --expert-work and --memory-work: the new work by default, the old on request, anything else is exit 2",
          "[cli][experts][memory]") {
  struct Case {
    std::string flag, key, records, by_default, old;
  };
  const std::string dir = std::string(STEPCAST_MEASUREMENTS) + "/records/";
  for (const Case& c : {Case{"--expert-work", "expert_work", dir + "h200-moe-kernels/records/qwen3-30b-a3b__probes.jsonl",
                             "roofline", "per-flop"},
                        Case{"--memory-work", "memory_work",
                             dir + "h200-lora-targets/records/llama-3-8b-attention__probes.jsonl", "weighted", "plain"}}) {
    CAPTURE(c.flag);
    auto work = [&](const std::string& flag) {
      const auto r = run_cli("calibrate --measurements " + c.records + " --prior none --format json " + flag);
      REQUIRE(r.exit_code == 0);
      return nlohmann::json::parse(r.out)["coefficients"][c.key].get<std::string>();
    };
    CHECK(work("") == c.by_default);
    CHECK(work(c.flag + " " + c.old) == c.old);
    const auto bad = run_cli("calibrate --measurements " + c.records + " --prior none " + c.flag + " flops");
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Contains(c.flag));
  }
}
