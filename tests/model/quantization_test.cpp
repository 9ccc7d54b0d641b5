// QLoRA's 4-bit base (model/quantization.hpp, docs/method.md "QLoRA"): bitsandbytes' storage, which modules it
// replaces, and what each call of a 4-bit layer adds to the step, its memory and its launches.
#include <string>

#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"
#include "model/features.hpp"
#include "model/launches.hpp"
#include "model/memory.hpp"
#include "model/quantization.hpp"
#include "uniform_batch.hpp"

namespace sm = stepcast::model;

namespace {
using stepcast::testing::uniform_batch;
sm::LoraChoice qlora(sm::BaseQuant q, bool checkpointing = true) {
  sm::LoraChoice l{64, {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "down_proj"}};
  l.base_quant = q;
  l.checkpointing = checkpointing;
  return l;
}
}  // namespace

TEST_CASE("NF4 keeps half a byte a weight plus its absmax, and double quantization shrinks the absmax", "[quantization]") {
  CHECK(sm::quantized_weight_bytes(64, sm::BaseQuant::nf4) == Approx(32 + 4));            // one fp32 absmax per 64
  CHECK(sm::quantized_weight_bytes(64 * 256, sm::BaseQuant::nf4_double) == Approx(8192 + 256 + 4));  // 8-bit absmax
  CHECK(sm::quantized_weight_bytes(1000, sm::BaseQuant::none) == 0);
  // One dequantization reads the packed weight and writes the bf16 copy: 4.125 bits + 16 bits a weight.
  CHECK(sm::dequant_bytes(64 * 256, sm::BaseQuant::nf4_double, 2) == Approx(8192 + 256 + 4 + 2 * 64 * 256));
  CHECK(sm::parse_base_quant("nf4-double-quant", "x") == sm::BaseQuant::nf4_double);
  CHECK_THROWS_WITH(sm::parse_base_quant("int4", "--quantize-base"),
                    Catch::Matchers::Contains("--quantize-base = 'int4'. Violated constraint: one of none, nf4"));
}

TEST_CASE("the 4-bit base: decoder linears packed, embedding and head in bf16, one dense copy in flight", "[quantization]") {
  const auto shape = stepcast::io::load_model("llama-2-7b");
  const auto modules = sm::expand_modules(shape);
  double linear = 0, largest = 0;
  for (const auto& m : modules)
    if (m.kind == sm::ModuleKind::linear) {
      linear += static_cast<double>(m.weight_params());
      largest = std::max(largest, static_cast<double>(m.weight_params()));
    }
  CHECK(linear == Approx(32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008)));
  const double total = static_cast<double>(sm::count_params(shape, modules).total);
  const double expect = (total - linear) * 2 + sm::quantized_weight_bytes(linear, sm::BaseQuant::nf4_double) + 2 * largest;
  CHECK(sm::base_weight_bytes(shape, modules, sm::BaseQuant::nf4_double) == Approx(expect));
  CHECK(sm::base_weight_bytes(shape, modules, sm::BaseQuant::none) == Approx(total * 2));
  // About 3.7 GiB against 12.6 GiB in bf16: what lets a 7B model train on a 24 GB card.
  CHECK(expect / 1073741824.0 == Approx(3.68).epsilon(0.01));
  sm::TrainingSetup setup;
  setup.base_quant = sm::BaseQuant::nf4_double;
  CHECK(sm::architecture_rates(shape, setup).weight_bytes == Approx(expect));
}

TEST_CASE("each call of a 4-bit layer dequantizes its weight: a cost per micro-batch, not per token", "[quantization]") {
  const auto shape = stepcast::io::load_model("llama-2-7b");
  const auto tier = sm::parse_tier("hf-peft/sdpa-grouped_mm");
  const auto gpu = sm::gpu_info("NVIDIA GeForce RTX 4090");
  const sm::FeatureMaker plain(shape, tier, gpu, qlora(sm::BaseQuant::none));
  const sm::FeatureMaker q4(shape, tier, gpu, qlora(sm::BaseQuant::nf4_double));
  const auto extra = [&](const sm::MicroBatch& b) { return q4.step(b).x[sm::kMemoryBound] - plain.step(b).x[sm::kMemoryBound]; };
  // The clone of the six wrapped layers' outputs, 4 bytes (read + write) an output element, in both forwards.
  const double clone_per_token = 32.0 * (3 * 4096 + 3 * 11008 - 11008 + 4096) * 2 * 2 * 2 / 1e9;
  const double small = extra(uniform_batch(1, 128)), large = extra(uniform_batch(2, 2048));
  CHECK(large - small == Approx((4096 - 128) * clone_per_token));
  // What is left is the dequantizations: every 4-bit weight read packed and written in bf16, three calls a step.
  double params = 0;
  for (const auto& m : sm::expand_modules(shape))
    if (sm::quantized(m, sm::BaseQuant::nf4_double)) params += static_cast<double>(m.weight_params());
  CHECK(small - 128 * clone_per_token == Approx(3 * sm::dequant_bytes(params, sm::BaseQuant::nf4_double, 2) / 1e9));
  // Without checkpointing, no recompute: two calls, one clone.
  const sm::FeatureMaker off(shape, tier, gpu, qlora(sm::BaseQuant::nf4_double, false));
  const sm::FeatureMaker off_plain(shape, tier, gpu, qlora(sm::BaseQuant::none, false));
  const auto b = uniform_batch(1, 128);
  CHECK(off.step(b).x[sm::kMemoryBound] - off_plain.step(b).x[sm::kMemoryBound] ==
        Approx(2 * sm::dequant_bytes(params, sm::BaseQuant::nf4_double, 2) / 1e9 + 128 * clone_per_token / 2));
  // Every other category is the bf16 model's: the GEMMs run on the dense copy.
  CHECK(q4.step(b).x[sm::kGemm] == Approx(plain.step(b).x[sm::kGemm]));
  CHECK(q4.step(b).x[sm::kLoraGemm] == Approx(plain.step(b).x[sm::kLoraGemm]));
}

TEST_CASE("4-bit layers launch their dequantization kernels, and a full fine-tune of a 4-bit base is refused", "[quantization]") {
  const auto shape = stepcast::io::load_model("llama-2-7b");
  const auto modules = sm::expand_modules(shape);
  const auto tier = sm::parse_tier("hf-peft/sdpa-grouped_mm");
  const auto lora = sm::plan_lora(modules, qlora(sm::BaseQuant::none));
  const double plain = sm::LaunchModel(shape, modules, tier, lora).per_step(4096);
  const double q4 = sm::LaunchModel(shape, modules, tier, lora, sm::AdapterPath::fp32, false, true, sm::BaseQuant::nf4_double).per_step(4096);
  // 224 4-bit layers x 3 calls x 3 kernels, and 192 wrapped ones' clones in two forwards.
  CHECK(q4 - plain == Approx(224 * 3 * 3 + 192 * 2));
  sm::LoraChoice full = qlora(sm::BaseQuant::nf4);
  full.full = true;
  CHECK_THROWS_AS(sm::FeatureMaker(shape, tier, sm::gpu_info("NVIDIA H200"), full), stepcast::InputError);
}
