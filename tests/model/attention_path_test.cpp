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
#include "model/memory.hpp"
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
      CHECK(p.kv == "native (flash-attn)");
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

// GPT-OSS (docs/families.md, "Eager attention"): GptOssPreTrainedModel declares _supports_sdpa = False, so transformers'
// default attn_implementation falls back to eager_attention_forward; its mask is eager_mask's (never skipped), K/V are
// repeated, and the whole W x W of scores is materialised, the window only masking them.
TEST_CASE("GPT-OSS takes transformers' eager attention on every layer, path and tier", "[tiers][families][eager]") {
  const auto shape = stepcast::io::load_model("gpt-oss-20b");
  for (const std::string tier : {"hf-peft/sdpa-grouped_mm", "sdpa-auto/grouped/gqa-expand", "sdpa-flash/grouped"}) {
    const sm::FeatureMaker f(shape, sm::parse_tier(tier), sm::gpu_info("NVIDIA H200"));
    for (const std::string name : {"unpadded 2k", "padded 8k", "packed 8k"}) {
      const sm::MicroBatch b = batch(name);
      const auto paths = sm::attention_paths(f, b);
      REQUIRE(paths.size() == 2);  // sliding_attention x12, full_attention x12
      for (const auto& p : paths) {
        INFO(tier << ", " << name << ", " << p.type << ": " << p.mask << "; " << p.why);
        CHECK(p.layers == 12);
        CHECK(p.plan.eager);
        CHECK(p.plan.backend == sm::Backend::math);
        CHECK(p.plan.explicit_mask);
        CHECK_FALSE(p.plan.varlen);
        CHECK(p.kv == "repeat_kv");
        CHECK(p.plan.work == sm::ScoreWork::full_square);
        CHECK(p.pairs == Approx(static_cast<double>(b.num_rows()) * static_cast<double>(b.width) * b.width));
        CHECK(p.term.rfind("gemm_s_per_tflop (QK^T, PV) + memory_s_per_gb", 0) == 0);
        CHECK(p.why.find("_supports_sdpa = False") != std::string::npos);
        if (!b.packed && !b.has_padding())
          CHECK(p.mask == (p.type == "sliding_attention" ? "eager sliding-window mask (always built)"
                                                         : "eager causal mask (always built)"));
        CHECK(p.mask_gb > 0);
      }
    }
  }
}

// transformers under attn_implementation="eager" (the tier hf-peft/eager-<experts>): every family takes
// eager_attention_forward, the same plan as GPT-OSS's own; the memory rules keep its scores as for that family.
TEST_CASE("the eager tier runs every layer of any family through eager attention", "[tiers][eager]") {
  const auto shape = stepcast::io::load_model("mistral-7b");
  const auto tier = sm::parse_tier("hf-peft/eager-grouped_mm");
  CHECK(tier.eager_attn);
  CHECK(sm::tier_label(tier) == "hf-peft/eager-grouped_mm");
  CHECK_THROWS_AS(sm::parse_tier("hf-peft/eager-grouped_mm/mask-explicit"), stepcast::InputError);
  const sm::FeatureMaker eager(shape, tier, sm::gpu_info("NVIDIA H200"));
  const sm::FeatureMaker sdpa(shape, sm::parse_tier("hf-peft/sdpa-grouped_mm"), sm::gpu_info("NVIDIA H200"));
  for (const std::string name : {"unpadded 2k", "padded 8k", "packed 8k"}) {
    const sm::MicroBatch b = batch(name);
    for (const auto& p : sm::attention_paths(eager, b)) {
      INFO(name << ", " << p.type << ": " << p.why);
      CHECK(p.plan.eager);
      CHECK(p.plan.work == sm::ScoreWork::full_square);
      CHECK(p.kv == "repeat_kv");
      CHECK(p.why.find("attn_implementation=\"eager\"") != std::string::npos);
    }
    const auto xe = eager.step(b), xs = sdpa.step(b);
    for (int t : {sm::kAttention, sm::kAttentionMasked, sm::kAttentionEfficient, sm::kAttentionEfficientMasked})
      CHECK(xe.x[t] == 0);
    CHECK(xe.x[sm::kGemm] > xs.x[sm::kGemm]);              // QK^T and PV as batched matmuls
    CHECK(xe.x[sm::kMemoryBound] > xs.x[sm::kMemoryBound]);  // the passes over the scores
    // The recomputed layer holds its score copies: more memory than SDPA's fused kernels.
    CHECK(eager.memory(b).y[sm::kMemActivation] > sdpa.memory(b).y[sm::kMemActivation]);
  }
}

