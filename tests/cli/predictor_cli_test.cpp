// The default predictor and the user's LoRA through the command line, as a user runs them (predict/predictor.hpp,
// docs/method.md "The default predictor", docs/user-guide.md).
#include <nlohmann/json.hpp>

#include <regex>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "model/features.hpp"
#include "model/gpus.hpp"
#include "temp_file.hpp"

using namespace stepcast::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {
const std::string kScenarios = STEPCAST_SCENARIOS;
const std::string kRecords = std::string(STEPCAST_MEASUREMENTS) + "/records/";

nlohmann::json json_of(const std::string& args) {
  const auto r = run_cli(args + " --format json");
  INFO(args << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

// The 64-sample scenario with absolute paths, `extra` appended (a block of its own), `from`/`to` replaced.
std::string scenario_text(const std::string& extra = "", const std::string& from = "", const std::string& to = "") {
  std::string text = slurp(kScenarios + "/h200-hf-peft-64.yaml");
  text = std::regex_replace(text, std::regex("  file: corpora/"), "  file: " + kScenarios + "/corpora/");
  if (!from.empty()) text = std::regex_replace(text, std::regex(from), to);
  return text + extra;
}

double peak_of(const nlohmann::json& plan) { return plan["baseline"]["peak_gib"].get<double>(); }
double wall_of(const nlohmann::json& plan) { return plan["baseline"]["wall_clock_s"].get<double>(); }
}  // namespace

TEST_CASE("plan takes the user's LoRA: targets, rank and alpha, from flags or the scenario", "[predictor][lora]") {
  const TempFile plain(scenario_text(), ".yaml");
  const auto all = json_of("plan " + plain.path() + " --no-sweep");
  CHECK_THAT(all["predictor"].get<std::string>(), Contains("LoRA r16 on the family's all-linear targets"));
  const auto qv = json_of("plan " + plain.path() + " --no-sweep --lora-targets q_proj,v_proj --lora-rank 8 --lora-alpha 16");
  CHECK_THAT(qv["predictor"].get<std::string>(), Contains("LoRA r8 alpha 16 on q_proj,v_proj"));
  // Fewer adapters: less adapter work, fewer launches, less to train and keep.
  CHECK(wall_of(qv) < wall_of(all));
  CHECK(peak_of(qv) < peak_of(all));
  // The scenario's `lora:` block says the same, and a flag overrides it.
  const TempFile block(scenario_text("lora: {rank: 8, alpha: 16, targets: [q_proj, v_proj]}\n"), ".yaml");
  const auto from_block = json_of("plan " + block.path() + " --no-sweep");
  CHECK(peak_of(from_block) == Approx(peak_of(qv)));
  CHECK(wall_of(from_block) == Approx(wall_of(qv)));
  CHECK(peak_of(json_of("plan " + block.path() + " --no-sweep --lora-rank 16 --lora-targets " +
                        "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj")) == Approx(peak_of(all)));
}

TEST_CASE("an unknown LoRA target is exit 2 naming the modules the family has", "[predictor][lora]") {
  const TempFile plain(scenario_text(), ".yaml");
  auto r = run_cli("plan " + plain.path() + " --no-sweep --lora-targets q_proj,qkv_proj");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--lora-targets: 'qkv_proj' names no nn.Linear module of gemma-4-26b-a4b. Violated "
                             "constraint: one of down_proj, gate_proj, k_proj, o_proj, q_proj, up_proj, v_proj"));
  const TempFile block(scenario_text("lora: {targets: [q_proj, query_key_value]}\n"), ".yaml");
  r = run_cli("plan " + block.path() + " --no-sweep");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(block.path() + ":") && Contains("lora.targets[1]: 'query_key_value' names no nn.Linear"));
  r = run_cli("predict --model phi-3.5-mini --rows 1024 --lora-targets q_proj");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("one of down_proj, gate_up_proj, o_proj, qkv_proj"));
}

TEST_CASE("a scenario's fitted file for another model is set aside for the default, with a note", "[predictor]") {
  const TempFile other(scenario_text("", "model: gemma-4-26b-a4b",
                                     "model: qwen2.5-7b\ncoefficients: " + kScenarios +
                                         "/coefficients/h200-hf-peft-sdpa-grouped_mm.yaml"),
                       ".yaml");
  const auto r = run_cli("plan " + other.path() + " --no-sweep");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("note: " + other.path() + ":") && Contains("is fitted for model 'gemma-4-26b-a4b'") &&
                        Contains("answered by the default predictor"));
  CHECK_THAT(r.out, Contains("\ndefault per-category predictor for NVIDIA H200") &&
                        Contains("transferred model 'qwen2.5-7b', not among the 5 models"));
  // The same file given with --coefficients is the user's own: another model needs --transfer.
  const TempFile plain(scenario_text("", "model: gemma-4-26b-a4b", "model: qwen2.5-7b"), ".yaml");
  const auto own = run_cli("plan " + plain.path() + " --no-sweep --coefficients " + kScenarios +
                           "/coefficients/h200-hf-peft-sdpa-grouped_mm.yaml");
  CHECK(own.exit_code == 2);
  CHECK_THAT(own.err, Contains("model 'qwen2.5-7b'") && Contains("--transfer"));
}

