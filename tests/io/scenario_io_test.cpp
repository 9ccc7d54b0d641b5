// Scenario files: strict, every problem at once with file:line:col.
#include "catch.hpp"
#include "io/scenario_io.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"

using stepcast::InputError;
using stepcast::testing::TempFile;
using Catch::Matchers::Contains;

namespace {

const char* kGood = R"(schema_version: 1
name: tiny
predictor:
  width_quadratic: {step_s_per_token: 1.0e-4, step_s_per_token_width: 1.0e-8, peak_gib_fixed: 10, peak_gib_per_token: 1.0e-3}
gpu: {name: test, memory_gib: 80}
corpus:
  histogram:
    seed: 3
    bins: [{length: 100, count: 5}, {length: 300, count: 2}]
baseline: {policy: bucket-to-pair, micro_batch: 2, accumulation: 4, max_length: 256}
run: {optimizer_step_s: 0.5, startup_s: 60, checkpoint_every_steps: 10, checkpoint_save_s: 30}
window_hours: 2
sweep: {policies: [pack, fixed], micro_batches: [1, 2], top: 3}
)";

std::string problems_of(const std::string& text) {
  TempFile f(text, ".yaml");
  try {
    stepcast::io::load_scenario(f.path());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a good scenario loads into the structs", "[planner][scenario_io]") {
  TempFile f(kGood, ".yaml");
  const auto s = stepcast::io::load_scenario(f.path());
  CHECK(s.name == "tiny");
  REQUIRE(s.width_quadratic.has_value());
  CHECK(s.width_quadratic->peak_gib_per_token == 1.0e-3);
  CHECK(s.corpus.histogram.size() == 2);
  CHECK(s.corpus.histogram_seed == 3);
  CHECK(s.baseline.policy == stepcast::planner::Policy::bucket_to_pair);
  CHECK(s.run.accumulation == 4);
  CHECK(s.run.checkpoint_save_s == 30);
  CHECK(s.run.window_hours == 2);
  CHECK(s.sweep.policies == std::vector<stepcast::planner::Policy>{stepcast::planner::Policy::pack,
                                                                   stepcast::planner::Policy::fixed});
  CHECK(s.sweep.top == 3);
}

TEST_CASE("every problem of a bad scenario is reported at once, with positions", "[planner][scenario_io]") {
  const std::string p = problems_of(R"(name: bad
predictor:
  width_quadratic: {step_s_per_token: -1, step_s_per_token_width: 1.0e-8, peak_gib_fixed: 10, peak_gib_per_token: 1.0e-3}
gpu: {memory_gib: 80}
corpus: {file: x.txt, synthetic: {samples: 10, components: [{median_tokens: 100, sigma: 1}]}}
baseline: {policy: pad_to_longest, micro_batch: 0, max_length: 256, bucket: 4}
run: {optimizer_step_s: 0.5, startup_s: 60}
window_hours: 2
windows_hours: 3
)");
  CHECK_THAT(p, Contains("schema_version is missing"));
  CHECK_THAT(p, Contains(":3:39: predictor.width_quadratic.step_s_per_token = -1. Violated constraint: >= 0"));
  CHECK_THAT(p, Contains("corpus: exactly one of 'file', 'synthetic' or 'histogram'"));
  CHECK_THAT(p, Contains(":6:20: baseline.policy = 'pad_to_longest'. Violated constraint: one of fixed, pad-to-longest"));
  CHECK_THAT(p, Contains(":6:49: baseline.micro_batch = 0. Violated constraint: > 0"));
  CHECK_THAT(p, Contains("unknown key 'baseline.bucket'"));
  CHECK_THAT(p, Contains(":9:1: unknown key 'windows_hours'"));
}

TEST_CASE("schema_version must be the one this tool reads", "[planner][scenario_io]") {
  std::string text = kGood;
  text.replace(text.find("schema_version: 1"), 17, "schema_version: 2");
  CHECK_THAT(problems_of(text), Contains(":1:17: schema_version = 2. Violated constraint: 1"));
}

TEST_CASE("a scenario has at most one predictor source, and a model where it has none", "[planner][scenario_io]") {
  std::string text = kGood;
  text.insert(text.find("gpu:"), "coefficients: c.yaml\n");
  CHECK_THAT(problems_of(text), Contains("both 'coefficients' and 'predictor'. Violated constraint: at most one"));
  text = kGood;
  text.replace(text.find("predictor:"), text.find("gpu:") - text.find("predictor:"), "");
  CHECK_THAT(problems_of(text), Contains("no 'model', 'coefficients' or 'predictor'"));
  // A model alone: the GPU's default per-category predictor answers (predict/predictor.hpp).
  text.insert(text.find("name: tiny\n") + 11, "model: gemma-4-26b-a4b\n");
  CHECK(problems_of(text).empty());
}

namespace {
// kGood priced by the default predictor for `model`, with a `lora:` block.
std::string with_lora(const std::string& model, const std::string& lora) {
  std::string text = kGood;
  text.replace(text.find("predictor:"), text.find("gpu:") - text.find("predictor:"), "lora: " + lora + "\n");
  text.insert(text.find("name: tiny\n") + 11, "model: " + model + "\n");
  return text;
}
}  // namespace

TEST_CASE("a scenario's lora block: rank, alpha and targets, each target a module the model has", "[scenario_io][lora]") {
  TempFile f(with_lora("llama-3-8b", "{rank: 8, alpha: 16, targets: [q_proj, v_proj]}"), ".yaml");
  const auto s = stepcast::io::load_scenario(f.path());
  CHECK(s.lora.rank == 8);
  CHECK(s.lora.alpha == 16);
  CHECK(s.lora.targets == std::vector<std::string>{"q_proj", "v_proj"});
  CHECK_THAT(s.lora.targets_where, Contains(f.path() + ":4:"));
  // An unknown target is refused at its own line:col, naming the modules the family has; a bad rank beside it.
  const std::string p = problems_of(with_lora("llama-3-8b", "{rank: 0, targets: [q_proj, qkv_proj]}"));
  CHECK_THAT(p, Contains(":4:35: lora.targets[1]: 'qkv_proj' names no nn.Linear module of llama-3-8b. Violated "
                         "constraint: one of down_proj, gate_proj, k_proj, o_proj, q_proj, up_proj, v_proj"));
  CHECK_THAT(p, Contains("lora.rank = 0"));
  // Phi-3 fuses q, k and v: its own names are what it accepts.
  CHECK(problems_of(with_lora("phi-3.5-mini", "{targets: [qkv_proj, o_proj]}")).empty());
  CHECK_THAT(problems_of(with_lora("phi-3.5-mini", "{}")), Contains("neither rank, targets, dropout, autocast, full, checkpointing, quantize_base nor adapter_dtype"));
  // QLoRA's 4-bit base: its words, refused at the key otherwise, and not beside a full fine-tune.
  TempFile q4(with_lora("llama-3-8b", "{quantize_base: nf4-double-quant}"), ".yaml");
  CHECK(stepcast::io::load_scenario(q4.path()).lora.base_quant == stepcast::model::BaseQuant::nf4_double);
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{quantize_base: int4}")),
             Contains(":4:") && Contains("lora.quantize_base = 'int4'. Violated constraint: one of none, nf4, nf4-double-quant"));
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{full: true, quantize_base: nf4}")),
             Contains("lora.quantize_base with lora.full"));
  // bf16 adapters: the two words, refused at the key otherwise, and not beside a full fine-tune.
  TempFile bf16(with_lora("llama-3-8b", "{adapter_dtype: bfloat16}"), ".yaml");
  CHECK(stepcast::io::load_scenario(bf16.path()).lora.adapter_dtype == stepcast::model::AdapterDtype::bfloat16);
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{adapter_dtype: bf16}")),
             Contains(":4:") && Contains("lora.adapter_dtype = 'bf16'") && Contains("float32, bfloat16"));
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{full: true, adapter_dtype: bfloat16}")),
             Contains("lora.adapter_dtype with lora.full"));
  // lora: {full: true} plans a full fine-tune: no adapter key beside it.
  TempFile full(with_lora("llama-3-8b", "{full: true}"), ".yaml");
  CHECK(stepcast::io::load_scenario(full.path()).lora.full);
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{full: true, rank: 8}")),
             Contains("lora.rank with lora.full. Violated constraint: a full fine-tune has no adapters"));
  // peft's lora_dropout: absent is -1 (the predictor's 0.05); 0 is nn.Identity; 1 would drop everything.
  CHECK(s.lora.dropout < 0);
  TempFile g(with_lora("llama-3-8b", "{dropout: 0.0}"), ".yaml");
  CHECK(stepcast::io::load_scenario(g.path()).lora.dropout == 0.0);
  CHECK_FALSE(stepcast::io::load_scenario(g.path()).lora.autocast);
  TempFile m(with_lora("llama-3-8b", "{autocast: true}"), ".yaml");
  CHECK(stepcast::io::load_scenario(m.path()).lora.autocast);  // HF Trainer's bf16=True
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{autocast: sometimes}")), Contains("autocast"));
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{rank: 8, dropout: 1.0}")), Contains("dropout = 1.0"));
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{rank: 8, target: [q_proj]}")), Contains("unknown key 'lora.target'"));
  // Gradient checkpointing off, and a full fine-tune under autocast (fp32 master weights when dtype is float32).
  TempFile off(with_lora("llama-3-8b", "{full: true, autocast: true, checkpointing: false}"), ".yaml");
  const auto o = stepcast::io::load_scenario(off.path());
  CHECK(o.lora.full);
  CHECK(o.lora.autocast);
  CHECK_FALSE(o.lora.checkpointing);
  CHECK(s.lora.checkpointing);
  CHECK_THAT(problems_of(with_lora("llama-3-8b", "{checkpointing: 0.5}")), Contains("checkpointing"));
}

