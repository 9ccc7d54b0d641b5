// How packed rows are priced on each attention path (varlen, block-mask, cross) and which kernel each layer
// of Gemma-4 takes for documents given by offsets (docs/planner.md "Packing").
#include <vector>

#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/features.hpp"
#include "model/tiers.hpp"

namespace sm = stepcast::model;

namespace {

sm::MicroBatch plain(std::vector<int64_t> rows, int64_t width) {
  sm::MicroBatch b;
  b.rows = std::move(rows);
  b.width = width;
  return b;
}

// One row of `docs` documents, `width` wide, on `mode`; the lengths live in `storage` (the schedule's role).
sm::MicroBatch packed_row(const std::vector<int32_t>& storage, int64_t width, sm::DocumentAttention mode) {
  sm::MicroBatch b;
  int64_t tokens = 0;
  double sum_sq = 0;
  for (int32_t l : storage) {
    tokens += l;
    sum_sq += static_cast<double>(l) * l;
  }
  b.rows = {tokens};
  b.width = width;
  b.packed = true;
  b.attention = mode;
  b.documents = static_cast<int64_t>(storage.size());
  b.sum_doc_len_sq = sum_sq;
  b.document_lengths = storage;
  return b;
}

}  // namespace

TEST_CASE("varlen prices each document on its own: 8 documents of 1024 cost 8 rows of 1024", "[features][packing]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::FeatureMaker f(shape, sm::tier_from_label("sdpa-auto/grouped/gqa-expand"), sm::gpu_info("NVIDIA H200"));
  const std::vector<int32_t> docs(8, 1000);  // 1000 rounds up to the 128-row tile: 1024
  const auto varlen = f.step(packed_row(docs, 8192, sm::DocumentAttention::varlen));
  const auto eight = f.step(plain({1023, 1023, 1023, 1023, 1023, 1023, 1023, 1023}, 1023));
  // Plain rows of 1023 stay on is_causal everywhere (the window bites from 1024): causal halves of 1024 tiles,
  // the same pairs as 8 varlen documents of 1000 (causal, window never reached).
  CHECK(varlen.x[sm::kAttention] + varlen.x[sm::kAttentionMath] ==
        Approx(eight.x[sm::kAttention] + eight.x[sm::kAttentionMath]));
  CHECK(varlen.x[sm::kMaskPath] == 0);
  CHECK(f.memory(packed_row(docs, 8192, sm::DocumentAttention::varlen)).y[sm::kMemMask] == 0);
  // GEMMs still see the whole padded row.
  CHECK(varlen.x[sm::kGemm] == Approx(f.step(plain({8192}, 8192)).x[sm::kGemm]));
}

TEST_CASE("block-mask prices the full row through the masked kernel, cross the causal row", "[features][packing]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::FeatureMaker f(shape, sm::tier_from_label("sdpa-auto/grouped/gqa-expand"), sm::gpu_info("NVIDIA H200"));
  const std::vector<int32_t> docs{3000, 2000, 3000};
  const auto block = f.step(packed_row(docs, 8192, sm::DocumentAttention::block_mask));
  const auto padded = f.step(plain({8000}, 8192));  // a padded row takes the same explicit-mask path
  CHECK(block.x[sm::kAttention] == Approx(padded.x[sm::kAttention]));
  CHECK(block.x[sm::kAttentionMasked] == Approx(padded.x[sm::kAttentionMasked]));
  CHECK(block.x[sm::kMaskBytes] == Approx(padded.x[sm::kMaskBytes]));
  CHECK(block.x[sm::kMaskPath] == Approx(padded.x[sm::kMaskPath]));
  CHECK(block.x[sm::kMaskPath] > 0);
  CHECK(f.memory(packed_row(docs, 8192, sm::DocumentAttention::block_mask)).y[sm::kMemMask] > 0);
  const auto cross = f.step(packed_row(docs, 8192, sm::DocumentAttention::cross));
  const auto full = f.step(plain({8192}, 8192));
  CHECK(cross.x[sm::kAttention] == Approx(full.x[sm::kAttention]));
  CHECK(cross.x[sm::kMaskPath] == 0);
  const auto varlen = f.step(packed_row(docs, 8192, sm::DocumentAttention::varlen));
  // Across backends: the masked global layers move to the efficient kernel's own term (docs/method.md).
  const auto attention = [](const sm::StepFeatures& x) {
    return x.x[sm::kAttention] + x.x[sm::kAttentionEfficient] + x.x[sm::kAttentionMath] + x.x[sm::kAttentionMasked] +
           x.x[sm::kAttentionEfficientMasked];
  };
  CHECK(attention(varlen) < attention(cross));
  CHECK(attention(cross) < attention(block));
}

TEST_CASE("varlen kernels per head_dim: flash to 256, efficient for Gemma-4's 512-wide globals, math before sm80",
          "[tiers][packing]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto tier = sm::parse_tier("sdpa-auto/grouped/gqa-expand");
  for (const auto& layer : shape.layers) {
    INFO(layer.type << " head_dim " << layer.head_dim);
    const sm::LayerPlan p = sm::plan_layer_at(tier, layer, sm::AttentionPath::varlen, 90, 8192);
    if (layer.head_dim <= 256) {
      CHECK(p.backend == sm::Backend::flash);
      CHECK(p.work == (layer.window > 0 ? sm::ScoreWork::causal_window : sm::ScoreWork::causal));
    } else {
      CHECK(p.backend == sm::Backend::efficient);
      CHECK(p.expand_kv);  // the CUTLASS kernel has no GQA path
    }
    CHECK(p.varlen);
    CHECK_FALSE(p.explicit_mask);
    const sm::LayerPlan old = sm::plan_layer_at(tier, layer, sm::AttentionPath::varlen, 75, 8192);
    CHECK(old.backend == sm::Backend::math);
    CHECK(old.explicit_mask);
    CHECK_FALSE(old.varlen);
    const sm::LayerPlan math = sm::plan_layer_at(sm::parse_tier("sdpa-math/grouped"), layer, sm::AttentionPath::varlen, 90, 8192);
    CHECK(math.backend == sm::Backend::math);
    CHECK(math.work == sm::ScoreWork::full_square);
  }
}

TEST_CASE("the attention path of a micro-batch", "[tiers][packing]") {
  const std::vector<int32_t> docs{3, 4};
  CHECK(sm::attention_path(plain({8, 8}, 8)) == sm::AttentionPath::plain);
  CHECK(sm::attention_path(plain({8, 6}, 8)) == sm::AttentionPath::explicit_mask);
  CHECK(sm::attention_path(packed_row(docs, 8, sm::DocumentAttention::varlen)) == sm::AttentionPath::varlen);
  CHECK(sm::attention_path(packed_row(docs, 8, sm::DocumentAttention::block_mask)) == sm::AttentionPath::explicit_mask);
  CHECK(sm::attention_path(packed_row(docs, 8, sm::DocumentAttention::cross)) == sm::AttentionPath::plain);
}
