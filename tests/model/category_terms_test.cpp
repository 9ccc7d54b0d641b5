// The per-category step terms (model/features.hpp, docs/method.md "Per-category model"): the GEMM work split
// into dense, LoRA and expert parts, the memory-bound bytes, how files written before the split read, and
// which GPU rate each new term is carried by.
#include "catch.hpp"
#include "uniform_batch.hpp"
#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/features.hpp"
#include "model/gpu_efficiency.hpp"
#include "model/launches.hpp"
#include "model/modules.hpp"
#include "model/step_model.hpp"
#include "model/transfer.hpp"
#include "model/errors.hpp"
#include "model/work.hpp"

namespace sm = stepcast::model;
using Catch::Matchers::StartsWith;

namespace {
const char* const kShipped = STEPCAST_SCENARIOS "/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml";

using stepcast::testing::uniform_batch;

sm::FeatureMaker h200_maker(const sm::ModelShape& shape, sm::ExpertWork work = sm::ExpertWork::per_flop) {
  return sm::FeatureMaker(shape, sm::expand_modules(shape), sm::tier_from_label("sdpa-auto/grouped/gqa-expand"),
                          sm::gpu_info("NVIDIA H200"), sm::LoraChoice{}, work);
}
}  // namespace

TEST_CASE("the three GEMM terms add up to every GEMM FLOP the model had before the split", "[features][category]") {
  for (const char* name : {"gemma-4-26b-a4b", "llama-3-8b", "qwen3-30b-a3b"}) {
    INFO(name);
    const auto shape = stepcast::io::load_model(name);
    const auto f = h200_maker(shape).step(uniform_batch(2, 4096));
    const auto lora = sm::plan_lora(shape, sm::default_lora_targets(), 16);
    // The adapters' FLOPs and kappa x their fp32 bytes, 4 (in + out) = 4 params / rank (docs/method.md, "LoRA by rank").
    const double kappa = sm::lora_gemm_ridge_flops_per_byte(sm::gpu_info("NVIDIA H200"));
    const double adapters = 2.0 * static_cast<double>(lora.params) + kappa * 4.0 * static_cast<double>(lora.params) / 16;
    const double all = (sm::gemm_flops_per_token(shape).total() + adapters) * 8192 * 3 / 1e12;
    CHECK(f.x[sm::kGemm] + f.x[sm::kLoraGemm] + f.x[sm::kExpertGemm] == Approx(all).epsilon(1e-9));
    CHECK(f.x[sm::kLoraGemm] > 0);
    CHECK(f.x[sm::kMemoryBound] > 0);
    CHECK(f.expert_tflop <= f.x[sm::kExpertGemm]);
  }
  const auto dense = h200_maker(stepcast::io::load_model("llama-3-8b")).step(uniform_batch(1, 2048));
  CHECK(dense.x[sm::kExpertGemm] == 0);
}

TEST_CASE("the experts' roofline: efficiency saturates in tokens per expert, per FLOP files read as before",
          "[features][category][experts]") {
  // docs/method.md, "Experts by tokens per expert": x = FLOPs + kappa_w x streamed weights + kappa_r x routed bytes.
  const auto qwen3 = stepcast::io::load_model("qwen3-30b-a3b");  // 128 experts, top 8: every expert hit from 2048 tokens
  const auto roof = h200_maker(qwen3, sm::ExpertWork::roofline);
  const auto flop = h200_maker(qwen3, sm::ExpertWork::per_flop);
  const auto small = roof.step(uniform_batch(1, 2048)), large = roof.step(uniform_batch(4, 2048));
  // Per token, the roofline's work falls as the batch grows (the weights are streamed once for more tokens) ...
  CHECK(large.x[sm::kExpertGemm] / 4 < small.x[sm::kExpertGemm]);
  // ... and its FLOP part is the per-FLOP work, which grows as the tokens.
  CHECK(flop.step(uniform_batch(4, 2048)).x[sm::kExpertGemm] == Approx(4 * flop.step(uniform_batch(1, 2048)).x[sm::kExpertGemm]));
  CHECK(small.expert_tflop == Approx(flop.step(uniform_batch(1, 2048)).expert_tflop));
  // The stream floor belongs to per-FLOP files only: the roofline prices the same bytes.
  CHECK(small.x[sm::kExpertStream] == 0);
  CHECK(flop.step(uniform_batch(1, 2048)).x[sm::kExpertStream] > 0);
  // The streamed and routed parts as the constants give them: (x - FLOPs) from kappa_w and kappa_r alone.
  const double extra = small.x[sm::kExpertGemm] - flop.step(uniform_batch(1, 2048)).x[sm::kExpertGemm];
  const auto h200 = sm::gpu_info("NVIDIA H200");
  const double streamed = flop.step(uniform_batch(1, 2048)).x[sm::kExpertStream] * 1e9;  // bytes, both passes
  const double routed = 2048.0 * 8 * (2048 + 768) * 2 * 48 * 2;                     // bytes: T k (h + f) bf16, 48 layers, 2 passes
  CHECK(extra == Approx((sm::expert_stream_ridge_flops_per_byte(h200) * streamed +
                         sm::expert_route_ridge_flops_per_byte(h200) * routed) / 1e12).epsilon(1e-9));
  // A loop of per-expert GEMMs keeps the FLOP count: the constants are grouped GEMMs'.
  const sm::FeatureMaker loop(qwen3, sm::expand_modules(qwen3), sm::tier_from_label("sdpa-auto/loop"), h200,
                              sm::LoraChoice{}, sm::ExpertWork::roofline);
  CHECK(loop.step(uniform_batch(1, 2048)).x[sm::kExpertStream] > 0);
  // A dense model has no expert work either way.
  CHECK(h200_maker(stepcast::io::load_model("llama-3-8b"), sm::ExpertWork::roofline).step(uniform_batch(1, 2048)).x[sm::kExpertGemm] == 0);
}