TEST_CASE("eager scores: GEMM and memory-bound work, and the recomputed layer's W x (W + 1) copies", "[tiers][eager]") {
  const auto eager = stepcast::io::load_model("gpt-oss-20b");
  auto sdpa = eager;  // the same shape on SDPA, for the differences
  for (auto& a : sdpa.layers) a.eager = false;
  const auto tier = sm::parse_tier("hf-peft/sdpa-grouped_mm");
  const sm::FeatureMaker fe(eager, tier, sm::gpu_info("NVIDIA H200"));
  const sm::FeatureMaker fs(sdpa, tier, sm::gpu_info("NVIDIA H200"));
  const sm::MicroBatch b = rows({4096, 4096}, 4096);
  const auto xe = fe.step(b), xs = fs.step(b);
  // No SDPA term: the matmuls are GEMMs, 2 x 64 heads x (64 + 64) FLOPs a pair over 4096^2 pairs (the tile already
  // divides 4096) for each row and each of the 24 layers, 3.5 passes (no ckpt extra in the label).
  for (int t : {sm::kAttention, sm::kAttentionMasked, sm::kAttentionEfficient, sm::kAttentionEfficientMasked,
                sm::kAttentionMath})
    CHECK(xe.x[t] == 0);
  const double pairs = 2.0 * 4096 * 4096 * 24;
  CHECK(xe.x[sm::kGemm] - xs.x[sm::kGemm] == Approx(pairs * 2 * 64 * 128 * 3.5 / 1e12));
  // 30 bytes a score element a forward, 64 heads x 4096 x 4097 a row and a layer, times the 3 memory passes.
  CHECK(xe.x[sm::kMemoryBound] - xs.x[sm::kMemoryBound] == Approx(2.0 * 64 * 24 * 4096 * 4097 * 30 * 3 / 1e9));
  // Memory: the math backend's score term never sees them (the architecture's activations do).
  CHECK(fe.memory(b).y[sm::kMemScore] == 0);
  sm::TrainingSetup setup;
  const auto r = sm::architecture_rates(eager, setup);
  CHECK(r.eager_peak_bytes == Approx(3.0 * 2 * 64));  // three bf16 copies of 64 heads in the recomputed layer
  CHECK(r.eager_saved_bytes == 0);
  setup.recompute = false;
  CHECK(sm::architecture_rates(eager, setup).eager_saved_bytes == Approx(24.0 * 2 * 2 * 64));  // two kept a layer
  // One row of 16384: the recomputed layer with its scores (103 GB) outgrows the logits path (39.7 GB).
  sm::TrainingSetup ckpt;
  const auto table = sm::architecture_memory(eager, ckpt, 1, 16384);
  bool found = false;
  for (const auto& item : table.items)
    if (item.name == "layer_recompute_working_set") {
      found = true;
      CHECK(static_cast<double>(item.bytes) ==
            Approx(16384.0 * r.eager_attention_bytes_per_token + 16384.0 * 16385 * 3 * 2 * 64));
    }
  CHECK(found);
}