TEST_CASE("predict, drift and plan answer a model with no coefficients given, and say which predictor", "[predictor]") {
  const auto p = json_of("predict --model qwen2.5-7b --rows 1024");
  CHECK_THAT(p["predictor"].get<std::string>(), StartsWith("default per-category predictor for NVIDIA H200"));
  // 1 x 1024 is below the pooled fit's widths (2048-8192): an extrapolated shape besides.
  CHECK(p["provenance"] == nlohmann::json::array({"transferred-model", "extrapolated-shape"}));
  CHECK(p["bound"] == "host");  // a short micro-batch of a never-measured family: its own launches' host time
  // --lora-rank alone: the family's targets at that rank. The adapters' roofline work is (2 r + 4 kappa) per
  // (in + out) element (docs/method.md, "LoRA by rank"): rank 32 over rank 16 is (64 + 4k) / (32 + 4k).
  const auto r32 = json_of("predict --model qwen2.5-7b --rows 1024 --lora-rank 32");
  const double k = stepcast::model::lora_gemm_ridge_flops_per_byte(stepcast::model::gpu_info("NVIDIA H200"));
  CHECK(r32["work"]["lora_gemm_s_per_tflop"].get<double>() ==
        Approx((64 + 4 * k) / (32 + 4 * k) * p["work"]["lora_gemm_s_per_tflop"].get<double>()));
  // --lora-dropout is the scenario's lora.dropout: 0 is peft's nn.Identity (docs/families.md).
  CHECK(json_of("predict --model qwen2.5-7b --rows 1024 --lora-dropout 0")["predictor"].is_string());
  CHECK(run_cli("predict --model qwen2.5-7b --rows 1024 --lora-dropout 1.5").exit_code == 2);
  // --autocast: HF Trainer's bf16=True; the adapters' GEMM work drops below half (bf16 bytes, tensor-core FLOPs) and
  // each adapter launches 4 more kernels (docs/method.md, "LoRA under autocast").
  const auto mixed = json_of("predict --model qwen2.5-7b --rows 4096,4096 --autocast");
  const auto plain = json_of("predict --model qwen2.5-7b --rows 4096,4096");
  CHECK(mixed["work"]["lora_gemm_s_per_tflop"].get<double>() < 0.5 * plain["work"]["lora_gemm_s_per_tflop"].get<double>());
  CHECK(mixed["predicted_step_s"].get<double>() < plain["predicted_step_s"].get<double>());
  CHECK(run_cli("predict --measurements " + kRecords + "h200-transfer3/transfer3-qwen2.5-7b.jsonl --autocast").exit_code == 2);
  // --full: a full fine-tune (docs/method.md, "Full fine-tuning"): the first line says so, AdamW's states and the
  // gradients are the weights' size, and LoRA's options are refused beside it.
  const auto trained = json_of("predict --model qwen2.5-7b --rows 4096,4096 --full");
  CHECK_THAT(trained["predictor"].get<std::string>(), Contains("full fine-tuning: every weight's gradient GEMM (x1.333"));
  CHECK(trained["predicted_peak_gib"].get<double>() > plain["predicted_peak_gib"].get<double>() + 40);
  CHECK(run_cli("predict --model qwen2.5-7b --rows 4096 --full --lora-rank 8").exit_code != 0);
  // --no-checkpointing (docs/method.md, "Checkpointing off"): x1.5 weight gradients, less time, more memory.
  const auto open = json_of("predict --model qwen2.5-7b --rows 4096,4096 --full --no-checkpointing");
  CHECK_THAT(open["predictor"].get<std::string>(), Contains("(x1.500") && Contains("no gradient checkpointing"));
  CHECK(open["predicted_step_s"].get<double>() < trained["predicted_step_s"].get<double>());
  CHECK(open["predicted_peak_gib"].get<double>() > trained["predicted_peak_gib"].get<double>());
  // --attention-kernels: the stack's own attention family (docs/gpus.md); another name is exit 2.
  const auto fa2 = json_of("predict --model qwen2.5-7b --rows 8192 --attention-kernels flash2");
  CHECK_THAT(fa2["predictor"].get<std::string>(), Contains("attention kernels 'flash2'"));
  CHECK(fa2["predicted_step_s"].get<double>() > json_of("predict --model qwen2.5-7b --rows 8192")["predicted_step_s"].get<double>());
  CHECK(run_cli("predict --model qwen2.5-7b --rows 8192 --attention-kernels flash9").exit_code == 2);
  // --full --autocast --dtype float32: fp32 master weights (twice the trained state) under bf16 compute.
  const auto master = json_of("predict --model qwen2.5-7b --rows 4096,4096 --full --autocast --dtype float32");
  CHECK(master["predicted_peak_gib"].get<double>() > trained["predicted_peak_gib"].get<double>() + 40);
  // drift against the records' own model, GPU and stack.
  const auto d = run_cli("drift --measurements " + kRecords + "h200-transfer3/transfer3-qwen2.5-7b.jsonl --tolerance 0.5");
  INFO(d.err);
  CHECK(d.exit_code == 0);
  CHECK_THAT(d.out, StartsWith("default per-category predictor for NVIDIA H200") && Contains("host side of harness"));
  // predict --measurements the same way, records of transformers + peft on its stack.
  const auto hf = json_of("predict --measurements " + kRecords + "h200-hf-peft-qwen3-30b-a3b.jsonl");
  CHECK_THAT(hf["predictor"].get<std::string>(), Contains("host side of transformers-peft"));
}

