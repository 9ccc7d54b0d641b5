// The one choice of predictor every front end makes (predict/predictor.hpp): the GPU's default per-category
// predictor, fitted files only where they match, the stack's host side with the model's own launches, the user's
// LoRA, and each kind's interval.
#include <filesystem>

#include "catch.hpp"
#include "io/coefficients_io.hpp"
#include "model/errors.hpp"
#include "model/launches.hpp"
#include "model/intervals.hpp"
#include "model/stacks.hpp"
#include "predict/predictor.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {
const std::string kScenarios = STEPCAST_SCENARIOS;
const std::string kHarnessFile = kScenarios + "/coefficients/h200-sdpa-auto-grouped-gqa-expand.yaml";

predict::PredictorAsk ask_model(const std::string& model) {
  predict::PredictorAsk ask;
  ask.model = model;
  return ask;
}

model::MicroBatch batch(std::vector<int64_t> rows, int64_t width) {
  model::MicroBatch b;
  b.rows = std::move(rows);
  b.width = width;
  return b;
}

double half_width(const predict::Predictor& p, const model::MicroBatch& b) {
  const auto m = p.step_model();
  const model::Transfer t = model::at_shape(p.transfer, static_cast<int64_t>(b.rows.size()), b.width);
  return model::step_half_width(t, m->features().step(b), m->step_s(b), b.has_padding());
}
}  // namespace

TEST_CASE("without coefficients the GPU's declared default predictor answers, for any model", "[predictor]") {
  const std::string path = predict::default_coefficients_path("NVIDIA H200");
  CHECK(std::filesystem::equivalent(path, kScenarios + "/" + model::find_gpu(model::known_gpus(), "NVIDIA H200")->default_coefficients));
  // The default is pooled over the families it was fitted on: one of them is calibrated.
  const auto llama = predict::choose_predictor(ask_model("llama-3-8b"));
  CHECK(llama.source == predict::Source::default_predictor);
  CHECK(llama.transfer.provenance == std::vector{model::Provenance::calibrated});
  CHECK_THAT(llama.first_line, StartsWith("default per-category predictor for NVIDIA H200 (") &&
                                   Contains("calibrated for the pooled models") && Contains("host side of transformers-peft"));
  // No model: a pooled file has no model of its own to answer for.
  CHECK_THROWS_WITH(predict::choose_predictor(ask_model("")), Contains("pooled") && Contains("model:"));
  // Another model travels without --transfer: the default is there to be carried.
  const auto qwen = predict::choose_predictor(ask_model("qwen2.5-7b"));
  CHECK(qwen.transfer.provenance == std::vector{model::Provenance::transferred_model});
  CHECK_THAT(qwen.first_line, Contains("transferred model 'qwen2.5-7b', not among the 5 models the pooled rates were fitted on"));
  // The peak's interval travels wider (measured on families the predictor never saw); a pooled family keeps the file's.
  const auto& own_peak = llama.transfer.coefficients.peak_interval;
  const auto& carried_peak = qwen.transfer.coefficients.peak_interval;
  REQUIRE(own_peak.has_value());
  REQUIRE(carried_peak.has_value());
  CHECK(own_peak->high < 1.01);
  CHECK(carried_peak->high == model::transferred_model_peak_interval().high);
  CHECK(carried_peak->low == std::min(own_peak->low, model::transferred_model_peak_interval().low));
  // Another GPU still needs --transfer: the H100 declares no default.
  predict::PredictorAsk h100 = ask_model("qwen2.5-7b");
  h100.gpu = "NVIDIA H100 80GB HBM3";
  CHECK_THROWS_WITH(predict::choose_predictor(h100), Contains("'NVIDIA H100 80GB HBM3' has no default predictor") &&
                                                         Contains("--transfer"));
  h100.transfer = true;
  const auto carried = predict::choose_predictor(h100);
  CHECK(carried.transfer.provenance ==
        std::vector{model::Provenance::transferred_model, model::Provenance::transferred_gpu});
  CHECK_THAT(carried.first_line, StartsWith("default per-category predictor for NVIDIA H100 80GB HBM3"));
}

TEST_CASE("a fitted file answers where model, GPU and tier match, elsewhere only with --transfer", "[predictor]") {
  predict::PredictorAsk ask = ask_model("gemma-4-26b-a4b");
  ask.coefficients = kHarnessFile;
  const auto own = predict::choose_predictor(ask);
  CHECK(own.source == predict::Source::fitted_file);
  CHECK(own.stack == nullptr);  // the file's own host side
  CHECK_THAT(own.first_line, StartsWith("fitted file ") && Contains("(model, GPU and tier match)"));
  ask.model = "llama-3-8b";
  CHECK_THROWS_WITH(predict::choose_predictor(ask), Contains("h200-sdpa-auto-grouped-gqa-expand.yaml:3: ") &&
                                                        Contains("model 'llama-3-8b'") && Contains("--transfer"));
  ask.transfer = true;
  CHECK(predict::choose_predictor(ask).transfer.provenance == std::vector{model::Provenance::transferred_model});
}

