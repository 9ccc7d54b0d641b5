// Table-driven tests of the tier rules (SDPA backend choice, labels) and of the features' scaling.
#include <cmath>

#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/features.hpp"
#include "model/step_model.hpp"
#include "model/errors.hpp"
#include "model/tiers.hpp"

namespace sm = stepcast::model;

TEST_CASE("the SDPA dispatcher rules of docs/families.md", "[tiers]") {
  // PyTorch 2.11's select_sdp_backend, bf16 training (docs/families.md, "Which backend"). mask: an explicit
  // attn_mask; gqa: enable_gqa with fewer K/V heads (K/V not repeated).
  struct Case {
    int64_t head_dim, v_dim, heads, kv_heads;
    bool mask, gqa;
    int sm;
    sm::Backend expect;
  };
  auto c = GENERATE(values<Case>({
      {256, 256, 16, 8, true, true, 90, sm::Backend::cudnn},       // 256-wide GQA: cuDNN with a mask
      {256, 256, 16, 8, false, true, 90, sm::Backend::cudnn},      // ... and without
      {512, 512, 16, 2, false, true, 90, sm::Backend::math},       // cuDNN/flash stop at 256, efficient has no GQA
      {512, 512, 16, 2, true, true, 90, sm::Backend::math},        // enable_gqa + mask at 512: math
      {512, 512, 16, 16, true, false, 90, sm::Backend::efficient}, // K/V repeated (transformers): efficient
      {512, 512, 16, 16, false, false, 90, sm::Backend::efficient},
      {128, 128, 32, 8, true, false, 90, sm::Backend::cudnn},      // Llama padded: cuDNN takes the bias
      {128, 128, 32, 8, false, true, 90, sm::Backend::cudnn},      // Llama unpadded: cuDNN, is_causal
      {96, 96, 32, 32, true, false, 90, sm::Backend::cudnn},       // Phi-3.5: 96 <= 128
      {192, 128, 16, 16, true, false, 90, sm::Backend::cudnn},     // DeepSeek-V2 MLA: cuDNN's 192/128 case
      {192, 128, 16, 16, false, false, 80, sm::Backend::efficient},// ... flash needs one width; no cuDNN on sm80
      {160, 160, 16, 16, false, false, 90, sm::Backend::flash},    // 160: no cuDNN backward (128, 192/128, 256)
      {256, 256, 16, 8, false, false, 100, sm::Backend::cudnn},    // sm10x: cuDNN first too
      {256, 256, 16, 8, false, true, 120, sm::Backend::flash},     // sm120: cuDNN after math, never reached
      {128, 128, 16, 8, true, true, 120, sm::Backend::math},       // sm120, mask + enable_gqa: flash no, efficient no
      {128, 128, 16, 16, true, false, 120, sm::Backend::efficient},
      {256, 256, 16, 16, true, false, 80, sm::Backend::efficient}, // sm80: flash, efficient, math
      {128, 128, 32, 8, false, false, 80, sm::Backend::flash},
      {208, 208, 16, 16, false, false, 86, sm::Backend::efficient},// sm86 training: flash rejects (192, 224]
      {128, 128, 16, 16, false, false, 75, sm::Backend::math},     // sm75: no flash, no bf16 efficient
      {128, 128, 16, 16, false, false, 0, sm::Backend::efficient}, // no CUDA arch: efficient, then math
  }));
  sm::AttentionSpec layer;
  layer.head_dim = c.head_dim;
  layer.v_head_dim = c.v_dim == c.head_dim ? 0 : c.v_dim;
  layer.num_heads = c.heads;
  layer.num_kv_heads = c.kv_heads;
  INFO("head_dim " << c.head_dim << "/" << c.v_dim << " mask " << c.mask << " gqa " << c.gqa << " sm " << c.sm << ": "
                   << sm::backend_reason(layer, c.mask, c.gqa, c.sm));
  CHECK(sm::backend_name(sm::choose_backend(layer, c.mask, c.gqa, c.sm)) == sm::backend_name(c.expect));
  // The reason ends with the backend chosen.
  const std::string why = sm::backend_reason(layer, c.mask, c.gqa, c.sm);
  CHECK(why.substr(why.size() - sm::backend_name(c.expect).size()) == sm::backend_name(c.expect));
}

