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

TEST_CASE("describe --padded-rows shows each layer type's mask, backend, work and why", "[cli][describe][attention]") {
  const auto r = run_cli("describe --model gemma-4-26b-a4b --width 8192 --padded-rows 8192,5000 --format json");
  REQUIRE(r.exit_code == 0);
  const auto p = nlohmann::json::parse(r.out)["attention_path"];
  CHECK(p["tier"] == "hf-peft/sdpa-grouped_mm");
  CHECK(p["gpu"] == "NVIDIA H200");
  CHECK(p["padded_tokens"] == 3192);
  REQUIRE(p["layers"].size() == 2);
  const auto& sliding = p["layers"][0];
  CHECK(sliding["type"] == "sliding_attention");
  CHECK(sliding["mask"] == "sliding-window + padding mask");
  CHECK(sliding["backend"] == "cudnn");
  CHECK(sliding["term"] == "attention_masked_s_per_tflop");
  const auto& global = p["layers"][1];
  CHECK(global["mask"] == "padding mask");
  CHECK(global["kv"] == "repeat_kv");
  CHECK(global["backend"] == "efficient");
  CHECK(global["why"] == "cudnn: head_dim 512 > 256; flash: explicit mask; efficient");
  CHECK(global["work"] == "W x W");
  CHECK(global["pairs_per_layer"].get<double>() == Approx(2 * 8192.0 * 8192));
  // Forward QK^T + PV of 5 layers: 2 x 16 heads x (512 + 512) per pair.
  CHECK(global["forward_tflop"].get<double>() == Approx(5 * 2 * 16 * 1024 * 2 * 8192.0 * 8192 / 1e12));
  bool gemm = false;
  for (const auto& s : p["padded_share"])
    if (s["term"] == "gemm_s_per_tflop") {
      gemm = true;
      CHECK(s["padded_share"].get<double>() == Approx(3192.0 / 16384));
    }
  CHECK(gemm);
  const auto text = run_cli("describe --model gemma-4-26b-a4b --width 8192 --padded-rows 8192,5000");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("attention path  tier hf-peft/sdpa-grouped_mm on NVIDIA H200 (sm90)"));
  CHECK_THAT(text.out, Contains("why: cudnn: head_dim 512 > 256; flash: explicit mask; efficient"));
  CHECK_THAT(text.out, Contains("padded positions' share"));
}

TEST_CASE("describe --rows: unpadded rows take is_causal, --tier and --gpu change the rule", "[cli][describe][attention]") {
  const auto r = run_cli("describe --model llama-3-8b --rows 4096,4096 --format json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["attention_width"] == 4096);
  const auto& l = j["attention_path"]["layers"][0];
  CHECK(l["mask"] == "none (is_causal)");
  CHECK(l["kv"] == "enable_gqa");
  CHECK(l["backend"] == "cudnn");
  CHECK(l["work"] == "causal half");
  // On an RTX PRO 6000 (sm120) cuDNN comes after math: flash unpadded.
  const auto b = nlohmann::json::parse(
      run_cli("describe --model llama-3-8b --rows 4096,4096 --gpu \"NVIDIA RTX PRO 6000 Blackwell\" --format json").out);
  CHECK(b["attention_path"]["layers"][0]["backend"] == "flash");
  // A new shape builds one cuDNN graph on the H200, none where flash runs (docs/host.md, first-seen per graph).
  CHECK(j["attention_path"]["first_seen_graphs"] == 1);
  CHECK(b["attention_path"]["first_seen_graphs"] == 0);
  // Gemma-2 unpadded at its window: sliding layers masked, full layers causal, two graphs.
  const auto g = nlohmann::json::parse(run_cli("describe --model gemma-2-9b --rows 4096,4096 --format json").out);
  CHECK(g["attention_path"]["first_seen_graphs"] == 2);
  // The harness tier that keeps enable_gqa: Gemma-4's global layers fall to math.
  const auto h = nlohmann::json::parse(
      run_cli("describe --model gemma-4-26b-a4b --rows 4096 --tier sdpa-auto/grouped --format json").out);
  CHECK(h["attention_path"]["layers"][1]["backend"] == "math");
  // Packed documents: transformers' sdpa builds a block mask.
  const auto k = nlohmann::json::parse(
      run_cli("describe --model mistral-7b --width 8192 --documents 3000,2000,3000 --format json").out);
  CHECK(k["attention_path"]["layers"][0]["mask"] == "block mask (packed documents)");
  CHECK(k["attention_path"]["packed"] == true);
}

TEST_CASE("describe's micro-batch flags: every problem at once, exit 2", "[cli][describe][validation]") {
  const auto both = run_cli("describe --model llama-3-8b --rows 10 --padded-rows 10 --width 5");
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Contains("one of them"));
  CHECK_THAT(both.err, Contains("--width 5. Violated constraint: >= the longest row (10)"));
  const auto no_width = run_cli("describe --model llama-3-8b --padded-rows 100,50");
  CHECK(no_width.exit_code == 2);
  CHECK_THAT(no_width.err, Contains("--padded-rows: no --width"));
  const auto tier = run_cli("describe --model llama-3-8b --rows 100 --tier hf-peft/sdpa-batched_mm");
  CHECK(tier.exit_code == 2);
  CHECK_THAT(tier.err, Contains("sdpa-<grouped_mm|eager>, flash_attention_2-<grouped_mm|eager> or eager-<grouped_mm|eager>"));
  const auto gpu = run_cli("describe --model llama-3-8b --rows 100 --gpu \"NVIDIA H300\"");
  CHECK(gpu.exit_code == 2);
  const auto pack = run_cli("describe --model llama-3-8b --documents 10,20 --pack-attention sideways");
  CHECK(pack.exit_code == 2);
  CHECK_THAT(pack.err, Contains("--pack-attention 'sideways'"));
}

TEST_CASE("describe shows GPT-OSS's eager attention, per layer type and on its attention path", "[cli][describe][attention]") {
  const auto plain = run_cli("describe --model gpt-oss-20b");
  REQUIRE(plain.exit_code == 0);
  CHECK_THAT(plain.out, Contains("20,914,757,184"));
  CHECK_THAT(plain.out, Contains("sliding_attention x12: 64 heads x 64, 8 KV heads, window 128, attention sinks, eager attention"));
  const auto r = run_cli("describe --model gpt-oss-20b --rows 4096,4096 --format json");
  REQUIRE(r.exit_code == 0);
  const auto p = nlohmann::json::parse(r.out)["attention_path"];
  REQUIRE(p["layers"].size() == 2);
  for (const auto& l : p["layers"]) {
    CHECK(l["count"] == 12);
    CHECK(l["backend"] == "eager");
    CHECK(l["explicit_mask"] == true);
    CHECK(l["kv"] == "repeat_kv");
    CHECK(l["work"] == "W x W");
    CHECK(l["pairs_per_layer"].get<double>() == Approx(2 * 4096.0 * 4096));
    CHECK(l["term"] == "gemm_s_per_tflop (QK^T, PV) + memory_s_per_gb (the passes over the scores)");
  }
  CHECK(p["layers"][0]["mask"] == "eager sliding-window mask (always built)");
  CHECK(p["layers"][1]["mask"] == "eager causal mask (always built)");
  CHECK(p["first_seen_graphs"] == 0);  // no cuDNN graph: nothing goes through SDPA
  const auto text = run_cli("describe --model gpt-oss-20b --rows 4096,4096");
  CHECK_THAT(text.out, Contains("backend eager"));
  CHECK_THAT(text.out, Contains("_supports_sdpa = False"));
}