TEST_CASE("memory-bound bytes grow with tokens, not with width squared", "[features][category]") {
  const auto maker = h200_maker(stepcast::io::load_model("llama-3-8b"));
  const double one = maker.step(uniform_batch(1, 2048)).x[sm::kMemoryBound];
  CHECK(maker.step(uniform_batch(4, 2048)).x[sm::kMemoryBound] == Approx(4 * one));
  CHECK(maker.step(uniform_batch(1, 8192)).x[sm::kMemoryBound] == Approx(4 * one));
}

TEST_CASE("a file written before the split reads its LoRA and expert rates as its GEMM rate", "[io][category]") {
  const auto c = stepcast::io::load_coefficients(kShipped);
  for (int term : {sm::kLoraGemm, sm::kExpertGemm}) {
    INFO(sm::step_term_names()[term]);
    CHECK(c.step[term].selected);
    CHECK_THAT(c.step[term].reason, StartsWith("converted:"));
  }
  CHECK(c.step[sm::kExpertGemm].value == c.step[sm::kGemm].value);
  // The adapters' rate was per FLOP then: the reader carries it to the roofline's work at the file's rank
  // (docs/method.md, "LoRA by rank"), pricing that rank as before.
  CHECK(c.lora_work == "roofline");
  CHECK(c.step[sm::kLoraGemm].value ==
        Approx(c.step[sm::kGemm].value * sm::lora_per_flop_to_roofline(c.lora_rank, sm::gpu_info(c.gpu))).epsilon(1e-12));
  CHECK_THAT(c.step[sm::kAttentionEfficient].reason, StartsWith("converted:"));
  CHECK(c.step[sm::kAttentionEfficient].value == c.step[sm::kAttention].value);
  CHECK_FALSE(c.step[sm::kMemoryBound].selected);
  CHECK_THAT(c.step[sm::kMemoryBound].reason, StartsWith("not selected: absent"));
}

TEST_CASE("LoRA GEMMs carry by the fp32 peak, memory-bound bytes and GEMMs by what the GPUs achieve", "[transfer][category]") {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "sdpa-auto/grouped/gqa-expand";
  c.step[sm::kGemm] = {0.002, 0, true, ""};
  c.step[sm::kLoraGemm] = {0.5, 0, true, ""};
  c.step[sm::kMemoryBound] = {0.0004, 0, true, ""};
  c.memory_work = "plain";  // bytes that are not the traffic: carried whole by the copy rates (a weighted file's
                            // split: tests/model/transfer_test.cpp)
  const auto from = sm::gpu_info("NVIDIA H200"), to = sm::gpu_info("NVIDIA RTX PRO 6000 Blackwell");
  const auto t = sm::transfer_coefficients(c, {"", to.name, ""}, true);
  CHECK(t.coefficients.step[sm::kLoraGemm].value == Approx(0.5 * from.peaks.fp32_tflops / to.peaks.fp32_tflops));
  // Measured copy bandwidth (H200: its own points) against the family's (the sm_120 card has none published).
  const auto& m = sm::shipped_efficiency();
  const double bytes = 256.0 * (1 << 20);
  CHECK(t.coefficients.step[sm::kMemoryBound].value ==
        Approx(0.0004 * m.achieved(from, sm::KernelCategory::memory, bytes).rate /
               m.achieved(to, sm::KernelCategory::memory, bytes).rate));
  CHECK(t.coefficients.step[sm::kGemm].value ==
        Approx(0.002 * m.achieved(from, sm::KernelCategory::gemm, 4096).rate /
               m.achieved(to, sm::KernelCategory::gemm, 4096).rate));
  const auto e = sm::step_efficiencies(c, from);
  CHECK(e[sm::kMemoryBound] == Approx(1.0 / (0.0004 * from.peaks.memory_gbs)));
}

