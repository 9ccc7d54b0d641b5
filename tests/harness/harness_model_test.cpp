// The LibTorch model on a tiny Gemma-4-shaped config (and a tiny Llama, and a dummy family): masks, parameter
// counts against `describe`, the inert LoRA adapter at init, checkpointed vs plain gradients, tier labels, and
// the mask path agreeing with the cost model's at the window boundary.
#include <torch/torch.h>
#include <torch/version.h>

#include "catch.hpp"
#include "dummy_family.hpp"
#include "io/model_config.hpp"
#include "harness/model.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/features.hpp"
#include "model/modules.hpp"

namespace h = stepcast::harness;

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

}  // namespace

TEST_CASE("sliding-window mask allows at most `window` keys per row, all causal", "[harness][mask]") {
  const int64_t width = 40, window = 8;
  torch::Tensor m = h::attention_mask({width}, width, window, torch::kCPU)[0][0];
  for (int64_t i = 0; i < width; ++i) {
    const int64_t allowed = m[i].sum().item<int64_t>();
    CHECK(allowed == std::min(i + 1, window));
    CHECK(m[i].narrow(0, i + 1, width - i - 1).any().item<bool>() == false);  // no future key
    CHECK(m[i][i].item<bool>());
  }
  CHECK(m.sum().item<int64_t>() <= width * window);
}

TEST_CASE("global layers are causal: query i sees keys 0..i", "[harness][mask]") {
  const int64_t width = 24;
  torch::Tensor m = h::attention_mask({width}, width, 0, torch::kCPU)[0][0];
  torch::Tensor expected = torch::ones({width, width}, torch::kBool).tril();
  CHECK(torch::equal(m, expected));
}

TEST_CASE("padding masks: real queries never see pad keys", "[harness][mask]") {
  const int64_t width = 16;
  torch::Tensor m = h::attention_mask({16, 10}, width, 0, torch::kCPU);
  REQUIRE(m.sizes() == torch::IntArrayRef({2, 1, 16, 16}));
  torch::Tensor row1 = m[1][0];
  for (int64_t i = 0; i < 10; ++i) CHECK(row1[i].narrow(0, 10, 6).any().item<bool>() == false);
  for (int64_t i = 10; i < 16; ++i) {  // a pad query sees the real keys and itself, never other pads
    CHECK(row1[i].narrow(0, 0, 10).all().item<bool>());
    CHECK(row1[i].narrow(0, 10, 6).sum().item<int64_t>() == 1);
  }
  CHECK(torch::equal(m[0][0], torch::ones({width, width}, torch::kBool).tril()));
}

TEST_CASE("parameter counts equal describe's", "[harness][params]") {
  for (const std::string name : {"tiny-gemma4", "tiny-llama"}) {
    CAPTURE(name);
    const auto shape = tiny(name);
    h::Model m(shape, cpu_fp32());
    CHECK(m.parameter_count() == stepcast::model::count_params(shape).total);
    const auto plan = stepcast::model::plan_lora(shape, stepcast::model::default_lora_targets(), 4);
    CHECK(m.lora_modules() == plan.modules);
    int64_t adapter_params = 0;
    for (const auto& t : m.adapter_parameters()) adapter_params += t.numel();
    CHECK(adapter_params == plan.params);
  }
}

TEST_CASE("full Gemma-4 26B-A4B on the meta device: 25,233,141,760 parameters and 205 LoRA modules",
          "[harness][params]") {
  const auto shape = stepcast::io::load_model_config(std::string(STEPCAST_SCENARIOS) + "/models/gemma-4-26b-a4b.json");
  h::BuildOptions o;
  o.device = torch::Device(torch::kMeta);
  h::Model m(shape, o);
  CHECK(m.parameter_count() == 25233141760LL);
  CHECK(m.parameter_count() == stepcast::model::count_params(shape).total);
  CHECK(m.lora_modules() == 205);
  CHECK(static_cast<int64_t>(m.named_parameters().size()) == stepcast::model::count_params(shape).tensors);
}

