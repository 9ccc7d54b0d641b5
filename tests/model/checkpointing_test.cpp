// Checkpointing off (LoraChoice::checkpointing; docs/method.md, "Checkpointing off"): the rates were fitted on
// recomputing steps, so each term loses its second forward, the weight gradient counts 3/2, every layer keeps what
// autograd saved, and the recompute's launches go. A tier that never recomputed is unchanged.
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

TEST_CASE("checkpointing off: each term loses its recomputed forward, a full fine-tune's GEMMs are 3 real passes") {
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

TEST_CASE("checkpointing off keeps what autograd saved in every layer and drops the recompute's launches") {
  // Llama-3.2-1B: h 2048, 32 heads and 8 kv heads of 64, MLP 8192, 16 layers; LoRA r16 on all seven linears with
  // dropout, bf16 activations. Per layer and token, counted by hand from the modules (docs/method.md,
  // "Checkpointing off"): two norms' fp32 copies 2 x 4h; SDPA's q, k, v, output 2 (2048 + 2 x 512 + 2048) and
  // its fp32 log-sum-exp 4 x 32; the MLP's gate, activation and up outputs 3 x 2 x 8192; the adapters' fp32
  // dropout output and mask, 5 x d_in each (q, k, v, o, gate, up at 2048, down at 8192), and lora_B's input 4 x 16
  // each. Frozen linears keep nothing. Plus the final norm's fp32 copy.
  const double h = 2048, I = 8192;
  const double per_layer = 8 * h + 2 * (2048 + 2 * 512 + 2048) + 4 * 32 + 6 * I + 5 * (6 * h + I) + 7 * 4 * 16;
  const auto shape = stepcast::io::load_model("llama-3.2-1b");
  sm::TrainingSetup setup;
  setup.peft_layers = true;
  const auto on = sm::architecture_rates(shape, setup);
  setup.recompute = false;
  const auto off = sm::architecture_rates(shape, setup);
  CHECK(off.saved_bytes_per_token == Approx(16 * per_layer + 4 * h));
  CHECK(off.working_set_bytes_per_token == Approx(on.working_set_bytes_per_token));  // the transient stays
  // Every parameter trains: no adapters; the norms' bf16 inputs (2 x 2h), and each distinct linear input once:
  // q/k/v's and gate/up's norm outputs, o_proj's attention output, down_proj's product (2 x (3h + I)); the head's.
  setup.full = true;
  const auto full = sm::architecture_rates(shape, setup);
  const double full_layer = per_layer - (5 * (6 * h + I) + 7 * 4 * 16) + 2 * 2 * h + 2 * (3 * h + I);
  CHECK(full.saved_bytes_per_token == Approx(16 * full_layer + 4 * h + 2 * h));
  // Under autocast an adapter keeps bf16 copies: 3 bytes per input element with dropout, 2 per rank.
  setup.full = false;
  setup.lora_autocast = true;
  const auto autocast = sm::architecture_rates(shape, setup);
  CHECK(autocast.saved_bytes_per_token ==
        Approx(16 * (per_layer - 2 * (6 * h + I) - 7 * 2 * 16) + 4 * h));
  const auto modules = sm::expand_modules(shape);
  const auto hf = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto plan = sm::plan_lora(modules, sm::LoraChoice{});
  const double with = sm::LaunchModel(shape, modules, hf, plan).per_step_all_experts();
  const double without = sm::LaunchModel(shape, modules, hf, plan, sm::AdapterPath::fp32, false, false).per_step_all_experts();
  CHECK(without == Approx(with * 5.0 / 7.0));
}

TEST_CASE("checkpointing off on a MoE with q/k norms: every routed expert's activations and the router's softmax") {
  const auto shape = stepcast::io::load_model("qwen3-30b-a3b");
  sm::TrainingSetup setup;
  setup.peft_layers = true;
  setup.recompute = false;
  setup.lora_targets = {"q_proj"};
  setup.lora_dropout = 0;
  const auto off = sm::architecture_rates(shape, setup);
  const double h = 2048, k = 8, I = 768, E = 128;
  const double q = 32 * 128, kv = 4 * 128;
  // norms 2 x 4h and q_norm/k_norm 4 (q + kv); SDPA 2 (q + 2 kv + q) + 4 x 32; per routed expert 3 x 2 x I and
  // the weighted output 2h; the softmax 4E; q_proj's adapter 4h + 4 x 16.
  const double per_layer = 8 * h + 4 * (q + kv) + 2 * (2 * q + 2 * kv) + 4 * 32 + k * (6 * I + 2 * h) + 4 * E +
                           4 * h + 4 * 16;
  CHECK(off.saved_bytes_per_token == Approx(48 * per_layer + 4 * h));
  // Full fine-tuning: no adapter; every norm weight (q/k norms too) keeps its bf16 input; the trained inputs are the
  // attention input, o_proj's (q wide), the router's (the MLP input) and per top-k expert gate_up's and down's.
  setup.full = true;
  const auto full = sm::architecture_rates(shape, setup);
  const double full_layer = per_layer - (4 * h + 4 * 16) + 2 * (2 * h + q + kv) + 2 * h + 2 * q + 2 * h +
                            k * 2 * (h + I);
  CHECK(full.saved_bytes_per_token == Approx(48 * full_layer + 4 * h + 2 * h));
}

TEST_CASE("FSDP without checkpointing gathers twice a micro-batch, mixed precision gathers bf16 copies") {
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
