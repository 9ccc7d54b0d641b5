// Bad input at the edge (docs/reliability.md): values beyond their bounds, non-finite numbers, deep nesting
// and empty files are refused with exit 2 and the file:line of the offending value, never a crash, a
// silent pass or a wrong figure.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"

using Catch::Matchers::Contains;
using stepcast::testing::run_cli;
using stepcast::testing::TempFile;

namespace {

const std::string kCoefficients = STEPCAST_SCENARIOS "/coefficients/h200-hf-peft-sdpa-grouped_mm.yaml";

std::string llama_config(const std::string& overrides) {
  return R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
             "num_key_value_heads": 2, "vocab_size": 128, "torch_dtype": "bfloat16", )" +
         overrides + "}";
}

const std::string kRecord =
    R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "hf-peft/sdpa-grouped_mm", "rows": [512, 256], "width": 512, "step_s": 0.5})";

// Exit 2, and stderr names `file` at a line (and column where the format has one).
void require_located_refusal(const stepcast::testing::CliResult& r, const std::string& file) {
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  CHECK(std::regex_search(r.err, std::regex(std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                                            ":[0-9]+")));
}

}  // namespace

TEST_CASE("a config nested 100 000 deep is refused at the bracket, not a stack overflow", "[cli][edge]") {
  const TempFile f(llama_config(R"("num_hidden_layers": 2, "x": )" + std::string(100000, '[') + std::string(100000, ']')),
                   ".json");
  const auto r = run_cli("describe --model " + f.path());
  require_located_refusal(r, f.path());
  CHECK_THAT(r.err, Contains("nested deeper than 64"));
}

TEST_CASE("a JSON number beyond double range is refused with its position", "[cli][edge]") {
  const TempFile f(llama_config(R"("num_hidden_layers": 2, "rms_norm_eps": 1e400)"), ".json");
  const auto r = run_cli("describe --model " + f.path());
  require_located_refusal(r, f.path());
  CHECK_THAT(r.err, Contains("1e400"));
}

TEST_CASE("model sizes beyond the stated bounds are refused at their key", "[cli][edge]") {
  SECTION("a million layers") {
    const TempFile f(llama_config(R"("num_hidden_layers": 1000000)"), ".json");
    const auto r = run_cli("describe --model " + f.path());
    require_located_refusal(r, f.path());
    CHECK_THAT(r.err, Contains("num_hidden_layers") && Contains("<= 1024"));
  }
  SECTION("a vocabulary of 2^40") {
    const TempFile f(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
                         "num_hidden_layers": 2, "vocab_size": 1099511627776})",
                     ".json");
    const auto r = run_cli("describe --model " + f.path());
    require_located_refusal(r, f.path());
    CHECK_THAT(r.err, Contains("vocab_size"));
  }
  SECTION("heads that do not divide the hidden size (head_dim 0)") {
    const TempFile f(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 128,
                         "num_key_value_heads": 128, "num_hidden_layers": 2, "vocab_size": 128})",
                     ".json");
    const auto r = run_cli("describe --model " + f.path());
    require_located_refusal(r, f.path());
    CHECK_THAT(r.err, Contains("does not divide"));
  }
  SECTION("an unknown dtype, at its key") {
    const TempFile f(llama_config(R"("num_hidden_layers": 2, "dtype": "float3")"), ".json");
    const auto r = run_cli("describe --model " + f.path());
    require_located_refusal(r, f.path());
    CHECK_THAT(r.err, Contains("float3"));
  }
}

TEST_CASE("a measurement line nested 200 000 deep is refused, not a stack overflow", "[cli][edge]") {
  const std::string deep = kRecord.substr(0, kRecord.size() - 1) + R"(, "x": )" + std::string(200000, '[') +
                           std::string(200000, ']') + "}";
  const TempFile f(deep + "\n", ".jsonl");
  const auto r = run_cli("predict --coefficients " + kCoefficients + " --measurements " + f.path());
  require_located_refusal(r, f.path());
}