TEST_CASE("families described but not built yet are refused by name, before any allocation", "[harness][family]") {
  struct Case {
    std::string model;
    std::string why;
  };
  auto c = GENERATE(values<Case>({{"phi-4", "fused projections"},
                                  {"deepseek-v2-lite", "multi-head latent attention"},
                                  {"llama-4-scout-17b-16e", "ungated shared experts"},
                                  {"olmo-2-7b", "its block wiring"},
                                  {"starcoder2-7b", "an ungated MLP"},
                                  {"gpt-oss-20b", "eager attention with per-head sink logits in the softmax"}}));
  const auto shape = stepcast::io::load_model_config(std::string(STEPCAST_SCENARIOS) + "/models/" + c.model + ".json");
  h::BuildOptions o;
  o.device = torch::Device(torch::kMeta);
  CHECK_THROWS_WITH(h::Model(shape, o), Catch::Matchers::Contains("is described but not built yet (" + c.why + ")"));
}

TEST_CASE("the LoRA adapter is inert at initialisation (B = 0)", "[harness][lora]") {
  const auto shape = tiny("tiny-gemma4");
  h::Model m(shape, cpu_fp32());
  const h::Batch b = h::make_batch({24, 17}, 24, shape.vocab_size, 7, torch::kCPU);
  const h::Tier tier = h::parse_tier("sdpa-auto/loop/gqa-expand");  // loop: LibTorch 1.13 has no grouped GEMM
  for (const auto& p : m.adapter_parameters())
    if (p.size(1) == 4) CHECK(p.abs().sum().item<double>() == 0.0);  // every lora_B [out, rank] is zero
  m.set_adapters_enabled(true);
  torch::Tensor with = m.logits(b, tier);
  m.set_adapters_enabled(false);
  torch::Tensor without = m.logits(b, tier);
  CHECK(torch::equal(with, without));
  // The gate can fail: a non-zero B changes the outputs.
  {
    torch::NoGradGuard g;
    for (auto& p : m.adapter_parameters())
      if (p.size(1) == 4) p.normal_(0, 0.1);
  }
  m.set_adapters_enabled(true);
  CHECK_FALSE(torch::allclose(m.logits(b, tier), without));
}

TEST_CASE("checkpointed and plain gradients agree", "[harness][checkpoint]") {
  const auto tier_label = GENERATE(std::string("sdpa-auto/loop"), std::string("sdpa-auto/loop/ce-chunked"));
  CAPTURE(tier_label);
  const auto shape = tiny("tiny-gemma4");
  h::BuildOptions o = cpu_fp32();
  o.ce_chunk_tokens = 16;  // several chunks in the chunked tier
  h::Model m(shape, o);
  {
    torch::NoGradGuard g;  // a trained-looking adapter so every gradient is non-trivial
    for (auto& p : m.adapter_parameters())
      if (p.size(1) == 4) p.normal_(0, 0.05);
  }
  const h::Batch b = h::make_batch({32, 21}, 32, shape.vocab_size, 3, torch::kCPU);
  const h::Tier tier = h::parse_tier(tier_label);
  auto grads = [&](bool checkpointing) {
    m.set_checkpointing(checkpointing);
    m.zero_grad();
    torch::Tensor loss = m.step(b, tier);
    std::vector<torch::Tensor> out;
    for (const auto& p : m.adapter_parameters()) out.push_back(p.grad().clone());
    return std::make_pair(loss.item<double>(), out);
  };
  const auto [loss_ckpt, g_ckpt] = grads(true);
  const auto [loss_plain, g_plain] = grads(false);
  CHECK(loss_ckpt == Approx(loss_plain).epsilon(1e-6));
  REQUIRE(g_ckpt.size() == g_plain.size());
  double total = 0;
  for (size_t i = 0; i < g_ckpt.size(); ++i) {
    CHECK(torch::allclose(g_ckpt[i], g_plain[i], 1e-4, 1e-6));
    total += g_plain[i].abs().sum().item<double>();
  }
  CHECK(total > 0);  // gradients reached the adapters at all
}

TEST_CASE("a tiny Llama trains a step and the loss is near ln(vocab)", "[harness][llama]") {
  const auto shape = tiny("tiny-llama");
  h::Model m(shape, cpu_fp32());
  const h::Batch b = h::make_batch({16, 16}, 16, shape.vocab_size, 5, torch::kCPU);
  const double loss = m.step(b, h::parse_tier("sdpa-auto/loop")).item<double>();
  CHECK(loss == Approx(std::log(128.0)).epsilon(0.05));  // random weights, std 0.02: near-uniform logits
  CHECK(b.kept_tokens == 30);
}