TEST_CASE("a split-off rate left at 0 is priced at the rate it was split from", "[features][category]") {
  std::array<double, sm::kStepTerms> c{};
  c[sm::kGemm] = 0.004;
  sm::StepFeatures f;
  f.x[sm::kGemm] = 10;
  f.x[sm::kLoraGemm] = 1;
  f.x[sm::kExpertGemm] = 5;
  f.x[sm::kMemoryBound] = 100;  // no source row: free when not selected
  CHECK(sm::device_seconds(c.data(), f) == Approx(0.004 * 16));
  c[sm::kLoraGemm] = 0.1;
  CHECK(sm::device_seconds(c.data(), f) == Approx(0.004 * 15 + 0.1));
}

TEST_CASE("an old file predicts what it predicted before the split", "[features][category]") {
  // Before the split the step was c_gemm x (all GEMM TFLOPs) + the other terms; the converted rates give it.
  const auto c = stepcast::io::load_coefficients(kShipped);
  const auto shape = stepcast::io::load_model(c.model);
  const sm::StepModel m(shape, c);
  const auto f = m.features().step(uniform_batch(2, 4096));
  // Its adapters priced per FLOP: the roofline work at the file's rank times the conversion is their FLOPs.
  const double lora_flops = f.x[sm::kLoraGemm] * sm::lora_per_flop_to_roofline(c.lora_rank, sm::gpu_info(c.gpu));
  const double gemm = c.step[sm::kGemm].value * (f.x[sm::kGemm] + lora_flops + f.x[sm::kExpertGemm]);
  double rest = 0;
  for (int i : {sm::kFixed, sm::kAttention, sm::kAttentionEfficient, sm::kAttentionMath, sm::kMaskPath})
    rest += c.step[i].selected ? c.step[i].value * f.x[i] : 0.0;
  // The masked rows it lacks read as the rates they were split from (the mask bytes as not selected).
  CHECK_THAT(c.step[sm::kAttentionMasked].reason, StartsWith("converted:"));
  CHECK_FALSE(c.step[sm::kMaskBytes].selected);
  CHECK(f.x[sm::kAttentionMasked] > 0);  // 2 x 4096 reaches Gemma-4's 1024 window: masked sliding layers
  rest += c.step[sm::kAttention].value * f.x[sm::kAttentionMasked];
  rest += c.step[sm::kAttentionEfficient].value * f.x[sm::kAttentionEfficientMasked];
  CHECK(m.sides(uniform_batch(2, 4096)).device_s == Approx(gemm + rest));
}

TEST_CASE("MLA attention is priced per pair as 2 heads (qk_dim + v_dim): DeepSeek-V2-Lite's 192 + 128",
          "[features][category][mla]") {
  // DeepSeek-V2-Lite: 27 layers of 16 heads, q/k heads of 128 nope + 64 rope = 192, v heads of 128. One row of
  // 1024 (a whole number of 128-row tiles) under is_causal: 1024 x 1025 / 2 pairs; forward + backward 3.5 passes.
  const auto shape = stepcast::io::load_model("deepseek-v2-lite");
  const auto f = h200_maker(shape).step(uniform_batch(1, 1024));
  const double attention = f.x[sm::kAttention] + f.x[sm::kAttentionEfficient] + f.x[sm::kAttentionMath];
  const double per_pair = 2.0 * 16 * (192 + 128);
  CHECK(attention == Approx(per_pair * 27 * (1024.0 * 1025 / 2) * 3.5 / 1e12).epsilon(1e-12));
  CHECK(per_pair < 4.0 * 16 * 192);  // 4 heads head_dim would count v at q/k's width
}