TEST_CASE("an unknown model with coefficients is refused at the scenario's model line", "[scenario_io][model]") {
  std::string text = kGood;
  text.replace(text.find("predictor:"), text.find("gpu:") - text.find("predictor:"),
               "coefficients: " STEPCAST_SCENARIOS "/coefficients/h200-hf-peft-sdpa-grouped_mm.yaml\n");
  text.insert(text.find("name: tiny\n") + 11, "model: no-such-model\n");
  TempFile f(text, ".yaml");
  try {
    stepcast::io::load_scenario(f.path());
    FAIL("an unknown model was accepted");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Contains(f.path() + ":3:8: model 'no-such-model': no such file or directory"));
  }
  text.replace(text.find("no-such-model"), 13, "gemma-4-26b-a4b");
  CHECK(problems_of(text).empty());
}

TEST_CASE("with a predictor the model is only a label", "[scenario_io][model]") {
  std::string text = kGood;
  text.insert(text.find("name: tiny\n") + 11, "model: a-label-not-a-file\n");
  CHECK(problems_of(text).empty());
}

TEST_CASE("synthetic corpora are checked item by item", "[planner][scenario_io]") {
  std::string text = kGood;
  const auto a = text.find("  histogram:");
  const auto b = text.find("baseline:");
  text.replace(a, b - a, "  synthetic: {samples: 0, components: [{median_tokens: 100, sigma: 0, mu: 1}]}\n");
  const std::string p = problems_of(text);
  CHECK_THAT(p, Contains("corpus.synthetic.samples = 0"));
  CHECK_THAT(p, Contains("corpus.synthetic.components[0].sigma = 0"));
  CHECK_THAT(p, Contains("unknown key 'corpus.synthetic.components[0].mu'"));
}

