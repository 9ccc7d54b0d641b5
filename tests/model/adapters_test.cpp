// bf16 adapters (model/adapters.hpp, docs/method.md "bf16 adapters"): peft's adapters kept in the base's bf16
// (get_peft_model(autocast_adapter_dtype=False)) lose the fp32 casts and copies around them, run their GEMMs on the
// bf16 tensor cores and keep half the optimizer memory; the numbers asserted are read from peft's forward and
// autograd, as the comments in model/features.hpp and model/memory.cpp derive them.
#include <string>
#include <vector>

#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/adapters.hpp"
#include "model/errors.hpp"
#include "model/features.hpp"
#include "model/launches.hpp"
#include "model/memory.hpp"
#include "uniform_batch.hpp"

namespace sm = stepcast::model;

namespace {
using stepcast::testing::uniform_batch;
const std::vector<std::string> kAll7{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

sm::LoraChoice choice(sm::AdapterDtype dtype, bool autocast = false, double dropout = 0.05) {
  sm::LoraChoice l{16, kAll7, dropout, autocast};
  l.adapter_dtype = dtype;
  return l;
}
}  // namespace

TEST_CASE("the adapter dtype is float32 or bfloat16, and bf16 adapters decide the path under autocast too",
          "[adapters]") {
  CHECK(sm::parse_adapter_dtype("bfloat16", "--adapter-dtype") == sm::AdapterDtype::bfloat16);
  CHECK(sm::parse_adapter_dtype("float32", "--adapter-dtype") == sm::AdapterDtype::float32);
  CHECK(sm::adapter_dtype_names() == std::vector<std::string>{"float32", "bfloat16"});
  CHECK_THROWS_WITH(sm::parse_adapter_dtype("bf16", "lora.adapter_dtype"),
                    Catch::Matchers::Contains("lora.adapter_dtype = 'bf16'") &&
                        Catch::Matchers::Contains("float32") && Catch::Matchers::Contains("bfloat16"));
  CHECK_THROWS_AS(sm::parse_adapter_dtype("", "x"), stepcast::InputError);
  CHECK(sm::adapter_path(false, sm::AdapterDtype::float32) == sm::AdapterPath::fp32);
  CHECK(sm::adapter_path(true, sm::AdapterDtype::float32) == sm::AdapterPath::autocast);
  CHECK(sm::adapter_path(true, sm::AdapterDtype::bfloat16) == sm::AdapterPath::bf16);
  CHECK(sm::adapter_path(false, sm::AdapterDtype::bfloat16) == sm::AdapterPath::bf16);
}

TEST_CASE("bf16 adapters: no fp32 casts in the memory-bound bytes, autocast's GEMMs, 5.4 fewer launches an adapter",
          "[adapters][features]") {
  const auto llama = stepcast::io::load_model("llama-3-8b");
  const auto modules = sm::expand_modules(llama);
  const auto tier = sm::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto h200 = sm::gpu_info("NVIDIA H200");
  const auto x = [&](const sm::LoraChoice& l) {
    return sm::FeatureMaker(llama, modules, tier, h200, l, sm::ExpertWork::roofline, sm::MemoryWork::weighted)
        .step(uniform_batch(2, 4096))
        .x;
  };
  const auto lora = sm::plan_lora(modules, kAll7, 16);
  const double in = static_cast<double>(lora.in_features), out = static_cast<double>(lora.in_out_features) - in;
  const double tokens_passes = 8192.0 * 3 / 1e9;
  const auto fp32 = x(choice(sm::AdapterDtype::float32)), bf16 = x(choice(sm::AdapterDtype::bfloat16));
  // -30 raw bytes an input element (no cast, bf16 dropout), -44 an output element (autocast's output side); in the
  // weighted count's bytes, where the fp32 path's 11.9 a pass stands for 59.5 raw.
  CHECK(bf16[sm::kMemoryBound] - fp32[sm::kMemoryBound] ==
        Approx(sm::kLoraElementwiseBytes * (-30 * in - 44 * out) / 59.5 * tokens_passes));
  // Without dropout the input side loses the cast alone: -18 raw against the fp32 path without dropout.
  const auto fp32_nd = x(choice(sm::AdapterDtype::float32, false, 0.0));
  const auto bf16_nd = x(choice(sm::AdapterDtype::bfloat16, false, 0.0));
  CHECK(bf16_nd[sm::kMemoryBound] - fp32_nd[sm::kMemoryBound] ==
        Approx(sm::kLoraElementwiseBytes * (-18 * in - 44 * out) / 59.5 * tokens_passes));
  // The GEMMs run as autocast's do (bf16 FLOPs and bytes), and autocast over bf16 adapters changes nothing.
  const auto autocast = x(choice(sm::AdapterDtype::float32, true));
  CHECK(bf16[sm::kLoraGemm] == Approx(autocast[sm::kLoraGemm]));
  CHECK(bf16[sm::kLoraGemm] < 0.5 * fp32[sm::kLoraGemm]);
  CHECK(x(choice(sm::AdapterDtype::bfloat16, true)) == bf16);
  // Everything else is the base's.
  CHECK(bf16[sm::kGemm] == fp32[sm::kGemm]);
  // Launches: peft's casts and their backward go (-7), the bf16 GEMMs' split-K reductions come (+1.6).
  const sm::LaunchModel l32(llama, modules, tier, lora), l16(llama, modules, tier, lora, sm::AdapterPath::bf16);
  CHECK(l16.per_step_all_experts() - l32.per_step_all_experts() == Approx(-5.4 * static_cast<double>(lora.modules)));
}

TEST_CASE("bf16 adapters halve what trains in memory and save bf16 copies in the recomputed layer",
          "[adapters][memory]") {
  const auto mistral = stepcast::io::load_model(STEPCAST_SCENARIOS "/models/mistral-7b.json");
  const auto modules = sm::expand_modules(mistral);
  sm::TrainingSetup setup;
  setup.lora_rank = 16;
  setup.lora_targets = kAll7;
  setup.peft_layers = true;
  const auto fp32 = sm::architecture_rates(mistral, modules, setup);
  setup.lora_dtype = sm::AdapterDtype::bfloat16;
  const auto bf16 = sm::architecture_rates(mistral, modules, setup);
  // The parameter, its gradient and AdamW's two moments: 2 bytes each instead of 4.
  const double params = static_cast<double>(sm::plan_lora(modules, kAll7, 16).params);
  CHECK(bf16.trainable_bytes == Approx(8.0 * params));
  CHECK(fp32.trainable_bytes == Approx(16.0 * params));
  CHECK(bf16.weight_bytes == fp32.weight_bytes);
  // The recomputed layer (Mistral-7B, h 4096, I 14336): lora_A saves dropout's bf16 output and mask (3 bytes an input
  // element); at down_proj lora_B's bf16 output, its scaled copy and the base output (6 h). Without dropout lora_A
  // saves x itself, once per distinct input (q/k/v's, o_proj's, gate/up's; down_proj's is the gated product, in the
  // layer already): 2 bytes each.
  const double h = 4096, I = 14336;
  const double base = 2 * (4096 + 2048 + 4096 + h + 3 * I) + 2 * 4 * h + 2 * I + 2 * 2 * h;
  const double inputs = 3 * h + h + 2 * h + I;
  CHECK(sm::peft_layer_working_set_bytes(mistral, modules, kAll7, 0.05, 2, sm::AdapterPath::bf16) ==
        Approx(base + 3 * inputs + 6 * h));
  CHECK(sm::peft_layer_working_set_bytes(mistral, modules, kAll7, 0.0, 2, sm::AdapterPath::bf16) ==
        Approx(base + 2 * 3 * h + 6 * h));
  CHECK(sm::peft_layer_working_set_bytes(mistral, modules, kAll7, 0.05, 2, sm::AdapterPath::bf16) <
        sm::peft_layer_working_set_bytes(mistral, modules, kAll7, 0.05, 2, sm::AdapterPath::autocast));
  // Without checkpointing every layer keeps lora_A's and lora_B's inputs: 3 bytes an input element and 2 a rank
  // element with dropout, against 5 and 4 for fp32 adapters.
  setup.recompute = false;
  setup.lora_dtype = sm::AdapterDtype::float32;
  const double saved32 = sm::peft_saved_bytes_per_token(mistral, modules, setup, kAll7, false);
  setup.lora_dtype = sm::AdapterDtype::bfloat16;
  const double saved16 = sm::peft_saved_bytes_per_token(mistral, modules, setup, kAll7, false);
  CHECK(saved32 - saved16 == Approx(32 * (2 * inputs + 2 * 16 * 7)));
}