TEST_CASE("LoRA adapters by a roofline: nearly flat in the rank below the fp32 ridge, linear above", "[features][lora]") {
  // kappa = the H200's fp32 ridge (67 TFLOP/s / 4800 GB/s) x 0.80 / 0.53, the shares its adapter GEMMs reached at
  // ranks 16-256 (measurements/records/h200-lora-rank).
  const auto h200 = sm::gpu_info("NVIDIA H200");
  const double kappa = sm::lora_gemm_ridge_flops_per_byte(h200);
  CHECK(kappa == Approx(67.0e3 / 4800.0 * 0.80 / 0.53).epsilon(1e-12));
  CHECK(kappa == Approx(21.07).epsilon(0.001));
  const auto shape = stepcast::io::load_model("llama-3-8b");
  const auto tier = sm::parse_tier("hf-peft/sdpa-grouped_mm");
  auto x = [&](int64_t rank) {
    return sm::FeatureMaker(shape, tier, h200, sm::LoraChoice{rank, {}, 0.05}).step(uniform_batch(2, 4096)).x[sm::kLoraGemm];
  };
  // Llama-3-8B's all-linear adapters: sum of (in + out) = 81,920 a layer x 32 layers; 8192 tokens x the tier's passes.
  const double passes = tier.recompute ? 4 : 3;
  const double per_rank_unit = 8192.0 * passes * 2 * 81920 * 32 / 1e12;   // TFLOPs of one rank
  const double bytes_part = 8192.0 * passes * kappa * 4 * 81920 * 32 / 1e12;
  CHECK(x(256) - x(128) == Approx(128 * per_rank_unit).epsilon(1e-9));
  CHECK(x(16) == Approx(16 * per_rank_unit + bytes_part).epsilon(1e-9));
  // Halving rank 16 saves 14 % of the adapters' time (measured: none), where per FLOP it saved half; rank 256 costs
  // 5.1x rank 16 (measured in the kernel tables: 949 / 185 ms = 5.1x), where per FLOP it cost 16x.
  CHECK(x(8) / x(16) == Approx(0.862).epsilon(0.005));
  CHECK(x(256) / x(16) == Approx(5.13).epsilon(0.01));
  // Another GPU's kappa is its own ridge: the A100's fp32 19.5 TFLOP/s over its bandwidth.
  const auto a100 = sm::gpu_info("NVIDIA A100-SXM4-80GB");
  CHECK(sm::lora_gemm_ridge_flops_per_byte(a100) ==
        Approx(a100.peaks.fp32_tflops * 1e3 / a100.peaks.memory_gbs * 0.80 / 0.53).epsilon(1e-12));
}