TEST_CASE("a scenario's file that does not match is answered by the default, with a note", "[predictor]") {
  predict::PredictorAsk ask = ask_model("qwen2.5-7b");
  ask.coefficients = kHarnessFile;
  ask.coefficients_where = "s.yaml:4:15";
  ask.named_by_scenario = true;
  const auto p = predict::choose_predictor(ask);
  CHECK(p.source == predict::Source::default_predictor);
  REQUIRE(p.notes.size() == 1);
  CHECK_THAT(p.notes[0], StartsWith("s.yaml:4:15: ") && Contains("is fitted for model 'gemma-4-26b-a4b'") &&
                             Contains("not model 'qwen2.5-7b'") && Contains("answered by the default predictor"));
  // The same file for its own model answers.
  ask.model = "gemma-4-26b-a4b";
  CHECK(predict::choose_predictor(ask).source == predict::Source::fitted_file);
}

TEST_CASE("the host side is the stack's rate per launch times the model's own launches", "[predictor][stacks]") {
  const auto p = predict::choose_predictor(ask_model("llama-3-8b"));
  REQUIRE(p.stack == &model::default_stack());
  const model::Coefficients& c = p.transfer.coefficients;
  const double launches =
      model::LaunchModel(p.shape, p.modules, model::tier_from_label(c.tier),
                         model::plan_lora(p.modules, model::default_lora_targets(p.modules), c.lora_rank))
          .per_step_all_experts();
  CHECK(c.launches_per_step == Approx(launches));
  CHECK(c.launches_per_step == Approx(11788).margin(1));  // Llama-3-8B's table (docs/method.md, "Launches")
  CHECK(c.step[model::kHost].selected);
  CHECK(c.step[model::kHost].value == model::default_stack().host_s_per_klaunch);
  CHECK(c.overlap_exponent == model::default_stack().overlap_exponent);
  // The run one-offs: the default's own, fitted on the stack's recorded runs (each one it did not select is the stack's).
  const model::Coefficients file = io::load_coefficients(predict::default_coefficients_path("NVIDIA H200"));
  for (int i = 0; i < model::kRunTerms; ++i)
    CHECK(c.run[i].value == (file.run[i].selected ? file.run[i].value : model::default_stack().run_s[i]));
  // A short micro-batch of this never-measured family is bound by its own launches' host time.
  const auto m = p.step_model();
  const auto sides = m->sides(batch({256}, 256));
  CHECK(sides.host_bound());
  CHECK(sides.host_s == Approx(model::default_stack().host_s_per_klaunch * launches / 1000));
  // Records name their stack by their tier label: transformers + peft's, or a tier of the harness.
  predict::PredictorAsk hf = ask_model("llama-3-8b");
  hf.tier = "hf-peft/sdpa-grouped_mm";
  hf.tier_from_records = true;
  const auto on_hf = predict::choose_predictor(hf);
  CHECK(on_hf.stack == &model::stack_named("transformers-peft"));
  CHECK(on_hf.transfer.provenance == std::vector{model::Provenance::calibrated});  // its own stack and tier
  hf.tier = "sdpa-auto/grouped/gqa-expand";
  const auto on_harness = predict::choose_predictor(hf);
  CHECK(on_harness.stack == &model::stack_named("harness"));
  // The harness's tier: its layers re-planned at the default's per-category rates, and said so.
  CHECK(on_harness.transfer.provenance == std::vector{model::Provenance::transferred_tier});
  hf.stack = "transformers-peft";  // asked explicitly: the records' label does not override it
  CHECK(predict::choose_predictor(hf).stack == &model::default_stack());
  hf.stack = "pytorch-lightning";
  CHECK_THROWS_WITH(predict::choose_predictor(hf), Contains("stack 'pytorch-lightning'") && Contains("transformers-peft, harness"));
}

TEST_CASE("the user's LoRA prices the adapters' work, what trains and the launches", "[predictor][lora]") {
  const auto all = predict::choose_predictor(ask_model("llama-3-8b"));
  predict::PredictorAsk ask = ask_model("llama-3-8b");
  ask.lora_targets = {"q_proj", "v_proj"};
  ask.lora_rank = 8;
  const auto qv = predict::choose_predictor(ask);
  CHECK(qv.lora.rank == 8);
  CHECK(qv.lora.targets == std::vector<std::string>{"q_proj", "v_proj"});
  const auto b = batch({2048}, 2048);
  const auto m_all = all.step_model(), m_qv = qv.step_model();
  // Adapter GEMM work: 2 of 7 targets at half the rank is far less.
  CHECK(m_qv->features().step(b).x[model::kLoraGemm] < 0.2 * m_all->features().step(b).x[model::kLoraGemm]);
  // What trains: fp32 adapters, gradients and AdamW states.
  CHECK(m_qv->features().lora_gib() < 0.2 * m_all->features().lora_gib());
  // Launches: 64 wrapped modules instead of 224, 41.6 launches each (model/launches.cpp).
  CHECK(all.transfer.coefficients.launches_per_step - qv.transfer.coefficients.launches_per_step ==
        Approx((224 - 64) * model::kLaunchTable[model::kLaunchLora].per_unit));
  CHECK(m_qv->step_s(b) < m_all->step_s(b));
  // A record's own adapters re-price the launches too.
  CHECK(all.step_model({8, {"q_proj", "v_proj"}})->step_s(b) == Approx(m_qv->step_s(b)));
  // An unknown target is an input error naming the family's modules.
  ask.lora_targets = {"q_proj", "qkv_proj"};
  ask.lora_where = "--lora-targets";
  CHECK_THROWS_WITH(predict::choose_predictor(ask),
                    Contains("--lora-targets: 'qkv_proj' names no nn.Linear module of llama-3-8b. Violated constraint: "
                             "one of down_proj, gate_proj, k_proj, o_proj, q_proj, up_proj, v_proj"));
}

