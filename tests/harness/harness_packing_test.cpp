// Packed rows in the harness on the CPU (Debian's LibTorch 1.13, tiny configs): a row of several documents
// gives the loss and adapter gradients of the same documents run as separate rows when the attention keeps
// documents apart (block-mask, and varlen, which falls back to the block-diagonal mask where no varlen
// kernel exists); labels never cross a document boundary; positions restart; `cross` lets documents meet.
#include <torch/torch.h>

#include "catch.hpp"
#include "harness/model.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"

namespace h = stepcast::harness;
using stepcast::model::DocumentAttention;

namespace {

stepcast::model::ModelShape tiny(const std::string& name) {
  return stepcast::io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/" + name + ".json");
}

h::BuildOptions cpu_fp32() {
  h::BuildOptions o;
  o.dtype = torch::kFloat;
  o.lora.rank = 4;
  o.lora.dropout = 0.0;  // checkpoint recompute draws new dropout masks: compare gradients without dropout
  return o;
}

// The documents of row 0 of a packed batch as separate right-padded rows with the same token ids.
h::Batch separate_rows(const h::Batch& packed) {
  const std::vector<int64_t>& docs = packed.documents.at(0);
  const int64_t width = *std::max_element(docs.begin(), docs.end());
  h::Batch b;
  b.width = width;
  b.input_ids = torch::zeros({static_cast<int64_t>(docs.size()), width}, torch::kLong);
  b.labels = torch::full({static_cast<int64_t>(docs.size()), width}, -100, torch::kLong);
  int64_t start = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    const auto r = static_cast<int64_t>(i);
    b.input_ids[r].narrow(0, 0, docs[i]).copy_(packed.input_ids[0].narrow(0, start, docs[i]));
    b.labels[r].narrow(0, 0, docs[i]).copy_(packed.input_ids[0].narrow(0, start, docs[i]));
    b.rows.push_back(docs[i]);
    b.padded |= docs[i] < width;
    b.kept_tokens += docs[i] - 1;
    start += docs[i];
  }
  return b;
}

std::pair<double, std::vector<torch::Tensor>> loss_and_grads(h::Model& m, const h::Batch& b) {
  m.zero_grad();
  const double loss = m.step(b, h::parse_tier("sdpa-auto/loop")).item<double>();
  std::vector<torch::Tensor> grads;
  for (const auto& p : m.adapter_parameters()) grads.push_back(p.grad().clone());
  return {loss, grads};
}

void train_looking_adapters(h::Model& m) {
  torch::NoGradGuard g;  // B = 0 at init would give A no gradient: make every gradient non-trivial
  for (auto& p : m.adapter_parameters())
    if (p.size(1) == 4) p.normal_(0, 0.05);
}

}  // namespace

TEST_CASE("a packed row of 3 documents trains as the 3 documents in separate rows", "[harness][packing]") {
  const auto config = GENERATE(std::string("tiny-gemma4"), std::string("tiny-llama"));
  const auto attention = GENERATE(DocumentAttention::block_mask, DocumentAttention::varlen);
  CAPTURE(config, static_cast<int>(attention));
  const auto shape = tiny(config);
  h::Model m(shape, cpu_fp32());
  train_looking_adapters(m);
  // 13 + 5 + 11 tokens in a row of 32 (a pad tail of 3); 13 and 11 exceed tiny-gemma4's window of 8.
  const h::Batch packed = h::make_packed_batch({{13, 5, 11}}, 32, shape.vocab_size, 7, torch::kCPU, attention);
  const h::Batch apart = separate_rows(packed);
  REQUIRE(packed.kept_tokens == apart.kept_tokens);
  const auto [loss_packed, g_packed] = loss_and_grads(m, packed);
  const auto [loss_apart, g_apart] = loss_and_grads(m, apart);
  CHECK(loss_packed == Approx(loss_apart).epsilon(1e-5));
  REQUIRE(g_packed.size() == g_apart.size());
  double total = 0;
  for (size_t i = 0; i < g_packed.size(); ++i) {
    CHECK(torch::allclose(g_packed[i], g_apart[i], 1e-4, 1e-6));
    total += g_apart[i].abs().sum().item<double>();
  }
  CHECK(total > 0);
  for (const auto& [type, info] : m.layer_info()) CHECK(info.mask_path == "explicit");  // no varlen kernel here
}

TEST_CASE("cross attention lets a packed row's documents attend to each other", "[harness][packing]") {
  const auto shape = tiny("tiny-llama");
  h::Model m(shape, cpu_fp32());
  train_looking_adapters(m);
  const h::Batch cross = h::make_packed_batch({{13, 5, 11}}, 32, shape.vocab_size, 7, torch::kCPU, DocumentAttention::cross);
  const double loss_cross = loss_and_grads(m, cross).first;
  const double loss_apart = loss_and_grads(m, separate_rows(cross)).first;
  CHECK(loss_cross != Approx(loss_apart).epsilon(1e-5));
  for (const auto& [type, info] : m.layer_info()) CHECK(info.mask_path != "varlen");
}

TEST_CASE("packed labels stop at document boundaries and positions restart", "[harness][packing]") {
  const h::Batch b = h::make_packed_batch({{4, 3}, {6}}, 8, 100, 1, torch::kCPU, DocumentAttention::block_mask);
  CHECK(b.rows == std::vector<int64_t>{7, 6});
  CHECK(b.kept_tokens == (3 + 2) + 5);
  const auto labels = b.labels;
  CHECK(labels[0][4].item<int64_t>() == -100);  // the first token of document 2: no label from document 1
  CHECK(labels[0][3].item<int64_t>() != -100);
  CHECK(labels[0][7].item<int64_t>() == -100);  // the pad tail
  CHECK(labels[1][0].item<int64_t>() != -100);
  CHECK(torch::equal(b.positions[0], torch::tensor({0, 1, 2, 3, 0, 1, 2, 0}, torch::kLong)));
  CHECK(torch::equal(b.positions[1], torch::tensor({0, 1, 2, 3, 4, 5, 0, 1}, torch::kLong)));
  // Segments over the flattened batch: 4, 3, the pad tail of 1, then 6 and a pad tail of 2.
  CHECK(torch::equal(b.cu_seqlens, torch::tensor({0, 4, 7, 8, 14, 16}, torch::kInt)));
  CHECK(b.max_segment == 6);
}

TEST_CASE("the document mask keeps documents apart, causal and windowed within each", "[harness][packing][mask]") {
  const h::Batch b = h::make_packed_batch({{5, 3}}, 8, 100, 1, torch::kCPU, DocumentAttention::block_mask);
  const torch::Tensor mask = h::document_mask(b, 2)[0][0];
  for (int64_t q = 0; q < 8; ++q) {
    for (int64_t k = 0; k < 8; ++k) {
      const bool same_document = (q < 5) == (k < 5);
      const bool expected = same_document && k <= q && q - k < 2;
      CAPTURE(q, k);
      CHECK(mask[q][k].item<bool>() == expected);
    }
  }
}

TEST_CASE("a packed row with an empty document list or a 0-token document is refused", "[harness][packing]") {
  CHECK_THROWS_AS(h::make_packed_batch({{}}, 8, 100, 1, torch::kCPU, DocumentAttention::varlen), stepcast::InputError);
  CHECK_THROWS_AS(h::make_packed_batch({{4, 0}}, 8, 100, 1, torch::kCPU, DocumentAttention::varlen), stepcast::InputError);
}