TEST_CASE("the reason names each refusal with its numbers", "[tiers]") {
  sm::AttentionSpec global;
  global.head_dim = 512;
  global.num_heads = 16;
  global.num_kv_heads = 2;
  CHECK(sm::backend_reason(global, true, false, 90) ==
        "cudnn: head_dim 512 > 256; flash: explicit mask; efficient");
  CHECK(sm::backend_reason(global, false, true, 90) ==
        "cudnn: head_dim 512 > 256; flash: head_dim 512 > 256; efficient: enable_gqa with 2 K/V heads for 16 "
        "(not in 2.11); math");
  sm::AttentionSpec llama;
  llama.head_dim = 128;
  llama.num_heads = 32;
  llama.num_kv_heads = 8;
  CHECK(sm::backend_reason(llama, true, false, 120) == "cudnn: after math on sm120; flash: explicit mask; efficient");
}

TEST_CASE("tier labels", "[tiers]") {
  struct Case {
    std::string label;
    bool known, auto_backend;
    sm::TierRules::Gqa gqa;
    bool recompute;
    sm::ExpertImpl experts;
    int kernel_sm;
  };
  auto c = GENERATE(values<Case>({
      {"sdpa-auto/grouped", true, true, sm::TierRules::Gqa::hf, false, sm::ExpertImpl::grouped, 0},
      {"sdpa-auto/grouped/gqa-expand", true, true, sm::TierRules::Gqa::expand, false, sm::ExpertImpl::grouped, 0},
      {"sdpa-efficient/loop/gqa-native", true, false, sm::TierRules::Gqa::native, false, sm::ExpertImpl::loop, 0},
      {"hf-sdpa-efficient-sm80/loop", true, false, sm::TierRules::Gqa::expand, false, sm::ExpertImpl::loop, 80},
      {"sdpa-math+ckpt/loop", true, false, sm::TierRules::Gqa::hf, true, sm::ExpertImpl::loop, 0},
      {"sdpa-auto/grouped/bogus", false, true, sm::TierRules::Gqa::hf, false, sm::ExpertImpl::loop, 0},
      {"sdpa/grouped_mm", false, true, sm::TierRules::Gqa::hf, false, sm::ExpertImpl::loop, 0},
      {"hf-peft/sdpa-grouped_mm", true, true, sm::TierRules::Gqa::transformers, false, sm::ExpertImpl::grouped, 0},
      {"hf-peft/sdpa-eager", true, true, sm::TierRules::Gqa::transformers, false, sm::ExpertImpl::loop, 0},
      {"hf-peft/sdpa-batched_mm", false, true, sm::TierRules::Gqa::hf, false, sm::ExpertImpl::loop, 0},
      {"sdpa-auto/grouped/gqa-transformers", true, true, sm::TierRules::Gqa::transformers, false,
       sm::ExpertImpl::grouped, 0},
      {"anything at all", false, true, sm::TierRules::Gqa::hf, false, sm::ExpertImpl::loop, 0},
  }));
  const auto t = sm::tier_from_label(c.label);
  INFO(c.label);
  CHECK(t.label == c.label);
  CHECK(t.known == c.known);
  if (!c.known) return;
  CHECK(t.auto_backend == c.auto_backend);
  CHECK(t.gqa == c.gqa);
  CHECK(t.recompute == c.recompute);
  CHECK(t.experts == c.experts);
  CHECK(t.kernel_sm == c.kernel_sm);
}

