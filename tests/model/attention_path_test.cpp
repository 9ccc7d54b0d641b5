// The attention path per family and per micro-batch under transformers + peft on an H200 (tier
// hf-peft/sdpa-grouped_mm, sm90), the rules of docs/families.md ("The attention path, from the sources"):
// which mask the stack builds, whether K/V are repeated, which SDPA backend runs, what work it does and which
// step term prices it. One row per (family, layer type, micro-batch).
#include <string>
#include <vector>

#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"
#include "model/features.hpp"
#include "model/tiers.hpp"

namespace sm = stepcast::model;

namespace {

sm::MicroBatch rows(std::vector<int64_t> r, int64_t width) {
  sm::MicroBatch b;
  b.rows = std::move(r);
  b.width = width;
  return b;
}

const std::vector<int32_t> kDocuments{3000, 2000, 3000};

sm::MicroBatch packed(int64_t width, sm::DocumentAttention attention) {
  sm::MicroBatch b;
  b.rows = {8000};
  b.width = width;
  b.packed = true;
  b.attention = attention;
  b.documents = 3;
  b.document_lengths = kDocuments;
  return b;
}

// The micro-batches of the table, by name.
sm::MicroBatch batch(const std::string& name) {
  if (name == "unpadded 2k") return rows({2048, 2048}, 2048);
  if (name == "unpadded 4k") return rows({4096, 4096}, 4096);  // at Mistral's and Gemma-2's window
  if (name == "unpadded 8k") return rows({8192, 8192}, 8192);
  if (name == "padded 8k") return rows({8192, 5000}, 8192);
  if (name == "packed 8k") return packed(8192, sm::DocumentAttention::varlen);  // no varlen in transformers' sdpa
  FAIL("no batch " << name);
  return {};
}

}  // namespace

