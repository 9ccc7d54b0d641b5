// A run's memory in the model (model/run_memory.hpp, model/allocator.hpp): the caching allocator's rules by hand,
// the persistent tensors of a tiny model, the state split of what trains, StepModel's parts adding up to its
// steady peak, old coefficient files reading the new rows as not selected, and what a transfer does not carry.
#include "catch.hpp"
#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/allocator.hpp"
#include "model/counts.hpp"
#include "model/memory.hpp"
#include "model/step_model.hpp"
#include "model/transfer.hpp"

using namespace stepcast;

namespace {
constexpr int64_t kMiB = 1 << 20;
}  // namespace

TEST_CASE("the caching allocator's rounding and segments (c10/cuda/CUDACachingAllocator.cpp)", "[memory][allocator]") {
  CHECK(model::rounded_request_bytes(1) == 512);
  CHECK(model::rounded_request_bytes(512) == 512);
  CHECK(model::rounded_request_bytes(513) == 1024);
  CHECK(model::segment_bytes(kMiB) == 2 * kMiB);           // a small request: a 2 MiB segment
  CHECK(model::segment_bytes(kMiB + 512) == 20 * kMiB);    // 1-10 MiB: a 20 MiB segment
  CHECK(model::segment_bytes(10 * kMiB) == 10 * kMiB);     // from 10 MiB: the request rounded to 2 MiB
  CHECK(model::segment_bytes(11 * kMiB + 512) == 12 * kMiB);
  // Three 600 KiB tensors share one 2 MiB small segment; each is split off its rest.
  const auto small = model::persistent_footprint({600 * 1024, 600 * 1024, 600 * 1024}, model::Allocator::caching);
  CHECK(small.reserved == 2 * kMiB);
  CHECK(small.allocated == 1800 * 1024);
  // 15 MiB: a 16 MiB segment whose 1 MiB rest is not more than 1 MiB: the whole block is allocated.
  const auto large = model::persistent_footprint({15 * kMiB}, model::Allocator::caching);
  CHECK(large.reserved == 16 * kMiB);
  CHECK(large.allocated == 16 * kMiB);
  // Two 3 MiB tensors: one 20 MiB segment, split (the rest is more than 1 MiB).
  const auto medium = model::persistent_footprint({3 * kMiB, 3 * kMiB}, model::Allocator::caching);
  CHECK(medium.reserved == 20 * kMiB);
  CHECK(medium.allocated == 6 * kMiB);
  // Expandable segments: each pool grows in pages, 2 MiB (small) and 20 MiB (large), every block split.
  const auto expandable = model::persistent_footprint({600 * 1024, 15 * kMiB, 3 * kMiB}, model::Allocator::expandable_segments);
  CHECK(expandable.allocated == 600 * 1024 + 18 * kMiB);
  CHECK(expandable.reserved == 2 * kMiB + 20 * kMiB);
  CHECK(model::parse_allocator("expandable_segments") == model::Allocator::expandable_segments);
  CHECK(model::parse_allocator("expandable-segments") == model::Allocator::expandable_segments);
  CHECK_FALSE(model::parse_allocator("cuda_malloc_async"));
  CHECK(model::allocator_name(model::Allocator::caching) == "default");
}

TEST_CASE("the persistent tensors of a run and the split of what trains", "[memory][allocator]") {
  // tiny-llama, LoRA rank 4 on q_proj (64 x 64) of 2 layers: A [4, 64] and B [64, 4] in fp32 per layer.
  const auto s = io::load_model_config(STEPCAST_TEST_DATA "/configs/tiny-llama.json");
  model::TrainingSetup setup;
  setup.lora_rank = 4;
  setup.lora_targets = {"q_proj"};
  const auto tensors = model::persistent_tensor_bytes(s, setup);
  int64_t total = 0;
  for (int64_t b : tensors) total += b;
  const int64_t adapters = 2 * 2 * 4 * 64 * 4;  // 2 layers x (A + B) x 4 x 64 x 4 bytes
  CHECK(total == 2 * model::count_params(s).total + 4 * adapters);  // weights; adapters, gradients, 2 AdamW states
  const auto r = model::architecture_rates(s, setup);
  CHECK(r.trainable_param_bytes == adapters);
  CHECK(r.gradient_bytes == adapters);
  CHECK(r.optimizer_state_bytes == 2 * adapters);
  CHECK(r.trainable_bytes == 4 * adapters);  // the 16 bytes per adapter parameter the peak always counted
  setup.full = true;
  const auto full = model::architecture_rates(s, setup);
  CHECK(full.trainable_param_bytes == 0);  // the weights are the parameters
  CHECK(full.gradient_bytes == full.weight_bytes);
  CHECK(full.optimizer_state_bytes == 2 * full.weight_bytes);
}