namespace {
sm::MicroBatch batch(std::vector<int64_t> rows, int64_t width) {
  sm::MicroBatch b;
  b.rows = std::move(rows);
  b.width = width;
  return b;
}
// Every GEMM term (dense, LoRA, expert) and every fused-attention term (flash/cuDNN, memory-efficient): the
// work these tests pin down, whichever category prices it (docs/method.md, "Per-category model").
double all_gemm(const sm::StepFeatures& f) { return f.x[sm::kGemm] + f.x[sm::kLoraGemm] + f.x[sm::kExpertGemm]; }
double fused(const sm::StepFeatures& f) {
  return f.x[sm::kAttention] + f.x[sm::kAttentionEfficient] + f.x[sm::kAttentionMasked] +
         f.x[sm::kAttentionEfficientMasked];
}

}  // namespace

TEST_CASE("features scale with the shape's work", "[features]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::FeatureMaker f(shape, sm::tier_from_label("hf-sdpa-efficient-sm80/loop"), sm::gpu_info("NVIDIA RTX PRO 6000 Blackwell"));
  const auto a = f.step(batch({2048, 2048}, 2048));
  const auto b = f.step(batch({4096, 4096}, 4096));
  const auto padded = f.step(batch({4096, 1024}, 4096));
  SECTION("GEMM work follows processed tokens R*W, padding included") {
    CHECK(all_gemm(b) == Approx(2 * all_gemm(a)));
    CHECK(all_gemm(padded) == Approx(all_gemm(b)));
    // 3 passes x (forward GEMM FLOPs per token + LoRA's 2 x rank x (in + out) per module and kappa x its 4 (in + out)
    // fp32 bytes) x 4096 tokens (2 x 2048).
    const double params = static_cast<double>(sm::plan_lora(shape, sm::default_lora_targets(), 16).params);
    const double kappa = sm::lora_gemm_ridge_flops_per_byte(sm::gpu_info("NVIDIA RTX PRO 6000 Blackwell"));
    const double lora = 2.0 * params + kappa * 4.0 * params / 16;  // FLOPs + kappa x fp32 bytes
    CHECK(all_gemm(a) == Approx(3 * 4096 * (sm::gemm_flops_per_token(shape).total() + lora) / 1e12));
  }
  SECTION("attention with explicit sliding masks is W x W: 4x per row from doubling W") {
    CHECK(fused(b) == Approx(4 * fused(a)).epsilon(0.001));
  }
  SECTION("padding moves the global layers off is_causal: W x W instead of the causal half") {
    CHECK(a.x[sm::kMaskPath] == 0);
    CHECK(padded.x[sm::kMaskPath] > 0);
    CHECK(fused(padded) - fused(b) == Approx(padded.x[sm::kMaskPath]));
    // 5 global layers (16 x 512) go from W(W+1)/2 to W^2; 25 sliding (16 x 256) stay at W^2.
    const double w = 4096;
    const double global_extra = 5 * 16 * 512 * (w * w - w * (w + 1) / 2);
    const double unpadded = 25 * 16 * 256 * w * w + 5 * 16 * 512 * w * (w + 1) / 2;
    CHECK(fused(padded) / fused(b) == Approx(1 + global_extra / unpadded));
  }
  SECTION("widths are rounded up to the 128-row tile") {
    CHECK(sm::round_to_tile(2000) == 2048);
    CHECK(sm::round_to_tile(2048) == 2048);
    CHECK(fused(f.step(batch({2000, 2000}, 2000))) == Approx(fused(a)));
  }
  SECTION("distinct experts hit: k for one token, all E for thousands") {
    const auto one = f.step(batch({1}, 1));
    CHECK(one.x[sm::kExpertStream] / a.x[sm::kExpertStream] == Approx(8.0 / 128.0).epsilon(1e-6));
  }
}