TEST_CASE("tiny Qwen3-MoE, Mixtral and OLMoE: describe's count, and a step that trains through the routed experts",
          "[harness][moe][family]") {
  for (const std::string name : {"tiny-qwen3-moe", "tiny-mixtral", "tiny-olmoe"}) {
    CAPTURE(name);
    const auto shape = tiny(name);
    h::Model m(shape, cpu_fp32());
    CHECK(m.parameter_count() == stepcast::model::count_params(shape).total);
    CHECK(static_cast<int64_t>(m.named_parameters().size()) == stepcast::model::count_params(shape).tensors);
    // The routed experts are stacked tensors, not nn.Linear: LoRA wraps attention (and Qwen3-MoE's dense
    // layer 1) only, as peft does.
    CHECK(m.lora_modules() == stepcast::model::plan_lora(shape, stepcast::model::default_lora_targets(), 4).modules);
    const h::Batch b = h::make_batch({16, 11}, 16, shape.vocab_size, 5, torch::kCPU);
    const double loss = m.step(b, h::parse_tier("sdpa-auto/loop")).item<double>();
    CHECK(loss == Approx(std::log(64.0)).epsilon(0.05));  // random weights: near-uniform logits
    double grad = 0;
    for (const auto& t : m.adapter_parameters())
      if (t.grad().defined()) grad += t.grad().abs().sum().item<double>();
    CHECK(grad > 0);
  }
}

TEST_CASE("tiny Qwen2-MoE: describe's count, and a step through routed and gated shared experts",
          "[harness][moe][family][shared]") {
  // By hand (h 32, 3 layers, 4 heads of 8 with q/k/v biases, vocab 64, untied): attention 4 x 32 x 32 + 3 x 32
  // = 4192 and 2 norms of 32 per layer; layers 0 and 2 route: router 6 x 32, experts gate_up 6 x 32 x 32 and
  // down 6 x 16 x 32, the shared expert's gate, up, down 3 x 32 x 24 and its gate 32 = 11744; layer 1 (in
  // mlp_only_layers) a dense MLP 3 x 32 x 48 = 4608; embedding and head 2 x 64 x 32, final norm 32.
  const auto shape = tiny("tiny-qwen2-moe");
  h::Model m(shape, cpu_fp32());
  CHECK(m.parameter_count() == 3 * (4192 + 64) + 2 * 11744 + 4608 + 2 * 64 * 32 + 32);
  CHECK(m.parameter_count() == stepcast::model::count_params(shape).total);
  CHECK(static_cast<int64_t>(m.named_parameters().size()) == stepcast::model::count_params(shape).tensors);
  // LoRA wraps the shared experts' gate, up and down (nn.Linear), as describe counts them.
  CHECK(m.lora_modules() == stepcast::model::plan_lora(shape, stepcast::model::default_lora_targets(), 4).modules);
  const h::Batch b = h::make_batch({16, 11}, 16, shape.vocab_size, 5, torch::kCPU);
  const h::Tier tier = h::parse_tier("sdpa-auto/loop");
  const torch::Tensor with_shared = m.logits(b, tier);
  // The shared expert is in the forward: zeroing its down projection on layer 0 changes the logits.
  {
    torch::NoGradGuard g;
    bool found = false;
    for (auto& [name, t] : m.named_parameters())
      if (name.find("layers.0.mlp.shared_expert.down_proj.weight") != std::string::npos) {
        t.zero_();
        found = true;
      }
    REQUIRE(found);
  }
  CHECK_FALSE(torch::allclose(m.logits(b, tier), with_shared));
  const double loss = m.step(b, tier).item<double>();
  CHECK(loss == Approx(std::log(64.0)).epsilon(0.05));  // random weights: near-uniform logits
  double grad = 0;
  for (const auto& t : m.adapter_parameters())
    if (t.grad().defined()) grad += t.grad().abs().sum().item<double>();
  CHECK(grad > 0);
}