TEST_CASE("a run's micro-batch after the first optimizer step is the steady peak", "[memory][run]") {
  // Old files carry no run terms: inside a window after the first step, the timeline's micro-batch is the peak
  // `predict` gives; before the first step it lacks AdamW's states only.
  const auto c = io::load_coefficients(STEPCAST_SCENARIOS "/coefficients/h200-hf-peft-sdpa-grouped_mm.yaml");
  for (int j : {model::kMemRunToken, model::kMemFirstSeenToken, model::kMemOptimizerTransient, model::kMemFragmentation,
                model::kMemExpandableFragmentation, model::kMemContext}) {
    INFO(model::memory_term_names()[j]);
    CHECK_FALSE(c.memory[j].selected);
    CHECK(c.memory[j].reason == "not selected: absent from this file");
  }
  CHECK_FALSE(c.peak_interval.has_value());
  const model::StepModel m(io::load_model("gemma-4-26b-a4b"), c);
  model::MicroBatch b;
  b.rows = {4096, 3000};
  b.width = 4096;
  const model::RunMemory run = m.run_memory(model::Allocator::caching);
  CHECK(run.itemised);
  CHECK_FALSE(run.context_known);
  CHECK_FALSE(run.fragmentation_known);
  const model::MemoryParts parts = m.memory_parts(b);
  CHECK(run.micro_batch_gib(parts, {true, true, true}) == Approx(m.peak_gib(b)).epsilon(1e-12));
  CHECK(m.peak_gib(b) - run.micro_batch_gib(parts, {true, false, true}) == Approx(run.optimizer_state_gib));
  CHECK(run.optimizer_state_gib == Approx(2 * run.trainable_gib));  // AdamW: two fp32 moments per adapter parameter
  // The allocator reserves more than the persistent tensors' bytes; expandable segments round to larger pages here.
  CHECK(run.persistent_rounding_gib > 0);
  CHECK(run.persistent_rounding_gib < 1.0);
}

TEST_CASE("a transfer carries neither the peak interval, the run's bytes per token nor another GPU's context",
          "[memory][transfer]") {
  auto c = io::load_coefficients(STEPCAST_SCENARIOS "/coefficients/h200-hf-peft-sdpa-grouped_mm.yaml");
  c.peak_interval = model::PeakInterval{0.99, 1.02, 50, 4, 0.9, "test"};
  c.memory[model::kMemRunToken] = {100, 1, true, ""};
  c.memory[model::kMemContext] = {0.5, 0.01, true, ""};
  model::TransferAsk same;
  CHECK(model::transfer_coefficients(c, same, false).coefficients.peak_interval.has_value());
  model::TransferAsk other_model;
  other_model.model = "llama-3-8b";
  const auto t = model::transfer_coefficients(c, other_model, true).coefficients;
  CHECK_FALSE(t.peak_interval.has_value());
  CHECK_FALSE(t.memory[model::kMemRunToken].selected);
  CHECK(t.memory[model::kMemContext].selected);  // same GPU
  model::TransferAsk other_gpu;
  other_gpu.gpu = "NVIDIA A100-SXM4-80GB";
  const auto g = model::transfer_coefficients(c, other_gpu, true).coefficients;
  CHECK_FALSE(g.memory[model::kMemContext].selected);
  CHECK_FALSE(g.peak_interval.has_value());
}