TEST_CASE("a sliding layer keeps is_causal only below its window, as transformers' sdpa mask", "[features][window]") {
  // masking_utils._ignore_causal_mask_sdpa skips the mask while kv_length < sliding_window: at width == window
  // the explicit mask is built already.
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::FeatureMaker f(shape, sm::tier_from_label("sdpa-auto/grouped/gqa-expand"), sm::gpu_info("NVIDIA H200"));
  for (const auto& t : f.layer_types()) {
    INFO(t.spec.type);
    const bool sliding = t.spec.window > 0;
    CHECK_FALSE(t.at(false, 1023).explicit_mask);
    CHECK(t.at(false, 1024).explicit_mask == sliding);
    CHECK(t.at(false, 1025).explicit_mask == sliding);
    CHECK(t.at(true, 1023).explicit_mask);
    CHECK(t.at(false, 2048).explicit_mask == sliding);
  }
}

TEST_CASE("the features' plan is plan_layer_at's at window - 1, window, window + 1", "[features][window]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  for (const std::string label : {"sdpa-auto/grouped/gqa-expand", "sdpa-auto/grouped", "sdpa-efficient/loop/gqa-native",
                                  "hf-sdpa-efficient-sm80/loop", "sdpa-auto/loop/mask-explicit"}) {
    const auto tier = sm::tier_from_label(label);
    const sm::FeatureMaker f(shape, tier, sm::gpu_info("NVIDIA H200"));
    const int sm_arch = tier.kernel_sm > 0 ? tier.kernel_sm : 90;
    for (const auto& t : f.layer_types())
      for (int64_t width : {int64_t{1023}, int64_t{1024}, int64_t{1025}})
        for (bool padded : {false, true}) {
          INFO(label << " " << t.spec.type << " width " << width << " padded " << padded);
          const sm::LayerPlan rule = sm::plan_layer_at(tier, t.spec, padded, sm_arch, width);
          const sm::LayerPlan& used = t.at(padded, width);
          CHECK(used.explicit_mask == rule.explicit_mask);
          CHECK(used.expand_kv == rule.expand_kv);
          CHECK(used.backend == rule.backend);
          CHECK(used.work == rule.work);
        }
  }
}

TEST_CASE("K/V expansion follows the tier's GQA rule", "[tiers]") {
  sm::AttentionSpec layer;
  layer.num_heads = 16;
  layer.num_kv_heads = 8;
  layer.head_dim = 256;
  auto expand = [&](const std::string& label, bool padded) {
    return sm::plan_layer_at(sm::parse_tier(label), layer, padded, 90, 512).expand_kv;
  };
  CHECK_FALSE(expand("sdpa-auto/grouped", false));  // hf: enable_gqa without a mask
  CHECK(expand("sdpa-auto/grouped", true));          // ... repeat_kv with one
  CHECK(expand("sdpa-auto/grouped/gqa-expand", false));
  CHECK_FALSE(expand("sdpa-auto/grouped/gqa-native", true));
  CHECK(expand("sdpa-efficient/loop", false));       // the efficient kernel has no enable_gqa path
  CHECK_FALSE(expand("sdpa-efficient/loop/gqa-native", false));
}