TEST_CASE("the attention path of each family under transformers + peft on the H200", "[tiers][families]") {
  struct Row {
    std::string model, batch, type;
    std::string mask;  // a prefix of LayerPath::mask
    std::string kv;
    sm::Backend backend;
    sm::ScoreWork work;
    std::string term;
  };
  using B = sm::Backend;
  using W = sm::ScoreWork;
  const std::string causal = "none (is_causal)", padding = "padding mask", sliding = "sliding-window mask",
                    sliding_padding = "sliding-window + padding mask", block = "block mask";
  const std::string fused = "attention_s_per_tflop", fused_masked = "attention_masked_s_per_tflop",
                    efficient = "attention_efficient_s_per_tflop",
                    efficient_masked = "attention_efficient_masked_s_per_tflop";
  auto row = GENERATE_COPY(values<Row>({
      // Llama-3: GQA 32/8 x 128. Unpadded: no mask, enable_gqa, cuDNN on its causal half; padded: the bool
      // mask, K/V repeated, cuDNN with the bias over W x W.
      {"llama-3-8b", "unpadded 8k", "full_attention", causal, "enable_gqa", B::cudnn, W::causal, fused},
      {"llama-3-8b", "padded 8k", "full_attention", padding, "repeat_kv", B::cudnn, W::full_square, fused_masked},
      {"llama-3-8b", "packed 8k", "full_attention", block, "repeat_kv", B::cudnn, W::full_square, fused_masked},
      // Mistral-7B: window 4096 on every layer; is_causal only below it.
      {"mistral-7b", "unpadded 2k", "full_attention", causal, "enable_gqa", B::cudnn, W::causal, fused},
      {"mistral-7b", "unpadded 4k", "full_attention", sliding, "repeat_kv", B::cudnn, W::full_square, fused_masked},
      {"mistral-7b", "unpadded 8k", "full_attention", sliding, "repeat_kv", B::cudnn, W::full_square, fused_masked},
      {"mistral-7b", "padded 8k", "full_attention", sliding_padding, "repeat_kv", B::cudnn, W::full_square,
       fused_masked},
      // Qwen2.5 / Qwen3 (MoE): Llama's path.
      {"qwen2.5-7b", "unpadded 8k", "full_attention", causal, "enable_gqa", B::cudnn, W::causal, fused},
      {"qwen2.5-7b", "padded 8k", "full_attention", padding, "repeat_kv", B::cudnn, W::full_square, fused_masked},
      {"qwen3-30b-a3b", "padded 8k", "full_attention", padding, "repeat_kv", B::cudnn, W::full_square, fused_masked},
      // Gemma-2: sliding (4096) and global layers, 16/8 x 256: cuDNN (its 256/256 backward) on both.
      {"gemma-2-9b", "unpadded 2k", "sliding_attention", causal, "enable_gqa", B::cudnn, W::causal, fused},
      {"gemma-2-9b", "unpadded 8k", "sliding_attention", sliding, "repeat_kv", B::cudnn, W::full_square,
       fused_masked},
      {"gemma-2-9b", "unpadded 8k", "full_attention", causal, "enable_gqa", B::cudnn, W::causal, fused},
      {"gemma-2-9b", "padded 8k", "full_attention", padding, "repeat_kv", B::cudnn, W::full_square, fused_masked},
      // Gemma-3: window 1024, 128 wide.
      {"gemma-3-27b", "unpadded 2k", "sliding_attention", sliding, "repeat_kv", B::cudnn, W::full_square,
       fused_masked},
      {"gemma-3-27b", "unpadded 2k", "full_attention", causal, "enable_gqa", B::cudnn, W::causal, fused},
      // Gemma-4: sliding 256 on cuDNN; global 512 (2 K/V heads) repeated even unpadded (transformers 5.17) and on
      // the CUTLASS kernel, causal half unpadded, W x W padded.
      {"gemma-4-26b-a4b", "unpadded 8k", "sliding_attention", sliding, "repeat_kv", B::cudnn, W::full_square,
       fused_masked},
      {"gemma-4-26b-a4b", "unpadded 8k", "full_attention", causal, "repeat_kv", B::efficient, W::causal, efficient},
      {"gemma-4-26b-a4b", "padded 8k", "full_attention", padding, "repeat_kv", B::efficient, W::full_square,
       efficient_masked},
      {"gemma-4-26b-a4b", "packed 8k", "full_attention", block, "repeat_kv", B::efficient, W::full_square,
       efficient_masked},
      // OLMo-2, Phi-3.5 (fused qkv, 96 wide; window 262144 never reached), GPT-NeoX: MHA on cuDNN.
      {"olmo-2-7b", "unpadded 8k", "full_attention", causal, "MHA", B::cudnn, W::causal, fused},
      {"olmo-2-7b", "padded 8k", "full_attention", padding, "MHA", B::cudnn, W::full_square, fused_masked},
      {"phi-3.5-mini", "unpadded 8k", "full_attention", causal, "MHA", B::cudnn, W::causal, fused},
      {"phi-3.5-mini", "padded 8k", "full_attention", padding, "MHA", B::cudnn, W::full_square, fused_masked},
      {"pythia-160m", "padded 8k", "full_attention", padding, "MHA", B::cudnn, W::full_square, fused_masked},
      // DeepSeek-V2-Lite: MLA, q/k 192 and v 128: cuDNN's 192/128 case, with or without the mask.
      {"deepseek-v2-lite", "unpadded 8k", "full_attention", causal, "MHA", B::cudnn, W::causal, fused},
      {"deepseek-v2-lite", "padded 8k", "full_attention", padding, "MHA", B::cudnn, W::full_square, fused_masked},
      // Qwen1.5-MoE (MHA 16 x 128) and Mixtral (32/8 x 128, no window).
      {"qwen1.5-moe-a2.7b", "unpadded 8k", "full_attention", causal, "MHA", B::cudnn, W::causal, fused},
      {"qwen1.5-moe-a2.7b", "padded 8k", "full_attention", padding, "MHA", B::cudnn, W::full_square, fused_masked},
      {"mixtral-8x7b", "unpadded 8k", "full_attention", causal, "enable_gqa", B::cudnn, W::causal, fused},
      {"mixtral-8x7b", "padded 8k", "full_attention", padding, "repeat_kv", B::cudnn, W::full_square, fused_masked},
  }));
  INFO(row.model << ", " << row.batch << ", " << row.type);
  const auto shape = stepcast::io::load_model(row.model);
  const sm::FeatureMaker f(shape, sm::parse_tier("hf-peft/sdpa-grouped_mm"), sm::gpu_info("NVIDIA H200"));
  const sm::MicroBatch b = batch(row.batch);
  bool found = false;
  for (const auto& p : sm::attention_paths(f, b)) {
    if (p.type != row.type) continue;
    found = true;
    INFO("mask " << p.mask << "; why " << p.why);
    CHECK(p.mask.rfind(row.mask, 0) == 0);
    CHECK(p.kv == row.kv);
    CHECK(sm::backend_name(p.plan.backend) == sm::backend_name(row.backend));
    CHECK(p.plan.work == row.work);
    CHECK(p.term == row.term);
    CHECK(p.plan.varlen == false);
    CHECK((p.mask_gb > 0) == p.plan.explicit_mask);
  }
  CHECK(found);
}