TEST_CASE("pad_to_multiple_of and sweep.pad_to_multiples load, the optimizer step is unset unless given",
          "[planner][scenario_io][pad]") {
  std::string text = kGood;
  text.replace(text.find("max_length: 256}"), 16, "max_length: 256, pad_to_multiple_of: 64}");
  text.replace(text.find("top: 3}"), 7, "top: 3, pad_to_multiples: [1, 8, 64, 256]}");
  text.replace(text.find("optimizer_step_s: 0.5, "), 23, "");
  TempFile f(text, ".yaml");
  const auto s = stepcast::io::load_scenario(f.path());
  CHECK(s.baseline.pad_to_multiple_of == 64);
  CHECK(s.sweep.pad_to_multiples == std::vector<int64_t>{1, 8, 64, 256});
  CHECK_FALSE(s.run.optimizer_step_s.has_value());
  CHECK(s.optimizer_step_source.empty());
  TempFile g(kGood, ".yaml");
  const auto given = stepcast::io::load_scenario(g.path());
  CHECK(given.run.optimizer_step_s == 0.5);
  CHECK(given.optimizer_step_source == "scenario run.optimizer_step_s");
  CHECK(given.baseline.pad_to_multiple_of == 1);  // default: off
}

TEST_CASE("bad pad multiples are reported with positions", "[planner][scenario_io][pad]") {
  std::string text = kGood;
  text.replace(text.find("max_length: 256}"), 16, "max_length: 256, pad_to_multiple_of: 0}");
  text.replace(text.find("top: 3}"), 7, "top: 3, pad_to_multiples: [1, 0, x, 100000]}");
  text.replace(text.find("optimizer_step_s: 0.5"), 21, "optimizer_step_s: -1");
  const std::string p = problems_of(text);
  CHECK_THAT(p, Contains(":10:106: baseline.pad_to_multiple_of = 0. Violated constraint: > 0"));
  CHECK_THAT(p, Contains(":13:87: sweep.pad_to_multiples[1] = 0. Violated constraint: >= 1"));
  CHECK_THAT(p, Contains(":13:90: sweep.pad_to_multiples[2] = 'x'. Violated constraint: an integer"));
  CHECK_THAT(p, Contains(":11:25: run.optimizer_step_s = -1. Violated constraint: >= 0"));
  std::string big = kGood;
  big.replace(big.find("max_length: 256}"), 16, "max_length: 256, pad_to_multiple_of: 65537}");
  big.replace(big.find("top: 3}"), 7, "top: 3, pad_to_multiples: [100000]}");
  const std::string q = problems_of(big);
  CHECK_THAT(q, Contains("baseline.pad_to_multiple_of = 65537. Violated constraint: <= 65536"));
  CHECK_THAT(q, Contains("sweep.pad_to_multiples[0] = 100000. Violated constraint: <= 65536"));
}