TEST_CASE("one tier grammar: strict parse names every bad part, labels round-trip", "[tiers]") {
  for (const std::string label : {"sdpa-auto/grouped", "sdpa-auto/grouped/gqa-expand", "sdpa-efficient/loop/gqa-native",
                                  "hf-sdpa-efficient-sm80/loop", "sdpa-math+ckpt/loop", "sdpa-math/grouped/ce-chunked",
                                  "sdpa-cudnn/loop/ce-chunked/mask-explicit/gqa-native",
                                  "sdpa-auto/grouped/gqa-transformers", "hf-peft/sdpa-grouped_mm", "hf-peft/sdpa-eager",
                                  "hf-peft/sdpa-grouped_mm/ce-chunked"}) {
    INFO(label);
    const auto t = sm::parse_tier(label);
    CHECK(sm::tier_label(t) == label);
    const auto again = sm::parse_tier(sm::tier_label(t));
    CHECK(again.gqa == t.gqa);
    CHECK(again.auto_backend == t.auto_backend);
    CHECK(again.forced == t.forced);
    CHECK(again.kernel_sm == t.kernel_sm);
    CHECK(again.recompute == t.recompute);
  }
  CHECK(sm::tier_label(sm::parse_tier("sdpa-auto/grouped/ckpt")) == "sdpa-auto+ckpt/grouped");
  CHECK(sm::attention_name(sm::parse_tier("hf-sdpa-efficient-sm80/loop")) == "sdpa-efficient");
  CHECK(sm::experts_name(sm::parse_tier("sdpa-auto/grouped")) == "grouped");
  CHECK(sm::gqa_name(sm::parse_tier("sdpa-auto/grouped/gqa-native").gqa) == "native");
  try {
    sm::parse_tier("sdpa-fast/pooled/bogus");
    FAIL("no error");
  } catch (const stepcast::InputError& e) {
    REQUIRE(e.problems().size() == 3);
    CHECK_THAT(e.problems()[0], Catch::Matchers::Contains("attention 'sdpa-fast'"));
    CHECK_THAT(e.problems()[1], Catch::Matchers::Contains("experts 'pooled'"));
    CHECK_THAT(e.problems()[2], Catch::Matchers::Contains("extra 'bogus'"));
  }
  CHECK_THROWS_AS(sm::parse_tier("sdpa-auto"), stepcast::InputError);
  CHECK_THROWS_AS(sm::parse_tier("hf-peft/sdpa-batched_mm"), stepcast::InputError);
  CHECK_THROWS_AS(sm::parse_tier("hf-peft/sdpa-grouped_mm/gqa-expand"), stepcast::InputError);
  CHECK_THROWS_AS(sm::parse_tier("hf-sdpa-efficient-smx/loop"), stepcast::InputError);
}

TEST_CASE("a window-honouring kernel does W*min(W, window)", "[features]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  auto tier = sm::tier_from_label("sdpa-auto/grouped/gqa-expand");
  tier.honours_window = true;
  const sm::FeatureMaker f(shape, tier, sm::gpu_info("NVIDIA H200"));
  const auto a = f.step(batch({8192}, 8192));
  const auto b = f.step(batch({16384}, 16384));
  // Sliding layers become linear in W past the window; the 5 global layers stay causal (quadratic).
  const double sliding_a = 25 * 16 * 256 * (1024.0 * 1025 / 2 + (8192 - 1024) * 1024.0);
  const double global_a = 5 * 16 * 512 * (8192.0 * 8193 / 2);
  CHECK(fused(a) == Approx(4 * 3.5 * (sliding_a + global_a) / 1e12));
  CHECK(fused(b) / fused(a) < 4.0);
  CHECK(fused(b) / fused(a) > 2.0);
}

TEST_CASE("memory: weights from the shape, table sums to the peak", "[memory]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  sm::Coefficients c;
  c.gpu = "NVIDIA H200";
  c.tier = "sdpa-auto/grouped/gqa-native";
  c.memory[sm::kMemFixed] = {2.0, 0, true, ""};
  c.memory[sm::kMemToken] = {800.0, 0, true, ""};
  c.memory[sm::kMemMask] = {1.0, 0, true, ""};
  c.memory[sm::kMemScore] = {2.0, 0, true, ""};
  const sm::StepModel m(shape, c);
  // 25.23 B parameters in bf16.
  CHECK(m.features().weights_gib() == Approx(25.23e9 * 2 / 1073741824.0).epsilon(0.002));
  const auto b = batch({4096, 3000}, 4096);
  const auto table = m.memory_table(b);
  CHECK(table.total_gib() == Approx(m.peak_gib(b)).epsilon(1e-6));
  // sdpa-auto with enable_gqa always: padded global layers (512-wide) fall to math and materialise W x W.
  bool scores = false;
  for (const auto& item : table.items)
    if (item.name == "math_attention_scores") scores = item.bytes > 0;
  CHECK(scores);
  CHECK(m.peak_gib(batch({4096, 4096}, 4096)) < m.peak_gib(b));
}