TEST_CASE("grouped experts need LibTorch >= 2.9: a clear error on older ones", "[harness][tier]") {
  const auto shape = tiny("tiny-gemma4");
  h::Model m(shape, cpu_fp32());
  const h::Batch b = h::make_batch({16}, 16, shape.vocab_size, 5, torch::kCPU);
#if TORCH_VERSION_MAJOR < 2
  CHECK_THROWS_AS(m.step(b, h::parse_tier("sdpa-auto/grouped")), stepcast::InputError);
#else
  CHECK(std::isfinite(m.step(b, h::parse_tier("sdpa-auto/grouped")).item<double>()));
#endif
}

TEST_CASE("tier labels parse, print canonically and reject typos", "[harness][tier]") {
  CHECK(stepcast::model::tier_label(h::parse_tier("sdpa-auto/loop")) == "sdpa-auto/loop");
  CHECK(h::parse_tier("sdpa-math/grouped/ce-chunked").ce_chunked);
  CHECK(stepcast::model::tier_label(h::parse_tier("sdpa-efficient/loop/gqa-native/mask-explicit")) ==
        "sdpa-efficient/loop/mask-explicit/gqa-native");
  CHECK_THROWS_AS(h::parse_tier("sdpa/loop"), stepcast::InputError);
  CHECK_THROWS_AS(h::parse_tier("sdpa-auto"), stepcast::InputError);
  CHECK_THROWS_AS(h::parse_tier("sdpa-auto/grouped/fast"), stepcast::InputError);
  // The one grammar's labels the harness cannot run.
  CHECK_THROWS_AS(h::parse_tier("hf-sdpa-efficient-sm80/loop"), stepcast::InputError);
  CHECK_THROWS_AS(h::parse_tier("sdpa-auto+ckpt/loop"), stepcast::InputError);
}

TEST_CASE("the harness's mask path is the cost model's at window - 1, window, window + 1", "[harness][window]") {
  const auto shape = tiny("tiny-gemma4");  // sliding_window 8
  const auto tier = h::parse_tier("sdpa-auto/loop/gqa-expand");
  const stepcast::model::FeatureMaker features(shape, tier, stepcast::model::gpu_info("NVIDIA H200"));
  h::Model m(shape, cpu_fp32());
  for (int64_t width : {int64_t{7}, int64_t{8}, int64_t{9}}) {
    m.hidden(h::make_batch({width}, width, shape.vocab_size, 5, torch::kCPU), tier);
    for (const auto& t : features.layer_types()) {
      INFO("width " << width << " " << t.spec.type);
      const bool predicted = t.at(false, width).explicit_mask;
      CHECK(predicted == stepcast::model::plan_layer_at(tier, t.spec, false, 90, width).explicit_mask);
      CHECK(m.layer_info().at(t.spec.type).mask_path == (predicted ? "explicit" : "is_causal"));
      // transformers builds the sliding mask from width == window on.
      CHECK(predicted == (t.spec.window > 0 && width >= t.spec.window));
    }
  }
}

TEST_CASE("a dummy family (one table entry and a config) builds and trains on the CPU", "[harness][family]") {
  stepcast::testing::register_dummy_family();
  const auto shape = tiny("tiny-dummy");
  h::Model m(shape, cpu_fp32());
  const auto counts = stepcast::model::count_params(shape);
  CHECK(m.parameter_count() == counts.total);
  CHECK(m.parameter_count() == 12'672);
  CHECK(static_cast<int64_t>(m.named_parameters().size()) == counts.tensors);
  // Every tensor has the name and shape of the counted table.
  const auto modules = stepcast::model::expand_modules(shape);
  std::map<std::string, std::vector<int64_t>> expected;
  for (const auto& mod : modules) {
    expected[mod.weight_name()] = mod.weight_shape();
    if (mod.bias) expected[mod.name + ".bias"] = {mod.out_features};
  }
  for (const auto& [name, t] : m.named_parameters()) {
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    CHECK(t.sizes().vec() == expected.at(name));
  }
  CHECK(m.lora_modules() == stepcast::model::plan_lora(shape, stepcast::model::default_lora_targets(), 4).modules);
  const h::Batch b = h::make_batch({12, 9}, 12, shape.vocab_size, 5, torch::kCPU);
  const double loss = m.step(b, h::parse_tier("sdpa-auto/loop")).item<double>();
  CHECK(loss == Approx(std::log(50.0)).epsilon(0.05));
}
