// Full fine-tuning priced from the LoRA-fitted rates (docs/method.md, "Full fine-tuning"): the weight-gradient GEMMs,
// no adapter work, AdamW over every parameter, launches per nn.Linear, and what trains in memory.
#include "catch.hpp"
#include "uniform_batch.hpp"
#include "io/model_config.hpp"
#include "model/features.hpp"
#include "model/launches.hpp"
#include "model/modules.hpp"
#include "model/parallel.hpp"
#include "model/tiers.hpp"

namespace sm = stepcast::model;

namespace {
using stepcast::testing::uniform_batch;
sm::LoraChoice full() {
  sm::LoraChoice l;
  l.full = true;
  return l;
}
}  // namespace

TEST_CASE("a trained weight adds its weight-gradient GEMM: 4/3 of the frozen passes with recompute, 3/2 without") {
  CHECK(sm::weight_gradient_factor(true) == Approx(4.0 / 3.0));
  CHECK(sm::weight_gradient_factor(false) == Approx(1.5));
  // transformers + peft labels carry no ckpt, but that stack always ran gradient checkpointing.
  CHECK(sm::weight_gradient_factor(sm::tier_from_label("hf-peft/sdpa-grouped_mm")) == Approx(4.0 / 3.0));
  CHECK(sm::weight_gradient_factor(sm::tier_from_label("sdpa-auto/grouped")) == Approx(1.5));
}

TEST_CASE("full fine-tuning: base GEMMs x4/3, no adapter work, attention and memory-bound work unchanged") {
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  const auto tier = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto gpu = sm::gpu_info("NVIDIA H200");
  const sm::FeatureMaker lora(shape, tier, gpu, sm::LoraChoice{16, {}});
  const sm::FeatureMaker trained(shape, tier, gpu, full());
  const auto a = lora.step(uniform_batch(2, 2048)), b = trained.step(uniform_batch(2, 2048));
  CHECK(b.x[sm::kGemm] == Approx(a.x[sm::kGemm] * 4.0 / 3.0));
  CHECK(a.x[sm::kLoraGemm] > 0);
  CHECK(b.x[sm::kLoraGemm] == 0);
  CHECK(b.x[sm::kAttention] == Approx(a.x[sm::kAttention]));
  // LoRA's own elementwise bytes (weighted count) are gone; the plain count is the same.
  CHECK(b.x[sm::kMemoryBound] == Approx(a.x[sm::kMemoryBound]));
  CHECK(trained.full());
  CHECK(trained.lora_gib() > 3 * trained.weights_gib() * 0.99);  // gradients + two AdamW states like the weights
}

TEST_CASE("AdamW over every parameter: 23 element passes, 46 bytes a bf16 parameter") {
  CHECK(sm::adamw_bytes_per_param(2) == Approx(46.0));
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  const sm::FeatureMaker trained(shape, sm::tier_from_label("hf-peft/sdpa-grouped_mm"), sm::gpu_info("NVIDIA H200"), full());
  const auto params = static_cast<double>(sm::count_params(shape).total);
  CHECK(trained.optimizer_update_bytes() == Approx(46.0 * params));
  const sm::FeatureMaker lora(shape, sm::tier_from_label("hf-peft/sdpa-grouped_mm"), sm::gpu_info("NVIDIA H200"), 16);
  CHECK(lora.optimizer_update_bytes() == 0);
}

TEST_CASE("full fine-tuning launches: kFullLaunchesPerLinear per nn.Linear instead of the LoRA row") {
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  const auto modules = sm::expand_modules(shape);
  const auto tier = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const double norms_only = sm::LaunchModel(shape, modules, tier, sm::LoraPlan{}).per_step_all_experts();
  const double trained = sm::LaunchModel(shape, modules, tier, sm::LoraPlan{}, false, true).per_step_all_experts();
  int64_t linears = 0;
  for (const auto& m : modules)
    if (m.kind == sm::ModuleKind::linear) linears += m.copies;
  CHECK(linears == 16 * 7);  // Llama-3.2-1B: 16 layers of q, k, v, o, gate, up, down
  CHECK(trained - norms_only == Approx(sm::kFullLaunchesPerLinear * static_cast<double>(linears)));
}

TEST_CASE("a full fine-tune's ranks move and shard the weights' gradients and AdamW states") {
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  const auto w = sm::full_workload(shape, sm::expand_modules(shape), true);
  CHECK(w.gradient_bytes == Approx(w.weight_bytes));
  CHECK(w.optimizer_state_bytes == Approx(2 * w.weight_bytes));
  CHECK(w.trainable_bytes == Approx(w.weight_bytes));
}