TEST_CASE("transformers' flash_attention_2 builds no mask: flash-attn's causal, windowed or varlen kernels", "[tiers]") {
  const auto tier = sm::parse_tier("hf-peft/flash_attention_2-grouped_mm");
  CHECK(tier.flash_attn);
  CHECK(sm::tier_label(tier) == "hf-peft/flash_attention_2-grouped_mm");
  CHECK_THROWS_AS(sm::parse_tier("hf-peft/flash_attention_2-grouped_mm/mask-explicit"), stepcast::InputError);
  CHECK_THROWS_AS(sm::parse_tier("hf-peft/flash_attention_3-grouped_mm"), stepcast::InputError);
  // Mistral-7B (window 4096, GQA 32/8): under sdpa the window pins a mask from 4096 on; under flash_attention_2
  // the window is flash_attn_func's argument and the padded rows are unpadded, so every micro-batch runs flash on
  // its causal work without a mask or repeat_kv.
  const auto shape = stepcast::io::load_model("mistral-7b");
  const sm::FeatureMaker f(shape, tier, sm::gpu_info("NVIDIA A100-SXM4-80GB"));
  struct Row {
    std::string batch;
    sm::ScoreWork work;
    bool varlen;
  };
  for (const Row& row : {Row{"unpadded 2k", sm::ScoreWork::causal, false},
                         Row{"unpadded 4k", sm::ScoreWork::causal_window, false},
                         Row{"unpadded 8k", sm::ScoreWork::causal_window, false},
                         Row{"padded 8k", sm::ScoreWork::causal_window, true},
                         Row{"packed 8k", sm::ScoreWork::causal_window, true}}) {
    INFO(row.batch);
    for (const auto& p : sm::attention_paths(f, batch(row.batch))) {
      CHECK(p.plan.backend == sm::Backend::flash);
      CHECK_FALSE(p.plan.explicit_mask);
      CHECK(p.kv == "enable_gqa");
      CHECK(p.plan.work == row.work);
      CHECK(p.plan.varlen == row.varlen);
      CHECK(p.term == "attention_s_per_tflop");
      CHECK(p.mask_gb == 0);
      CHECK(p.why.find("flash-attn") != std::string::npos);
    }
  }
  // Gemma-4's 512-wide global heads are beyond flash-attn 2: an input error, not a silent price.
  const auto gemma = stepcast::io::load_model("gemma-4-26b-a4b");
  CHECK_THROWS_AS(sm::FeatureMaker(gemma, tier, sm::gpu_info("NVIDIA H200")), stepcast::InputError);
}

TEST_CASE("the harness's gqa-transformers tier runs transformers' K/V rule", "[tiers]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto harness = sm::parse_tier("sdpa-auto/grouped/gqa-transformers");
  const auto hf = sm::parse_tier("hf-peft/sdpa-grouped_mm");
  for (const auto& layer : shape.layers)
    for (int64_t width : {int64_t{512}, int64_t{4096}})
      for (bool padded : {false, true}) {
        const auto a = sm::plan_layer_at(harness, layer, padded, 90, width);
        const auto b = sm::plan_layer_at(hf, layer, padded, 90, width);
        CHECK(a.expand_kv == b.expand_kv);
        CHECK(a.backend == b.backend);
        CHECK(a.explicit_mask == b.explicit_mask);
      }
  // The plain harness label (hf) keeps enable_gqa on an unmasked 512-wide global layer: math, as measured.
  sm::AttentionSpec global = shape.layers.back();
  REQUIRE(global.head_dim == 512);
  CHECK(sm::plan_layer_at(sm::parse_tier("sdpa-auto/grouped"), global, false, 90, 4096).backend == sm::Backend::math);
  CHECK(sm::plan_layer_at(harness, global, false, 90, 4096).backend == sm::Backend::efficient);
}

TEST_CASE("Llama-4's chunked layers build their mask from the chunk on, as create_chunked_causal_mask", "[tiers]") {
  const auto shape = stepcast::io::load_model("llama-4-scout-17b-16e");
  const auto tier = sm::parse_tier("hf-peft/sdpa-grouped_mm");
  for (const auto& layer : shape.layers) {
    if (layer.chunk == 0) continue;
    CHECK_FALSE(sm::plan_layer_at(tier, layer, false, 90, layer.chunk - 1).explicit_mask);
    CHECK(sm::plan_layer_at(tier, layer, false, 90, layer.chunk).explicit_mask);
    break;
  }
}

TEST_CASE("padded positions' share: every GEMM category by the padded tokens, attention by its work beyond the rows'",
          "[features][padding]") {
  const auto shape = stepcast::io::load_model("llama-3-8b");
  const sm::FeatureMaker f(shape, sm::parse_tier("hf-peft/sdpa-grouped_mm"), sm::gpu_info("NVIDIA H200"));
  const auto shares = sm::padded_shares(f, rows({8192, 4096}, 8192));
  const double padded_tokens = 4096.0 / 16384.0;
  for (const auto& s : shares) {
    INFO(s.term);
    if (s.term == "gemm_s_per_tflop" || s.term == "lora_gemm_s_per_tflop" || s.term == "memory_s_per_gb")
      CHECK(s.padded / s.work == Approx(padded_tokens));
    if (s.term.rfind("attention", 0) == 0) {
      // Padded: 2 rows of W x W = 2 W^2 (tiles of 128); the rows alone: 8192 and 4096 on their causal halves.
      const double w = 8192, v = 4096;
      const double own = w * (w + 1) / 2 + v * (v + 1) / 2;
      CHECK(s.padded / s.work == Approx(1 - own / (2 * w * w)).epsilon(1e-9));
    }
    if (s.term == "mask_s_per_gb") CHECK(s.padded == Approx(s.work));  // rows alone carry no mask
  }
  // An unpadded batch has no padded share.
  for (const auto& s : sm::padded_shares(f, rows({4096, 4096}, 4096))) CHECK(s.padded == Approx(0).margin(1e-9));
}