TEST_CASE("record fields beyond their bounds are refused at their line", "[cli][edge]") {
  SECTION("rows of 2^62 tokens (their sum overflowed)") {
    const TempFile f(R"({"model": "m", "gpu": "g", "tier": "t", "rows": [4611686018427387904, 4611686018427387904], "width": 4611686018427387904, "step_s": 1})"
                     "\n",
                     ".jsonl");
    const auto r = run_cli("predict --coefficients " + kCoefficients + " --measurements " + f.path());
    require_located_refusal(r, f.path());
    CHECK_THAT(r.err, Contains("rows"));
  }
  SECTION("a step of 1e-300 s") {
    const TempFile f(std::regex_replace(kRecord, std::regex("0\\.5"), "1e-300") + "\n", ".jsonl");
    const auto r = run_cli("drift --coefficients " + kCoefficients + " --measurements " + f.path());
    require_located_refusal(r, f.path());
    CHECK_THAT(r.err, Contains("step_s"));
  }
}

TEST_CASE("drift and predict refuse a file with no record instead of passing", "[cli][edge]") {
  for (const std::string text : {"", "\n  \n\t\n"}) {
    const TempFile f(text, ".jsonl");
    const auto drift = run_cli("drift --coefficients " + kCoefficients + " --measurements " + f.path());
    require_located_refusal(drift, f.path());
    CHECK_THAT(drift.err, Contains("no measurement record"));
    require_located_refusal(run_cli("predict --coefficients " + kCoefficients + " --measurements " + f.path()),
                            f.path());
  }
  const auto folder = std::filesystem::temp_directory_path();
  const auto r = run_cli("drift --coefficients " + kCoefficients + " --measurements " + folder.string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("is a folder"));
}

TEST_CASE("drift refuses records it cannot check, and an OOM record's unknown GPU, at the record", "[cli][edge]") {
  const std::string oom =
      R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "hf-peft/sdpa-grouped_mm", "rows": [512], "width": 512, "oom": true, "capacity_gib": 0})";
  const TempFile none(oom + "\n" + oom + "\n", ".jsonl");
  const auto r = run_cli("drift --coefficients " + kCoefficients + " --measurements " + none.path());
  require_located_refusal(r, none.path());
  CHECK_THAT(r.err, Contains("none of the 2 records can be checked"));
  const TempFile unknown(std::regex_replace(oom, std::regex(R"(, "capacity_gib": 0)"), "")
                             .replace(oom.find("NVIDIA H200"), 11, "Some GPU") + "\n", ".jsonl");
  const auto u = run_cli("drift --coefficients " + kCoefficients + " --measurements " + unknown.path());
  require_located_refusal(u, unknown.path());
  CHECK_THAT(u.err, Contains("Some GPU"));
}

TEST_CASE("non-finite flags are refused", "[cli][edge]") {
  const TempFile f(kRecord + "\n", ".jsonl");
  for (const char* tolerance : {"nan", "inf", "-1"}) {
    const auto r = run_cli("drift --coefficients " + kCoefficients + " --measurements " + f.path() + " --tolerance " +
                           tolerance);
    INFO(tolerance << ": " << r.err);
    CHECK(r.exit_code == 2);
  }
  const auto rows = run_cli("predict --coefficients " + kCoefficients + " --rows 2147483647,2147483647");
  CHECK(rows.exit_code == 2);
  CHECK_THAT(rows.err, Contains("--rows"));
}

