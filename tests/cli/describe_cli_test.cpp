// The real executable on the shipped models: output and exit codes as a user sees them.
#include <nlohmann/json.hpp>

#include <cmath>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"

using stepcast::testing::run_cli;
using Catch::Matchers::Contains;

TEST_CASE("describe gives the known answers for Gemma-4 in JSON", "[cli][describe]") {
  const auto r = run_cli("describe --model gemma-4-26b-a4b --format json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["total_params"] == 25'233'141'760LL);
  CHECK(j["lora_modules"] == 205);
  CHECK(j["lora_targets"].size() == 7);
  CHECK(j["active_params"].get<int64_t>() > 3'700'000'000);
  CHECK(j["layers"].size() == 2);
  CHECK(j["layers"][1]["type"] == "full_attention");
  CHECK(j["lora_params"].get<int64_t>() > 0);
}

TEST_CASE("describe prints a readable summary for a dense model", "[cli][describe]") {
  const auto r = run_cli("describe --model " STEPCAST_SCENARIOS "/models/llama-3-8b.json");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("8,030,261,248"));
  CHECK_THAT(r.out, Contains("LoRA"));
}

TEST_CASE("bad input exits 2 with a message, never a crash", "[cli][validation]") {
  static const stepcast::testing::TempFile broken("{\"model_type\": ", ".json");
  const std::string broken_path = broken.path();
  struct Case {
    std::string args;
    std::string message;
  };
  auto c = GENERATE_COPY(values<Case>({
      {"describe --model no-such-model", "no-such-model"},
      {"describe --model " + broken_path, "malformed JSON"},
      {"describe --model gemma-4-26b-a4b --lora-targets q_prj", "'q_prj' names no nn.Linear module"},
      {"describe --model gemma-4-26b-a4b --lora-rank 0", "--lora-rank"},
      {"describe --model gemma-4-26b-a4b --format yaml", "--format"},
      {"describe", "--model is required"},
      {"no-such-command", ""},
  }));
  const auto r = run_cli(c.args);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(c.message));
}

TEST_CASE("--help teaches and exits 0", "[cli]") {
  const auto r = run_cli("describe --help");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("Examples:"));
  CHECK(run_cli("--help").exit_code == 0);
  CHECK(run_cli("--version").exit_code == 0);
}

TEST_CASE("describe takes each family's own LoRA targets and refuses another family's", "[cli][describe][family]") {
  const auto phi = run_cli("describe --model phi-4 --format json");
  REQUIRE(phi.exit_code == 0);
  const auto j = nlohmann::json::parse(phi.out);
  CHECK(j["total_params"] == 14'659'507'200LL);
  CHECK(j["lora_targets"] == nlohmann::json({"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
  CHECK(j["lora_modules"] == 160);
  const auto wrong = run_cli("describe --model phi-4 --lora-targets q_proj,v_proj");
  CHECK(wrong.exit_code == 2);
  CHECK_THAT(wrong.err, Contains("'q_proj' names no nn.Linear module of phi-4. Violated constraint: one of "
                                 "down_proj, gate_up_proj, o_proj, qkv_proj"));
  const auto mla = run_cli("describe --model deepseek-v2-lite --lora-targets q_a_proj");
  CHECK(mla.exit_code == 2);
  CHECK_THAT(mla.err, Contains("kv_a_proj_with_mqa"));
}

TEST_CASE("describe shows MLA, shared experts and the MTP layers of DeepSeek-V3", "[cli][describe][family]") {
  const auto r = run_cli("describe --model deepseek-v3 --format json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["checkpoint_elements"] == 671'026'419'200LL);
  CHECK(j["mtp_params_not_built"].get<int64_t>() > 11'000'000'000LL);
  CHECK(j["layers"][0]["kv_lora_rank"] == 512);
  CHECK(j["layers"][0]["v_head_dim"] == 128);
  CHECK(j["moe"]["shared_intermediate_size"] == 2048);
  CHECK(j["gemm_flops_per_token"]["latent_proj"].get<double>() > 0);
}

TEST_CASE("describe estimates the peak from the architecture, LoRA or --full", "[cli][describe][memory]") {
  const auto lora = run_cli("describe --model mixtral-8x7b --width 8192 --format json");
  const auto full = run_cli("describe --model mixtral-8x7b --width 8192 --full --format json");
  REQUIRE(lora.exit_code == 0);
  REQUIRE(full.exit_code == 0);
  const auto a = nlohmann::json::parse(lora.out)["architecture_memory"];
  const auto b = nlohmann::json::parse(full.out)["architecture_memory"];
  const int64_t weights = 2 * 46'702'792'704LL;
  CHECK(a["items_bytes"]["weights"] == weights);
  // Mixtral's 32000-token vocabulary: 12.05 bytes per logit (no final softcap) of 8192 tokens; 32 layers x 4096
  // x 2 bytes saved.
  CHECK(a["items_bytes"]["logits_and_loss"] == std::llround(8192 * 32000 * 12.05));
  CHECK(a["items_bytes"]["saved_layer_inputs"] == 8192LL * 32 * 4096 * 2);
  CHECK(b["items_bytes"]["gradients_and_adamw_states"] == 3 * weights);
  CHECK(b["total_gib"].get<double>() > a["total_gib"].get<double>() + 250);
  const auto text = run_cli("describe --model phi-4 --width 2048");
  CHECK_THAT(text.out, Contains("peak memory"));
}