TEST_CASE("QLoRA from the flag or the scenario: a 4-bit base, less memory, the dequantizations priced", "[predictor][lora]") {
  const std::string ask = "predict --model llama-2-7b --gpu \"NVIDIA GeForce RTX 4090\" --transfer --rows 2048,2048 "
                          "--lora-rank 64";
  const auto bf16 = json_of(ask);
  const auto q4 = json_of(ask + " --quantize-base nf4-double-quant");
  CHECK(q4["predicted_peak_gib"].get<double>() < bf16["predicted_peak_gib"].get<double>() - 8);  // 12.6 -> 3.7 GiB of weights
  CHECK(q4["predicted_step_s"].get<double>() > bf16["predicted_step_s"].get<double>());
  const TempFile block(scenario_text("lora: {rank: 16, quantize_base: nf4-double-quant}\n"), ".yaml");
  const auto plan = json_of("plan " + block.path() + " --no-sweep");
  CHECK_THAT(plan["predictor"].get<std::string>(), Contains("base in nf4-double-quant (QLoRA)"));
  const TempFile plain(scenario_text(), ".yaml");
  CHECK(peak_of(plan) < peak_of(json_of("plan " + plain.path() + " --no-sweep")));
  CHECK(peak_of(json_of("plan " + plain.path() + " --no-sweep --quantize-base nf4-double-quant")) == Approx(peak_of(plan)));
  // Refusals: an unknown storage at its line, a full fine-tune of a frozen 4-bit base.
  const TempFile bad(scenario_text("lora: {quantize_base: int4}\n"), ".yaml");
  auto r = run_cli("plan " + bad.path() + " --no-sweep");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(bad.path() + ":") && Contains("quantize_base = 'int4'"));
  r = run_cli("predict --model llama-2-7b --rows 2048 --full --quantize-base nf4");
  CHECK(r.exit_code == 2);
}

TEST_CASE("bf16 adapters from the flag or the scenario: a shorter step than fp32 adapters, under autocast too",
          "[predictor][lora]") {
  const std::string ask = "predict --model llama-3-8b --rows 4096,4096";
  const auto fp32 = json_of(ask), bf16 = json_of(ask + " --adapter-dtype bfloat16");
  const auto autocast = json_of(ask + " --autocast");
  // No fp32 casts and bf16 GEMMs: shorter than autocast's step, which still casts each input twice.
  CHECK(bf16["predicted_step_s"].get<double>() < autocast["predicted_step_s"].get<double>());
  CHECK(autocast["predicted_step_s"].get<double>() < fp32["predicted_step_s"].get<double>());
  CHECK(bf16["predicted_peak_gib"].get<double>() < fp32["predicted_peak_gib"].get<double>());
  // Priced from peft's code, checked on one H100 only: the answer says so (the fp32 path's answer has no such note).
  CHECK_THAT(bf16["notes"].dump(), Contains("bf16 adapters are priced from peft's code and checked on one H100 only"));
  CHECK_FALSE(fp32.contains("notes"));
  CHECK(json_of(ask + " --adapter-dtype bfloat16 --autocast")["predicted_step_s"].get<double>() ==
        Approx(bf16["predicted_step_s"].get<double>()));
  CHECK(json_of(ask + " --adapter-dtype float32")["predicted_step_s"].get<double>() ==
        Approx(fp32["predicted_step_s"].get<double>()));
  const TempFile block(scenario_text("lora: {rank: 16, adapter_dtype: bfloat16}\n"), ".yaml");
  const auto plan = json_of("plan " + block.path() + " --no-sweep");
  CHECK_THAT(plan["predictor"].get<std::string>(), Contains("bf16 adapters"));
  const TempFile plain(scenario_text(), ".yaml");
  const auto flagged = json_of("plan " + plain.path() + " --no-sweep --adapter-dtype bfloat16");
  CHECK(wall_of(flagged) == Approx(wall_of(plan)));
  CHECK(wall_of(plan) < wall_of(json_of("plan " + plain.path() + " --no-sweep")));
  // Refusals: an unknown word names the two, a full fine-tune has no adapters.
  auto r = run_cli(ask + " --adapter-dtype bf16");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--adapter-dtype") && Contains("bfloat16"));
  CHECK(run_cli(ask + " --full --adapter-dtype bfloat16").exit_code == 2);
}
