// Full fine-tuning priced from the LoRA-fitted rates (docs/method.md, "Full fine-tuning"): the weight-gradient GEMMs,
// no adapter work, AdamW over every parameter, launches per nn.Linear, and what trains in memory.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "uniform_batch.hpp"
#include "io/model_config.hpp"
#include "model/features.hpp"
#include "model/launches.hpp"
#include "model/modules.hpp"
#include "model/parallel.hpp"
#include "model/run_memory.hpp"
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
  const double trained = sm::LaunchModel(shape, modules, tier, sm::LoraPlan{}, sm::AdapterPath::fp32, true).per_step_all_experts();
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

TEST_CASE("a trained embedding's backward floor: 4 V h bytes first, 6 V h while an earlier gradient waits, none under LoRA") {
  // Qwen3-4B (151,936 x 2,560, bf16): embedding_dense_backward's fp32 buffer 1.45 GiB and its bf16 cast 0.72 GiB
  // (measurements/records/h100-full-finetune-foreach, docs/method.md "Fitting a run's memory").
  const auto shape = stepcast::io::load_model("qwen3-4b");
  const auto tier = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto gpu = sm::gpu_info("NVIDIA H100 80GB HBM3");
  const double table_gib = 151936.0 * 2560.0 / 1073741824.0;
  const sm::FeatureMaker trained(shape, tier, gpu, full());
  CHECK(trained.embedding_backward_gib(false) == Approx(4 * table_gib));
  CHECK(trained.embedding_backward_gib(true) == Approx(6 * table_gib));
  const sm::FeatureMaker lora(shape, tier, gpu, sm::LoraChoice{16, {}});
  CHECK(lora.embedding_backward_gib(true) == 0);
  CHECK(lora.memory(uniform_batch(2, 2048)).floor_gib == 0);
  // A short probe: every gradient alive at the end of its backward and the first cast, over the probe's base.
  const auto probe = trained.memory(uniform_batch(2, 2048), sm::RunPosition{});
  CHECK(probe.base_gib + probe.floor_gib ==
        Approx(trained.weights_gib() + trained.trainable().gradients + 4 * table_gib));
  // The measured probe peaked at 16.55 GiB; weights + gradients + the buffer are 16.43.
  CHECK(probe.base_gib + probe.floor_gib == Approx(16.43).epsilon(0.005));
  // In a run the state counts every gradient: the floor is the accumulating one.
  const auto run = trained.memory(uniform_batch(2, 2048), sm::RunPosition{true, true, false});
  CHECK(run.floor_gib == Approx(6 * table_gib));
}

TEST_CASE("a run's micro-batch peaks at its step's bytes or the embedding's floor, whichever is larger") {
  sm::RunMemory r;
  r.itemised = true;
  r.weights_gib = 7.5;
  r.gradients_gib = 7.5;
  r.embedding_backward_gib = 2.17;
  const sm::RunPosition at{true, false, false};
  sm::MemoryParts small;
  small.step_gib = 1.0;
  CHECK(r.micro_batch_gib(small, at) == Approx(15.0 + 2.17));
  sm::MemoryParts large;
  large.step_gib = 10.0;
  CHECK(r.micro_batch_gib(large, at) == Approx(25.0));
}

TEST_CASE("kFullLaunchesPerLinear is the kernel tables' count: the LoRA row less the tables' difference a linear") {
  // measurements/records/h100-full-finetune-foreach/kernels: Llama-3.2-1B 2 x 2048, LoRA on all 112 linears and a
  // full fine-tune, one H100 (model/launches.hpp).
  const auto kernels = [](const std::string& side) {
    std::ifstream in(STEPCAST_MEASUREMENTS "/records/h100-full-finetune-foreach/kernels/llama-3.2-1b-" + side +
                     "__probes/kernels_llama-3.2-1b_2x2048_2048-2048.jsonl");
    REQUIRE(in);
    double n = 0;
    for (std::string line; std::getline(in, line);) {
      const auto row = nlohmann::json::parse(line);
      if (row.value("kind", "") == "kernel") n += row["count"].get<double>();
    }
    return n;
  };
  const double lora = kernels("lora"), full = kernels("full");
  CHECK(lora == 5570);
  CHECK(full == 2523);
  CHECK(41.6 - (lora - full) / 112.0 == Approx(sm::kFullLaunchesPerLinear).margin(0.05));
}
