// Checkpointing off (LoraChoice::checkpointing; docs/method.md, "Checkpointing off"): the rates were fitted on
// recomputing steps, so each term loses its second forward, the weight gradient counts 3/2, every layer keeps its
// working set, and the recompute's launches go. A tier that never recomputed is unchanged.
#include "catch.hpp"
#include "uniform_batch.hpp"
#include "io/model_config.hpp"
#include "model/features.hpp"
#include "model/launches.hpp"
#include "model/memory.hpp"
#include "model/modules.hpp"
#include "model/parallel.hpp"
#include "model/tiers.hpp"

namespace sm = stepcast::model;

namespace {
using stepcast::testing::uniform_batch;
sm::LoraChoice choice(bool full, bool checkpointing) {
  sm::LoraChoice l;
  l.full = full;
  l.checkpointing = checkpointing;
  return l;
}
}  // namespace

TEST_CASE("the share of a term without its second forward is (b + 1) / (b + 2)") {
  CHECK(sm::recompute_free_share(sm::kFrozenGemmBackwardPerForward) == Approx(2.0 / 3.0));
  CHECK(sm::recompute_free_share(sm::kTrainedGemmBackwardPerForward) == Approx(3.0 / 4.0));
  CHECK(sm::recompute_free_share(sm::kAttentionBackwardPerForward) == Approx(7.0 / 9.0));
  CHECK(sm::recompute_free_share(sm::kElementwiseBackwardPerForward) == Approx(5.0 / 7.0));
  const auto hf = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  CHECK(sm::step_recomputes(hf, choice(false, true)));
  CHECK_FALSE(sm::step_recomputes(hf, choice(false, false)));
  CHECK(sm::weight_gradient_factor(hf, choice(true, false)) == Approx(1.5));
}

TEST_CASE("checkpointing off: each term loses its recomputed forward; a full fine-tune's GEMMs are 3 real passes") {
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  const auto tier = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto gpu = sm::gpu_info("NVIDIA H200");
  const auto b = uniform_batch(2, 2048);
  const auto lora = sm::FeatureMaker(shape, tier, gpu, choice(false, true)).step(b);
  const auto lora_off = sm::FeatureMaker(shape, tier, gpu, choice(false, false)).step(b);
  CHECK(lora_off.x[sm::kGemm] == Approx(lora.x[sm::kGemm] * 2.0 / 3.0));
  CHECK(lora_off.x[sm::kLoraGemm] == Approx(lora.x[sm::kLoraGemm] * 3.0 / 4.0));
  CHECK(lora_off.x[sm::kAttention] == Approx(lora.x[sm::kAttention] * 7.0 / 9.0));
  CHECK(lora_off.x[sm::kMemoryBound] == Approx(lora.x[sm::kMemoryBound] * 5.0 / 7.0));
  // forward + input gradient + weight gradient = the 3 passes the frozen convention counts.
  const auto full_off = sm::FeatureMaker(shape, tier, gpu, choice(true, false)).step(b);
  CHECK(full_off.x[sm::kGemm] == Approx(lora.x[sm::kGemm]));
}

TEST_CASE("a tier that never recomputed is unchanged by checkpointing off") {
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  const auto tier = sm::tier_from_label("sdpa-auto/grouped");
  const auto gpu = sm::gpu_info("NVIDIA H200");
  const auto b = uniform_batch(2, 2048);
  const auto on = sm::FeatureMaker(shape, tier, gpu, choice(false, true)).step(b);
  const auto off = sm::FeatureMaker(shape, tier, gpu, choice(false, false)).step(b);
  for (int k = 0; k < sm::kStepTerms; ++k) CHECK(off.x[k] == Approx(on.x[k]));
}

TEST_CASE("checkpointing off keeps every layer's working set and drops the recompute's launches") {
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  sm::TrainingSetup setup;
  setup.peft_layers = true;
  const auto on = sm::architecture_rates(shape, setup);
  setup.recompute = false;
  const auto off = sm::architecture_rates(shape, setup);
  CHECK(off.saved_bytes_per_token ==
        Approx(on.saved_bytes_per_token + 16.0 * on.working_set_bytes_per_token));  // 16 layers
  const auto modules = sm::expand_modules(shape);
  const auto hf = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto plan = sm::plan_lora(modules, sm::LoraChoice{});
  const double with = sm::LaunchModel(shape, modules, hf, plan).per_step_all_experts();
  const double without = sm::LaunchModel(shape, modules, hf, plan, false, false, false).per_step_all_experts();
  CHECK(without == Approx(with * 5.0 / 7.0));
}

TEST_CASE("FSDP without checkpointing gathers twice a micro-batch; mixed precision gathers bf16 copies") {
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  const auto modules = sm::expand_modules(shape);
  const sm::ComputeSplit compute{0.0, 0.0, 4096};  // nothing to hide behind: every gather exposed
  const sm::ParallelConfig fsdp{sm::ParallelStrategy::fsdp, 8, 0, 0.9, sm::kBucketBytes};
  const sm::Link link{100.0, 0.0};
  auto gathers_s = [&](const sm::ParallelWorkload& w) {
    sm::ParallelWorkload no_grads = w;
    no_grads.gradient_bytes = 0;
    return sm::micro_batch_comm(fsdp, no_grads, compute, link).total_s;
  };
  const double with = gathers_s(sm::full_workload(shape, modules, true));
  const double without = gathers_s(sm::full_workload(shape, modules, false));
  CHECK(without == Approx(with * 2.0 / 3.0));
  auto fp32 = shape;
  fp32.dtype = "float32";
  CHECK(gathers_s(sm::full_workload(fp32, sm::expand_modules(fp32), false, true)) == Approx(without));
  CHECK(gathers_s(sm::full_workload(fp32, sm::expand_modules(fp32), false, false)) == Approx(2 * without));
}