TEST_CASE("non-finite YAML numbers are refused at their position", "[cli][edge]") {
  SECTION("a coefficient of .inf") {
    std::string text = stepcast::testing::slurp(kCoefficients);
    const auto at = text.find("value: ");
    REQUIRE(at != std::string::npos);
    text.replace(at, std::string("value: ").size(), "value: .inf, old: ");
    const TempFile f(text, ".yaml");
    const auto r = run_cli("predict --coefficients " + f.path() + " --rows 512");
    require_located_refusal(r, f.path());
  }
  SECTION("a synthetic corpus with sigma .nan") {
    std::string text = stepcast::testing::slurp(STEPCAST_SCENARIOS "/h200-hf-peft-64.yaml");
    text = std::regex_replace(text, std::regex("coefficients: coefficients/"),
                              "coefficients: " STEPCAST_SCENARIOS "/coefficients/");
    text = std::regex_replace(text, std::regex("  file: corpora/hf-run-d-64.csv"),
                              "  synthetic: {samples: 64, components: [{median_tokens: 400, sigma: .nan}]}");
    const TempFile f(text, ".yaml");
    const auto r = run_cli("plan " + f.path() + " --no-sweep");
    require_located_refusal(r, f.path());
    CHECK_THAT(r.err, Contains("sigma"));
  }
}

TEST_CASE("a sweep beyond a million configurations is refused before it is built", "[cli][edge]") {
  std::string text = stepcast::testing::slurp(STEPCAST_SCENARIOS "/h200-hf-peft-64.yaml");
  text = std::regex_replace(text, std::regex("coefficients: coefficients/"),
                            "coefficients: " STEPCAST_SCENARIOS "/coefficients/");
  text = std::regex_replace(text, std::regex("corpus:\n  file: corpora/"), "corpus:\n  file: " STEPCAST_SCENARIOS "/corpora/");
  std::string many = "[";
  for (int i = 1; i <= 400; ++i) many += std::to_string(i) + (i < 400 ? "," : "]");
  text = std::regex_replace(text, std::regex("micro_batches: \\[1, 2, 4, 8\\]"), "micro_batches: " + many);
  text = std::regex_replace(text, std::regex("max_lengths: \\[4096\\]"), "max_lengths: " + many);
  const TempFile f(text, ".yaml");
  const auto r = run_cli("plan " + f.path());
  require_located_refusal(r, f.path());
  CHECK_THAT(r.err, Contains("configurations"));
}

TEST_CASE("a megabyte-long value is cut in the message", "[cli][edge]") {
  std::string text = stepcast::testing::slurp(kCoefficients);
  text += std::string(1 << 20, 'k') + ": 1\n";
  const TempFile f(text, ".yaml");
  const auto r = run_cli("predict --coefficients " + f.path() + " --rows 512");
  require_located_refusal(r, f.path());
  CHECK(r.err.size() < 4096);
}

TEST_CASE("predict prices each record's own LoRA, a target the model lacks is refused at its column", "[cli][lora]") {
  const std::string head = kRecord.substr(0, kRecord.size() - 1);
  const TempFile f(kRecord + "\n" + head + R"(, "lora": {"rank": 16, "targets": ["q_proj"]}})" + "\n", ".jsonl");
  const auto r = run_cli("predict --coefficients " + kCoefficients + " --measurements " + f.path() + " --format json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto records = nlohmann::json::parse(r.out)["records"];
  REQUIRE(records.size() == 2);
  // q_proj only against the family's seven default targets: less LoRA work and less adapter state.
  CHECK(records[1]["work"]["lora_gemm_s_per_tflop"].get<double>() < records[0]["work"]["lora_gemm_s_per_tflop"].get<double>());
  CHECK(records[1]["predicted_step_s"].get<double>() < records[0]["predicted_step_s"].get<double>());
  CHECK(records[1]["predicted_peak_gib"].get<double>() < records[0]["predicted_peak_gib"].get<double>());
  const TempFile bad(head + R"(, "lora": {"rank": 16, "targets": ["qkv_proj"]}})" + "\n", ".jsonl");
  const auto refused = run_cli("predict --coefficients " + kCoefficients + " --measurements " + bad.path());
  require_located_refusal(refused, bad.path());
  CHECK(refused.err.find("lora target 'qkv_proj'") != std::string::npos);
  const auto rows = run_cli("predict --coefficients " + kCoefficients + " --rows 512 --lora-targets qkv_proj");
  CHECK(rows.exit_code == 2);
  CHECK(rows.err.find("--lora-targets: 'qkv_proj' names no nn.Linear module") != std::string::npos);
}