TEST_CASE("each kind of prediction carries the interval of its own held-out errors", "[predictor][intervals]") {
  // A fitted file with held-out errors (Gemma-4's own) on the default's stack.
  predict::PredictorAsk own = ask_model("gemma-4-26b-a4b");
  own.coefficients = kScenarios + "/coefficients/h200-gemma4-categories.yaml";
  own.stack = "transformers-peft";
  const auto gemma = predict::choose_predictor(own);
  const model::HeldOut& held = gemma.transfer.coefficients.held_out;
  REQUIRE(held.known);
  // Calibrated and device-bound: the file's held-out error (the stack's device-bound error is below it).
  const auto device_bound = batch({4096, 4096}, 4096);
  REQUIRE_FALSE(gemma.step_model()->sides(device_bound).host_bound());
  CHECK(half_width(gemma, device_bound) ==
        Approx(std::max(held.half_width.unpadded, model::default_stack().error.device_bound)));
  CHECK(half_width(gemma, device_bound) < 0.1);  // not the +-25 % of a fit's residual RMS
  // Padded: the padded held-out error.
  CHECK(half_width(gemma, batch({4096, 3000}, 4096)) ==
        Approx(std::max(held.half_width.padded, model::default_stack().error.device_bound)));
  // Host-bound on transformers + peft: the stack's host-bound error (docs/host.md: the host varies by machine).
  const auto host_bound = batch({1024, 1024}, 1024);
  REQUIRE(gemma.step_model()->sides(host_bound).host_bound());
  CHECK(half_width(gemma, host_bound) == Approx(model::default_stack().error.host_bound));
  // Transferred to another model: that kind's measured error, padded or not (model/intervals.hpp), at least the
  // stack's for its side: a host-bound step the stack's host-bound error.
  const auto qwen = predict::choose_predictor(ask_model("qwen2.5-7b"));
  const model::StackError& stack = model::default_stack().error;
  CHECK(half_width(qwen, device_bound) ==
        Approx(std::max(model::held_out_error(model::kModelTransfer).unpadded, stack.device_bound)));
  CHECK(half_width(qwen, batch({4096, 3000}, 4096)) ==
        Approx(std::max(model::held_out_error(model::kModelTransfer).padded, stack.device_bound)));
  const auto short_batch = batch({256}, 256);
  REQUIRE(qwen.step_model()->sides(short_batch).host_bound());
  CHECK(half_width(qwen, short_batch) ==
        Approx(std::max(model::held_out_error(model::kModelTransfer).unpadded, stack.host_bound)));
  // A plan's wall clock: the kind's half-width, not reduced by summing correlated steps.
  const double device = model::default_stack().error.device_bound, host = model::default_stack().error.host_bound;
  CHECK(gemma.wall_clock_half_width(false) == Approx(std::max(held.half_width.unpadded, device)));
  CHECK(gemma.wall_clock_half_width(true) == Approx(std::max(held.half_width.padded, device)));
  // Half the micro-batches host-bound: half of them take the stack's host-bound error.
  CHECK(gemma.wall_clock_half_width(true, 0.5) == Approx(0.5 * host + 0.5 * std::max(held.half_width.padded, device)));
  // Transferred: the kind's error, at least the stack's device-bound one, and the host-bound share of a run takes
  // the stack's host-bound error too: a machine's host speed is no more known for a model never measured.
  // A run's own part is the model transfer's error on whole runs, not on single steps (model/intervals.cpp).
  const double transferred = model::held_out_error(model::kModelTransferRun).padded;
  CHECK(transferred < model::held_out_error(model::kModelTransfer).padded);
  CHECK(qwen.wall_clock_half_width(true) == Approx(std::max(transferred, device)));
  CHECK(qwen.wall_clock_half_width(true, 0.25) == Approx(0.25 * std::max(transferred, host) + 0.75 * std::max(transferred, device)));
  CHECK(qwen.wall_clock_half_width(true, 0.25) > qwen.wall_clock_half_width(true) + 0.05);
  CHECK(qwen.wall_clock_half_width(true, 2.0) == Approx(qwen.wall_clock_half_width(true, 1.0)));  // a share is at most 1
}