namespace {

std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("run.cold_start marks a fresh machine and leaves start-up alone", "[scenario_io][cold_start]") {
  TempFile warm(kGood, ".yaml");
  TempFile cold(with(kGood, "startup_s: 60", "startup_s: 60, cold_start: true"), ".yaml");
  TempFile off(with(kGood, "startup_s: 60", "startup_s: 60, cold_start: false"), ".yaml");
  const auto w = stepcast::io::load_scenario(warm.path());
  const auto c = stepcast::io::load_scenario(cold.path());
  CHECK_FALSE(w.cold_start);
  CHECK(w.run.startup_s == 60);
  CHECK_FALSE(stepcast::io::load_scenario(off.path()).cold_start);
  CHECK(c.cold_start);
  CHECK(c.run.startup_s == 60);  // the compiles are charged micro-batch by micro-batch (planner/timeline.hpp)
  CHECK_FALSE(c.run.cold_cache.has_value());  // set by the plan, which knows the model's head sizes
  CHECK_THAT(problems_of(with(kGood, "startup_s: 60", "startup_s: 60, cold_start: yes please")),
             Contains("run.cold_start"));
}

TEST_CASE("corpus.length_field names a file's field, stdin stays '-'", "[scenario_io][corpus]") {
  const TempFile corpus("{\"n_tokens\": 5}\n", ".jsonl");  // the scenario checks that its corpus file exists
  TempFile jsonl(with(kGood, R"(  histogram:
    seed: 3
    bins: [{length: 100, count: 5}, {length: 300, count: 2}])",
                      "  file: " + corpus.path() + "\n  length_field: n_tokens"),
                 ".yaml");
  const auto s = stepcast::io::load_scenario(jsonl.path());
  CHECK(s.corpus.options.length_field == "n_tokens");
  CHECK(s.corpus.file == corpus.path());
  TempFile piped(with(kGood, R"(  histogram:
    seed: 3
    bins: [{length: 100, count: 5}, {length: 300, count: 2}])",
                      "  file: '-'"),
                 ".yaml");
  CHECK(stepcast::io::load_scenario(piped.path()).corpus.file == "-");
  CHECK_THAT(problems_of(with(kGood, "corpus:\n", "corpus:\n  length_field: n\n")),
             Contains(":7:17: corpus.length_field without corpus.file"));
}

TEST_CASE("parallel: gpus, strategy and sampler load, bad values are placed", "[scenario_io][parallel]") {
  {
    TempFile f(std::string(kGood) + "parallel: {gpus: 4, strategy: fsdp, sampler: length-grouped}\n", ".yaml");
    const auto s = stepcast::io::load_scenario(f.path());
    REQUIRE(s.parallel.has_value());
    CHECK(s.parallel->gpus == 4);
    CHECK(s.parallel->strategy == stepcast::model::ParallelStrategy::fsdp);
    CHECK(s.parallel->sampler == stepcast::planner::Sampler::length_grouped);
  }
  {
    TempFile f(std::string(kGood) + "parallel: {gpus: 2}\n", ".yaml");
    const auto s = stepcast::io::load_scenario(f.path());
    CHECK(s.parallel->strategy == stepcast::model::ParallelStrategy::ddp);  // the defaults
    CHECK(s.parallel->sampler == stepcast::planner::Sampler::distributed);
  }
  TempFile none(kGood, ".yaml");
  CHECK_FALSE(stepcast::io::load_scenario(none.path()).parallel.has_value());
  const std::string bad = problems_of(std::string(kGood) + "parallel: {gpus: 0, strategy: zero3, ranks: 2}\n");
  CHECK_THAT(bad, Contains(":14:") && Contains("gpus") && Contains("zero3") && Contains("ranks"));
}