TEST_CASE("eager scores of an fp32 softmax: 16 bytes at the peak beside the attention half of the layer", "[tiers][eager]") {
  // Llama's eager_attention_forward (softmax in fp32, cast back): docs/families.md, "Eager attention".
  const auto llama = stepcast::io::load_model("llama-3-8b");
  sm::TrainingSetup setup;
  setup.peft_layers = true;
  setup.eager_attention = true;
  const auto r = sm::architecture_rates(llama, setup);
  CHECK(r.eager_peak_bytes == Approx(16.0 * 32));  // 32 heads
  // The attention half holds less than the whole layer (no MLP: gate, up, their product, down_proj's adapter).
  CHECK(r.eager_attention_bytes_per_token > 0);
  CHECK(r.eager_attention_bytes_per_token < 0.5 * r.working_set_bytes_per_token);
  // Short rows: the whole layer's working set is larger than the attention half with its scores.
  const double t1 = 256, s1 = 256.0 * 257;
  CHECK(r.layer_working_bytes(t1, s1) == Approx(t1 * r.working_set_bytes_per_token));
  // Long rows: the scores and the attention half, not the whole layer plus the scores.
  const double t2 = 2 * 8192, s2 = 2 * 8192.0 * 8193;
  CHECK(r.layer_working_bytes(t2, s2) == Approx(t2 * r.eager_attention_bytes_per_token + s2 * 16 * 32));
  CHECK(r.step_bytes(t2, s2) == Approx(t2 * r.saved_bytes_per_token + r.layer_working_bytes(t2, s2)));
  // Without checkpointing each of the 32 layers keeps the fp32 softmax output and the bf16 probabilities.
  setup.recompute = false;
  CHECK(sm::architecture_rates(llama, setup).eager_saved_bytes == Approx(32.0 * 6 * 32));
  // SDPA: no scores, the whole layer.
  sm::TrainingSetup sdpa;
  sdpa.peft_layers = true;
  const auto rs = sm::architecture_rates(llama, sdpa);
  CHECK(rs.eager_peak_bytes == 0);
  CHECK(rs.layer_working_bytes(t2, s2) == Approx(t2 * rs.working_set_bytes_per_token));
}

TEST_CASE("eager scores capped by a softcap: tanh's output kept, and the cap's three passes", "[tiers][eager]") {
  // Gemma-2's eager_attention_forward: / softcap, tanh, * softcap before the mask (docs/families.md).
  auto gemma = stepcast::io::load_model("gemma-2-9b");
  REQUIRE(gemma.layers[0].logit_softcap > 0);
  gemma.dtype = "bfloat16";  // the config says float32; trained in bf16 as every campaign runs it
  auto uncapped = gemma;
  for (auto& l : uncapped.layers) l.logit_softcap = 0;
  sm::TrainingSetup setup;
  setup.peft_layers = true;
  setup.eager_attention = true;
  const double heads = static_cast<double>(gemma.layers[0].num_heads);
  CHECK(sm::architecture_rates(gemma, setup).eager_peak_bytes == Approx((16.0 + 2) * heads));
  CHECK(sm::architecture_rates(uncapped, setup).eager_peak_bytes == Approx(16.0 * heads));
  // The memory-bound work: 12 more bytes a score element a forward, over every layer, times the memory passes.
  const auto tier = sm::parse_tier("hf-peft/eager-grouped_mm");
  const auto gpu = sm::gpu_info("NVIDIA H200");
  const sm::MicroBatch b = rows({2048}, 2048);
  const double diff = sm::FeatureMaker(gemma, tier, gpu).step(b).x[sm::kMemoryBound] -
                      sm::FeatureMaker(uncapped, tier, gpu).step(b).x[sm::kMemoryBound];
  const double elements = heads * static_cast<double>(gemma.num_layers()) * 2048.0 * 2049;
  // Three passes and no more: the forward, the recompute and the backward (FeatureMaker's memory passes, which
  // take the recomputed elementwise share off the backward's two).
  CHECK(diff / (elements * 12 / 1e9) > 2.9);
  CHECK(diff / (elements * 12 / 1e9) < 4.1);
}