TEST_CASE("the weighted memory-bound count: norms' passes and LoRA's elementwise bytes, by the modules it wraps",
          "[features][category][memory]") {
  // docs/method.md, "Memory-bound work": weighted = plain + (kNormPasses - 1) x the norms' bytes + kLoraElementwiseBytes
  // x the adapters' (in + out) elements, a token, 3 passes.
  const auto llama = stepcast::io::load_model("llama-3-8b");
  const auto modules = sm::expand_modules(llama);
  const auto tier = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto h200 = sm::gpu_info("NVIDIA H200");
  const std::vector<std::string> attention{"q_proj", "k_proj", "v_proj", "o_proj"};
  const std::vector<std::string> all{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  auto memory = [&](const std::vector<std::string>& targets, sm::MemoryWork work, double dropout = 0.05) {
    return sm::FeatureMaker(llama, modules, tier, h200, sm::LoraChoice{16, targets, dropout}, sm::ExpertWork::roofline, work)
        .step(uniform_batch(2, 4096))
        .x[sm::kMemoryBound];
  };
  const double tokens_passes = 8192.0 * 3 / 1e9;
  const auto work_all = sm::token_work(llama, modules, sm::plan_lora(modules, all, 16));
  const auto lora_all = sm::plan_lora(modules, all, 16), lora_attention = sm::plan_lora(modules, attention, 16);
  // Plain: the model's elementwise bytes only, whatever LoRA wraps (the rate carried the adapters' work).
  CHECK(memory(all, sm::MemoryWork::plain) == Approx(memory(attention, sm::MemoryWork::plain)));
  CHECK(memory(all, sm::MemoryWork::plain) == Approx(work_all.elementwise_bytes * tokens_passes));
  // Weighted: the norms' extra passes and the adapters' bytes on top, per the modules wrapped.
  const double norms = (sm::kNormPasses - 1) * work_all.norm_bytes;
  CHECK(work_all.norm_bytes == Approx(2.0 * 2 * (2 * 4096 * 32 + 4096)));  // two RMSNorms a layer and the final one
  CHECK(memory(all, sm::MemoryWork::weighted) ==
        Approx((work_all.elementwise_bytes + norms +
                sm::kLoraElementwiseBytes * static_cast<double>(lora_all.in_out_features)) * tokens_passes));
  CHECK(memory(all, sm::MemoryWork::weighted) - memory(attention, sm::MemoryWork::weighted) ==
        Approx(sm::kLoraElementwiseBytes * static_cast<double>(lora_all.in_out_features - lora_attention.in_out_features) *
               tokens_passes));
  // No dropout takes its bytes out of either count, in that count's units.
  CHECK(memory(all, sm::MemoryWork::weighted) - memory(all, sm::MemoryWork::weighted, 0.0) ==
        Approx(sm::kLoraDropoutBytesPerInputWeighted * static_cast<double>(lora_all.in_features) * tokens_passes));
  CHECK(memory(all, sm::MemoryWork::plain) - memory(all, sm::MemoryWork::plain, 0.0) ==
        Approx(sm::kLoraDropoutBytesPerInput * static_cast<double>(lora_all.in_features) * tokens_passes));
  CHECK_THROWS_AS(sm::memory_work_from("bytes"), stepcast::InputError);
  // Under autocast: +18 raw bytes an adapter input element and -44 an output element over the step (docs/method.md,
  // "LoRA under autocast"), in the weighted count's bytes (11.9 a pass stands for 59.5 raw).
  const auto autocast = sm::FeatureMaker(llama, modules, tier, h200, sm::LoraChoice{16, all, 0.05, true},
                                         sm::ExpertWork::roofline, sm::MemoryWork::weighted)
                            .step(uniform_batch(2, 4096))
                            .x[sm::kMemoryBound];
  const double in = static_cast<double>(lora_all.in_features), out = static_cast<double>(lora_all.in_out_features) - in;
  CHECK(autocast - memory(all, sm::MemoryWork::weighted) ==
        Approx(sm::kLoraElementwiseBytes * (18 * in - 44 * out) / 59.5 * tokens_passes));
  CHECK(autocast < memory(all, sm::MemoryWork::weighted));  // Llama's adapters have more output than input elements
}

TEST_CASE("LoRA under autocast: bf16 adapter GEMMs, 4 more launches an adapter", "[features][category][lora]") {
  const auto llama = stepcast::io::load_model("llama-3-8b");
  const auto modules = sm::expand_modules(llama);
  const auto tier = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto h200 = sm::gpu_info("NVIDIA H200");
  const auto lora = sm::plan_lora(modules, sm::default_lora_targets(modules), 64);
  const double flops = 2.0 * static_cast<double>(lora.params), kappa = sm::lora_gemm_ridge_flops_per_byte(h200);
  // fp32: the FLOPs and 4 bytes an (in + out) element; autocast: the FLOPs at the fp32 / bf16 peak ratio, 2 bytes.
  CHECK(sm::lora_work_per_token(flops, lora, false, h200) ==
        Approx(flops + kappa * 4 * static_cast<double>(lora.in_out_features)));
  CHECK(sm::lora_work_per_token(flops, lora, true, h200) ==
        Approx(flops * h200.peaks.fp32_tflops / h200.peaks.bf16_tflops +
               kappa * 2 * static_cast<double>(lora.in_out_features)));
  CHECK(sm::lora_work_per_token(flops, lora, true, h200) < 0.5 * sm::lora_work_per_token(flops, lora, false, h200));
  const sm::LaunchModel fp32(llama, modules, tier, lora), mixed(llama, modules, tier, lora, sm::AdapterPath::autocast);
  CHECK(mixed.per_step_all_experts() - fp32.per_step_all_experts() ==
        Approx(sm::kAutocastLaunchesPerAdapter * static_cast<double>(lora.modules)));
  CHECK(lora.modules == 224);
  // The counted tables: 12,699 launches under autocast against 11,801 without (h100-autocast-lora).
  CHECK(sm::kAutocastLaunchesPerAdapter * 224 == Approx(12699 - 11801).epsilon(0.01));
}

TEST_CASE("a file without memory_work reads as plain, the shipped default is weighted",
          "[io][category][memory]") {
  CHECK(stepcast::io::load_coefficients(kShipped).memory_work == "plain");
  const auto pooled = stepcast::io::load_coefficients(STEPCAST_SCENARIOS "/coefficients/h200-hf-peft-pooled.yaml");
  CHECK(pooled.memory_work == "weighted");
  // The default's rate is per weighted byte: a few times the H200's bandwidth cost, not 20 (docs/method.md).
  const double per_gb = pooled.step[sm::kMemoryBound].value;
  CHECK(per_gb > 1.0 / 4800);
  CHECK(per_gb < 4.0 / 4800);
  // An attention-only LoRA prices less memory-bound time than all-linear under the default (same model, same shape).
  const auto llama = stepcast::io::load_model("llama-3-8b");
  auto step = [&](std::vector<std::string> targets) {
    return sm::StepModel(llama, pooled, sm::gpu_info("NVIDIA H200"), sm::LoraChoice{16, std::move(targets), 0.05})
        .step_s(uniform_batch(2, 4096));
  };
  CHECK(step({"q_proj", "k_proj", "v_proj", "o_proj"}) <
        0.8 * step({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
}

TEST_CASE("cuDNN's bias path: a padded odd width costs more per pair, is_causal does not",
          "[features][attention]") {
  // measurements/records/h200-width-alignment: the forward 1.82x, the backward 1.28x per QK^T + PV FLOP.
  const auto shape = stepcast::io::load_model("llama-3-8b");
  const auto masked_per_pair = [&](const std::string& tier, std::vector<int64_t> rows, int64_t width) {
    const sm::FeatureMaker f(shape, sm::expand_modules(shape), sm::tier_from_label(tier), sm::gpu_info("NVIDIA H200"),
                             sm::LoraChoice{}, sm::ExpertWork::roofline);
    sm::MicroBatch b;
    b.rows = std::move(rows);
    b.width = width;
    const double tiled = static_cast<double>(sm::round_to_tile(width));  // the kernel's tiles, not the width
    return f.step(b).x[sm::kAttentionMasked] / (tiled * tiled);
  };
  // Without checkpointing 1 forward + 2.5 backward passes; with it one more forward.
  const double plain = (1.82 * 1 + 1.28 * 2.5) / 3.5, ckpt = (1.82 * 2 + 1.28 * 2.5) / 4.5;
  CHECK(masked_per_pair("sdpa-auto/grouped", {3945, 2367}, 3945) /
            masked_per_pair("sdpa-auto/grouped", {3968, 2381}, 3968) ==
        Approx(plain).epsilon(1e-9));
  CHECK(masked_per_pair("sdpa-auto/grouped/ckpt", {3945, 2367}, 3945) /
            masked_per_pair("sdpa-auto/grouped/ckpt", {4032, 2419}, 4032) ==
        Approx(ckpt).epsilon(1e-9));
  // Unpadded rows reach SDPA with is_causal and no bias: no masked work at any width.
  CHECK(masked_per_pair("sdpa-auto/grouped", {3945, 3945}, 3945) == 0.0);
  // The memory-efficient kernel (forced) is not cuDNN: its masked work is priced per pair at every width.
  const sm::LayerPlan efficient{sm::Backend::efficient, true};
  CHECK(sm::unaligned_bias_factor(efficient, 3945, 2, 4.5) == 1.0);
  const sm::LayerPlan cudnn{sm::Backend::cudnn, true};
  CHECK(sm::unaligned_bias_factor(cudnn, 3945, 2, 4.5) == Approx(ckpt));
  CHECK(sm::unaligned_bias_factor(cudnn, 3904, 2, 4.5) == 1.0);  // 61 x 64
  // Only odd widths pay: 3944, 3946, 3952 and 3936 ran at 3968's speed, 3945 5 % slower (H100,
  // measurements/records/h100-aligned-widths).
  for (int64_t even : {3936, 3944, 3946, 3952, 2048}) CHECK(sm::unaligned_bias_factor(cudnn, even, 2, 4.5) == 1.0);
  for (int64_t odd : {3841, 3945, 2047}) CHECK(sm::unaligned_bias_factor(cudnn, odd, 2, 4.5) == Approx(ckpt));
}
