// `stepcast validate --run` through the real executable, and coefficient files with and without the host
// and run sections. The coefficients are chosen so that every prediction is a hand sum: a device side of
// fixed_s = 0.3 s, a host side of 0.4 s (1,000 launches x 0.4 s per 1,000), overlap p = 2, so every step is
// sqrt(0.3^2 + 0.4^2) = 0.5 s and host-bound; first-seen 1.0 s, run start 2.0 s, optimizer step 0.25 s.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "calibrate/records.hpp"
#include "calibrate/run_records.hpp"
#include "catch.hpp"
#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "cli_runner.hpp"
#include "model/coefficients.hpp"
#include "model/errors.hpp"
#include "model/step_model.hpp"
#include "temp_file.hpp"

namespace sc = stepcast::calibrate;
namespace sm = stepcast::model;
using stepcast::testing::run_cli;
using stepcast::testing::TempFile;

namespace {

sm::Coefficients hand_coefficients() {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "sdpa-auto/grouped/gqa-expand";  // cuDNN on the sliding layers: one graph a new shape
  c.points = 10;
  c.tool_version = "test";
  c.date = "2026-12-02T00:00:00Z";
  c.step[sm::kFixed] = {0.3, 0.01, true, "hand"};
  c.step[sm::kHost] = {0.4, 0.02, true, "hand"};
  c.launches_per_step = 1000;
  c.overlap_exponent = 2;
  c.run[sm::kFirstSeen] = {1.0, 0.1, true, "hand"};
  c.run[sm::kRunStart] = {2.0, 0.2, true, "hand"};
  c.run[sm::kOptimizerStep] = {0.25, 0.01, true, "hand"};
  return c;
}

// The corpus both runs share: micro-batch 2, accumulation 2, widths rounded up to 128.
const std::vector<int32_t> kCorpus = {100, 400, 110, 300, 200, 410, 210, 310};

struct Batch {
  std::vector<int64_t> rows;
  int64_t width;
  double step_s;
  double optimizer_s;  // < 0: none
};

// A run's micro-batches as JSON lines; elapsed_s is the running sum of step_s + optimizer_s.
std::string run_lines(const std::string& id, const std::string& policy, const std::vector<Batch>& batches) {
  std::string text;
  double elapsed = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const Batch& b = batches[i];
    sc::Record r;
    r.model = "gemma-4-26b-a4b";
    r.gpu = "NVIDIA H200";
    r.tier = "sdpa-auto/grouped/gqa-expand";  // cuDNN on the sliding layers: one graph a new shape
    r.rows = b.rows;
    r.width = b.width;
    r.step_s = b.step_s;
    sc::RunFields f;
    f.id = id;
    f.policy = policy;
    f.micro_batch = 2;
    f.accumulation = 2;
    f.max_length = 4096;
    f.pad_to_multiple_of = 128;
    f.seed = 7;
    f.index = static_cast<int64_t>(i);
    f.optimizer_step = f.index / 2;
    elapsed += b.step_s;
    if (b.optimizer_s >= 0) {
      f.optimizer_s = b.optimizer_s;
      elapsed += b.optimizer_s;
    }
    f.elapsed_s = elapsed;
    if (i == 0) f.corpus_lengths = kCorpus;
    r.extra["probe"] = "run";
    r.extra["run"] = sc::run_json(f);
    text += sc::to_json(r).dump() + "\n";
  }
  return text;
}

// bucket-to-pair: sorted pairs (100,110) (200,210) (300,310) (400,410) -> 4 shapes, shuffled.
// Measured 3.3 + (1.5 + 0.2) + 1.4 + (1.4 + 0.2) = 8.0 s.
std::string sorted_run() {
  return run_lines("c/sorted", "bucket-to-pair",
                   {{{300, 310}, 384, 3.3, -1}, {{100, 110}, 128, 1.5, 0.2}, {{400, 410}, 512, 1.4, -1}, {{200, 210}, 256, 1.4, 0.2}});
}

// pad-to-longest in corpus order: (100,400) (110,300) (200,410) (210,310) -> 2 x 512 and 2 x 384, 2 shapes.
// Measured 3.4 + (1.5 + 0.25) + 0.5 + (0.5 + 0.25) = 6.4 s.
std::string longest_run() {
  return run_lines("c/longest", "pad-to-longest",
                   {{{100, 400}, 512, 3.4, -1}, {{110, 300}, 384, 1.5, 0.25}, {{200, 410}, 512, 0.5, -1}, {{210, 310}, 384, 0.5, 0.25}});
}

struct Files {
  TempFile coefficients{stepcast::io::coefficients_yaml(hand_coefficients()), ".yaml"};
  TempFile runs{sorted_run() + longest_run(), ".jsonl"};
  std::string args(const std::string& more = "") const {
    return "validate --run " + runs.path() + " --coefficients " + coefficients.path() + (more.empty() ? "" : " " + more);
  }
};

bool contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

}  // namespace

TEST_CASE("validate --run: the predicted totals and saving are the hand sums", "[validate_run]") {
  const Files files;
  const auto r = run_cli(files.args("--format json"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["runs"].size() == 2);
  const auto& sorted = j["runs"][0];
  const auto& longest = j["runs"][1];
  CHECK(sorted["id"] == "c/sorted");
  CHECK(longest["id"] == "c/longest");
  CHECK(sorted["micro_batches"] == 4);
  CHECK(sorted["distinct_shapes"] == 4);
  CHECK(longest["distinct_shapes"] == 2);
  CHECK(sorted["host_bound_micro_batches"] == 4);  // host 0.4 s > device 0.3 s
  CHECK(sorted["measured_s"].get<double>() == Approx(8.0).epsilon(1e-12));
  CHECK(longest["measured_s"].get<double>() == Approx(6.4).epsilon(1e-12));
  // sorted: 4 steps x 0.5 + 4 shapes x 1.0 + start 2.0 + 2 windows x 0.25 = 8.5 s.
  CHECK(sorted["predicted_s"].get<double>() == Approx(8.5).epsilon(1e-12));
  CHECK(sorted["predicted_first_seen_s"].get<double>() == Approx(4.0).epsilon(1e-12));
  CHECK(sorted["predicted_run_start_s"].get<double>() == Approx(2.0).epsilon(1e-12));
  CHECK(sorted["predicted_optimizer_s"].get<double>() == Approx(0.5).epsilon(1e-12));
  CHECK(sorted["error_rel"].get<double>() == Approx(8.5 / 8.0 - 1).epsilon(1e-12));
  // longest: 4 x 0.5 + 2 x 1.0 + 2.0 + 2 x 0.25 = 6.5 s.
  CHECK(longest["predicted_s"].get<double>() == Approx(6.5).epsilon(1e-12));
  CHECK(longest["error_rel"].get<double>() == Approx(6.5 / 6.4 - 1).epsilon(1e-12));
  // Per micro-batch (step + its optimizer step), sorted: predicted 3.5, 1.75, 1.5, 1.75 against measured
  // 3.3, 1.7, 1.4, 1.6; the largest miss is micro-batch 3 (1.75 / 1.6 - 1 = 9.375 %).
  const double sorted_mape = (3.5 / 3.3 - 1 + 1.75 / 1.7 - 1 + 1.5 / 1.4 - 1 + 1.75 / 1.6 - 1) / 4;
  CHECK(sorted["micro_batch_mape"].get<double>() == Approx(sorted_mape).epsilon(1e-9));
  CHECK(sorted["micro_batch_max_abs_error"].get<double>() == Approx(0.09375).epsilon(1e-9));
  CHECK(sorted["micro_batch_max_index"] == 3);
  // longest: only micro-batch 0 misses (3.5 against 3.4).
  CHECK(longest["micro_batch_mape"].get<double>() == Approx((3.5 / 3.4 - 1) / 4).epsilon(1e-9));
  CHECK(longest["micro_batch_max_index"] == 0);
  // The planner's own schedules of the corpus are the recorded micro-batches, so they cost the same.
  CHECK(sorted["planned_batches_match"] == true);
  CHECK(longest["planned_batches_match"] == true);
  CHECK(sorted["planned_s"].get<double>() == Approx(8.5).epsilon(1e-12));
  CHECK(longest["planned_s"].get<double>() == Approx(6.5).epsilon(1e-12));
  // The saving of pad-to-longest over the sorted pairs: measured 1 - 6.4 / 8.0 = 20 %, predicted 1 - 6.5 / 8.5.
  REQUIRE(j["savings"].size() == 1);
  const auto& s = j["savings"][0];
  CHECK(s["baseline"] == "c/sorted");
  CHECK(s["other"] == "c/longest");
  CHECK(s["measured"].get<double>() == Approx(0.2).epsilon(1e-12));
  CHECK(s["predicted"].get<double>() == Approx(1 - 6.5 / 8.5).epsilon(1e-12));
  CHECK(s["error_pp"].get<double>() == Approx((1 - 6.5 / 8.5 - 0.2) * 100).epsilon(1e-9));  // +3.53 pp
  CHECK(s["planned"].get<double>() == Approx(1 - 6.5 / 8.5).epsilon(1e-12));
}

TEST_CASE("validate --run: the text report", "[validate_run]") {
  const Files files;
  const auto r = run_cli(files.args());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "c/longest (pad-to-longest, 4 micro-batches, 2 shapes, 4 host-bound)"));
  CHECK(contains(r.out, "total: measured 6.40 s, predicted 6.50 s (+1.6 %): first-seen 2.00 s, start 2.00 s, optimizer 0.50 s"));
  CHECK(contains(r.out, "total: measured 8.00 s, predicted 8.50 s"));
  CHECK(contains(r.out, "saving of c/longest over c/sorted: measured 20.0 %, predicted 23.5 % (+3.5 pp), planner 23.5 %"));
  CHECK(contains(r.out, "its micro-batches are the recorded ones"));
}

TEST_CASE("validate --run: exit 1 when a bar is not met, 0 when it is", "[validate_run]") {
  const Files files;
  struct Case {
    std::string flags;
    int exit_code;
    std::string fragment;  // in stderr when it fails
  };
  auto c = GENERATE(values<Case>({
      {"--max-total-error 0.05", 1, "c/sorted: total off by 6.2"},  // 8.5 / 8.0: +6.25 %
      {"--max-total-error 0.07", 0, ""},
      {"--max-total-error 0.015", 1, "c/longest: total off by 1.6"},  // 6.5 / 6.4: +1.5625 %
      {"--max-saving-error-pp 3", 1, "off by 3.5 pp"},
      {"--max-saving-error-pp 4", 0, ""},
      {"--max-total-error 0.07 --max-saving-error-pp 4 --format json", 0, ""},
  }));
  INFO(c.flags);
  const auto r = run_cli(files.args(c.flags));
  INFO(r.err);
  CHECK(r.exit_code == c.exit_code);
  if (!c.fragment.empty()) CHECK(contains(r.err, c.fragment));
  CHECK(contains(r.out, "c/sorted"));  // the report is printed either way
}

TEST_CASE("validate --run: bad input exits 2 with a clear message", "[validate_run]") {
  const Files files;
  SECTION("no --coefficients: the default predictor carries itself to the runs' tier, and says so") {
    const auto r = run_cli("validate --run " + files.runs.path());
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "transferred tier 'hf-peft/sdpa-grouped_mm' -> 'sdpa-auto/grouped/gqa-expand'"));
  }
  SECTION("a coefficient file that does not exist") {
    const auto r = run_cli("validate --run " + files.runs.path() + " --coefficients /nonexistent/c.yaml");
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "/nonexistent/c.yaml"));
  }
  SECTION("a run with a gap in its indices: file:line") {
    std::string text = longest_run();
    const auto third = text.find("\"index\":2");
    REQUIRE(third != std::string::npos);
    text.replace(third, 9, "\"index\":5");
    const TempFile bad(text, ".jsonl");
    const auto r = run_cli("validate --run " + bad.path() + " --coefficients " + files.coefficients.path());
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, bad.path() + ":3: run.index = 5"));
  }
  SECTION("a line that is not JSON: file:line") {
    const TempFile bad(longest_run() + "{\"model\": \n", ".jsonl");
    const auto r = run_cli("validate --run " + bad.path() + " --coefficients " + files.coefficients.path());
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, bad.path() + ":5"));
  }
  SECTION("a file without recorded runs") {
    const TempFile steady(
        R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "t", "rows": [512], "width": 512, "step_s": 0.4})"
        "\n",
        ".jsonl");
    const auto r = run_cli("validate --run " + steady.path() + " --coefficients " + files.coefficients.path());
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "no recorded run"));
  }
}

TEST_CASE("coefficient files keep the host and run sections through a round trip", "[coefficients]") {
  const sm::Coefficients c = hand_coefficients();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("stepcast_round_trip_" + std::to_string(::getpid()) + ".yaml")).string();
  stepcast::io::save_coefficients(path, c);
  const sm::Coefficients back = stepcast::io::load_coefficients(path);
  std::filesystem::remove(path);
  CHECK(back.launches_per_step == 1000);
  CHECK(back.overlap_exponent == 2);
  for (int j = 0; j < sm::kStepTerms; ++j) {
    INFO(sm::step_term_names()[j]);
    CHECK(back.step[j].selected == c.step[j].selected);
    CHECK(back.step[j].value == c.step[j].value);
    CHECK(back.step[j].std_error == c.step[j].std_error);
  }
  for (int j = 0; j < sm::kRunTerms; ++j) {
    INFO(sm::run_term_names()[j]);
    CHECK(back.run[j].selected);
    CHECK(back.run[j].value == c.run[j].value);
    CHECK(back.run[j].std_error == c.run[j].std_error);
    CHECK(back.run[j].reason == "hand");
  }
  const auto j = stepcast::io::coefficients_json(c);
  CHECK(j["host"]["launches_per_step"] == 1000);
  CHECK(j["host"]["overlap_exponent"] == 2);
  CHECK(j["step"]["host_s_per_klaunch"]["value"] == 0.4);
  CHECK(j["run"]["run_start_s"]["value"] == 2.0);
  // The model built from the file predicts what the hand numbers say.
  const sm::StepModel m(stepcast::io::load_model(back.model), back);
  sm::MicroBatch b;
  b.rows = {128};
  b.width = 128;
  CHECK(m.step_s(b) == Approx(0.5).epsilon(1e-12));
  CHECK(m.first_seen_s(b) == 1.0);
  CHECK(m.run_start_s() == 2.0);
  CHECK(m.optimizer_step_s() == 0.25);
}

TEST_CASE("a coefficient file from before the host and run terms still loads, with them off", "[coefficients]") {
  // A shipped file written before the host and run terms existed, and a minimal hand-written one.
  const std::string shipped = std::string(STEPCAST_SCENARIOS) + "/coefficients/seed-sm120-hf-sdpa-efficient-sm80-loop.yaml";
  const std::string minimal =
      "model: gemma-4-26b-a4b\ngpu: NVIDIA H200\ntier: hf-sdpa-efficient/loop\npoints: 3\ntool_version: old\n"
      "date: 2026-11-01T00:00:00Z\nstep:\n"
      "  fixed_s: {value: 0.3, std_error: 0, selected: true}\n"
      "  gemm_s_per_tflop: {value: 0, std_error: 0, selected: false}\n"
      "  attention_s_per_tflop: {value: 0, std_error: 0, selected: false}\n"
      "  attention_math_s_per_tflop: {value: 0, std_error: 0, selected: false}\n"
      "  mask_path_s_per_tflop: {value: 0, std_error: 0, selected: false}\n"
      "  expert_stream_s_per_gb: {value: 0, std_error: 0, selected: false}\n"
      "memory:\n"
      "  fixed_gib: {value: 1, std_error: 0, selected: true}\n"
      "  token_kib: {value: 0, std_error: 0, selected: false}\n"
      "  mask_bytes_per_element: {value: 0, std_error: 0, selected: false}\n"
      "  score_bytes_per_element: {value: 0, std_error: 0, selected: false}\n";
  const TempFile file(minimal, ".yaml");
  for (const std::string& path : {shipped, file.path()}) {
    INFO(path);
    const sm::Coefficients c = stepcast::io::load_coefficients(path);
    CHECK_FALSE(c.step[sm::kHost].selected);
    CHECK(c.step[sm::kHost].reason == "not selected: absent from this file");
    CHECK(c.launches_per_step == 0);
    CHECK(c.overlap_exponent == 4);  // the default
    for (int j = 0; j < sm::kRunTerms; ++j) {
      CHECK_FALSE(c.run[j].selected);
      CHECK(c.run[j].value == 0);
    }
  }
  const sm::Coefficients c = stepcast::io::load_coefficients(file.path());
  const sm::StepModel m(stepcast::io::load_model(c.model), c);
  sm::MicroBatch b;
  b.rows = {128};
  b.width = 128;
  CHECK(m.step_s(b) == Approx(0.3).epsilon(1e-12));  // the device side alone
  CHECK(m.run_start_s() == 0.0);
  CHECK(m.first_seen_s(b) == 0.0);
  CHECK(m.optimizer_step_s() == 0.0);
}

TEST_CASE("the host section is checked like every other", "[coefficients]") {
  std::string text = stepcast::io::coefficients_yaml(hand_coefficients());
  SECTION("an unknown key") {
    text.replace(text.find("overlap_exponent: 2"), 19, "overlap_exponent: 2\n  launches: 7");
  }
  SECTION("an overlap exponent below 1") {
    text.replace(text.find("overlap_exponent: 2"), 19, "overlap_exponent: 0.5");
  }
  const TempFile file(text, ".yaml");
  INFO(text);
  try {
    stepcast::io::load_coefficients(file.path());
    FAIL("no InputError");
  } catch (const stepcast::InputError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).rfind(file.path() + ":", 0) == 0);
  }
}

TEST_CASE("validate --run: a JIT-labelled micro-batch and a run that ends mid-window", "[validate_run]") {
  // Three micro-batches, accumulation 2: windows {0, 1} and {2}; the last one closes its window early.
  // Predicted: 3 x 0.5 + 2 shapes x 1.0 + 2.0 + 2 x 0.25 = 6.0 s. Micro-batch 0 compiled kernels into a cold
  // driver cache and took 8.4 s where 3.5 s is predicted: 4.9 s over.
  std::string text = run_lines("jit", "pad-to-longest",
                               {{{100, 400}, 512, 8.4, -1}, {{110, 300}, 384, 1.5, 0.25}, {{200, 410}, 512, 0.5, 0.25}});
  const std::string first_end = "\"step_s\":8.4";
  const auto at = text.find(first_end);
  REQUIRE(at != std::string::npos);
  text.insert(at, "\"jit_cache_files_added\":12,");
  const TempFile runs(text, ".jsonl");
  const TempFile coefficients(stepcast::io::coefficients_yaml(hand_coefficients()), ".yaml");
  const auto r = run_cli("validate --run " + runs.path() + " --coefficients " + coefficients.path() + " --format json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out)["runs"][0];
  CHECK(j["predicted_s"].get<double>() == Approx(6.0).epsilon(1e-12));
  CHECK(j["predicted_optimizer_s"].get<double>() == Approx(0.5).epsilon(1e-12));
  CHECK(j["measured_s"].get<double>() == Approx(8.4 + 1.75 + 0.75).epsilon(1e-12));
  CHECK(j["jit_micro_batches"] == 1);
  CHECK(j["jit_excess_s"].get<double>() == Approx(4.9).epsilon(1e-9));
  CHECK(j["micro_batch_max_index"] == 0);
  const auto text_out = run_cli("validate --run " + runs.path() + " --coefficients " + coefficients.path());
  CHECK(contains(text_out.out, "cold kernel cache: 1 micro-batch(es) JIT-compiled kernels, 4.90 s over their prediction"));
}

namespace {

// Steady records simulated from `m` (0.2 % noise) at full rows, with the launch count each one carries.
std::string steady_lines(const sm::StepModel& m, const std::vector<int64_t>& widths, unsigned seed) {
  std::string text;
  int k = 0;
  for (int64_t w : widths)
    for (int64_t rows : {1, 2, 4, 8}) {
      sc::Record r;
      r.model = "gemma-4-26b-a4b";
      r.gpu = "NVIDIA H200";
      r.tier = "sdpa-auto/grouped/gqa-expand";
      r.rows.assign(static_cast<size_t>(rows), w);
      r.width = w;
      const double noise = 0.002 * (((seed + static_cast<unsigned>(k++)) % 5) - 2.0) / 2.0;  // -0.2 % .. +0.2 %
      r.step_s = m.step_s(sc::to_batch(r)) * (1.0 + noise);
      r.extra["launches_per_step"] = m.coefficients().launches_per_step;
      text += sc::to_json(r).dump() + "\n";
    }
  return text;
}

}  // namespace

TEST_CASE("calibrate over two files, then validate --run with what it wrote", "[validate_run][calibrate]") {
  // Truth: the H200-like host floor of host_term_test (0.02 s per 1,000 launches x 25,000) with p = 3, and run
  // costs first-seen 1.0 s, start 3.0 s, optimizer 0.2 s.
  sm::Coefficients truth;
  truth.model = "gemma-4-26b-a4b";
  truth.gpu = "NVIDIA H200";
  truth.tier = "sdpa-auto/grouped/gqa-expand";  // cuDNN on the sliding layers: one graph a new shape
  truth.step[sm::kGemm] = {0.0045, 0, true, ""};
  truth.step[sm::kAttention] = {0.009, 0, true, ""};
  truth.step[sm::kHost] = {0.02, 0, true, ""};
  truth.launches_per_step = 25000;
  truth.overlap_exponent = 3;
  const sm::StepModel m(stepcast::io::load_model("gemma-4-26b-a4b"), truth);
  // A run of short micro-batches (host-bound), accumulation 2, as the truth's cost rule charges it.
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> shapes = {
      {{200, 256}, 256}, {{500, 300}, 512}, {{256, 100}, 256}, {{900}, 1024}, {{512, 512}, 512}, {{1000, 700}, 1024}};
  // First-seen cost per cuDNN graph: 2 x 512 unpadded (index 4) after 2 x 512 padded (index 1) is no new shape
  // but builds a new graph (is_causal, not a mask), and pays.
  std::vector<Batch> batches;
  std::vector<std::tuple<size_t, int64_t, uint32_t>> seen;
  int host_bound = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    sm::MicroBatch b;
    b.rows = shapes[i].first;
    b.width = shapes[i].second;
    REQUIRE(std::popcount(m.first_seen_graphs(b)) == 1);
    const std::tuple<size_t, int64_t, uint32_t> key{b.rows.size(), b.width, m.first_seen_graphs(b)};
    const bool first = std::find(seen.begin(), seen.end(), key) == seen.end();
    if (first) seen.push_back(key);
    host_bound += m.sides(b).host_bound() ? 1 : 0;
    const double step = m.step_s(b) + (first ? 1.0 : 0.0) + (i == 0 ? 3.0 : 0.0);
    batches.push_back({b.rows, b.width, step, i % 2 == 1 ? 0.2 : -1.0});
  }
  std::string run = run_lines("h/longest", "pad-to-longest", batches);
  // run_lines marks no micro-batch first-seen: mark the four new shapes (indices 0, 1, 3, 5).
  size_t line_start = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const size_t end = run.find('\n', line_start);
    if (i == 0 || i == 1 || i == 3 || i == 5) {
      const size_t flag = run.find("\"first_seen\":false", line_start);
      REQUIRE(flag < end);
      run.replace(flag, 18, "\"first_seen\":true ");
    }
    line_start = run.find('\n', line_start) + 1;
  }
  const TempFile small(steady_lines(m, {128, 256, 512, 1024}, 1), ".jsonl");
  const TempFile large(steady_lines(m, {2048, 4096, 8192}, 2) + run, ".jsonl");
  const std::string out =
      (std::filesystem::temp_directory_path() / ("stepcast_two_files_" + std::to_string(::getpid()) + ".yaml")).string();
  std::filesystem::remove(out);
  auto r = run_cli("calibrate --measurements " + small.path() + " " + large.path() + " --prior none --out " + out);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "28 step points"));  // 16 + 12 steady records; the run's 6 are not steady steps
  CHECK(contains(r.out, small.path() + ":16  measured"));
  CHECK(contains(r.out, large.path() + ":12  measured"));
  CHECK_FALSE(contains(r.out, large.path() + ":13  measured"));  // the run's first micro-batch
  CHECK(contains(r.out, "host side: 25000 launches per step, overlap exponent p = 3.0"));
  const sm::Coefficients fitted = stepcast::io::load_coefficients(out);
  CHECK(fitted.step[sm::kHost].value == Approx(0.02).epsilon(0.03));
  CHECK(fitted.run[sm::kFirstSeen].value == Approx(1.0).margin(0.02));
  CHECK(fitted.run[sm::kRunStart].value == Approx(3.0).margin(0.02));
  CHECK(fitted.run[sm::kOptimizerStep].value == Approx(0.2).epsilon(1e-9));
  // The calibration predicts the run it was given within 1 % (its steady part is within the 0.2 % noise).
  r = run_cli("validate --run " + large.path() + " --coefficients " + out + " --max-total-error 0.01 --format json");
  std::filesystem::remove(out);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out)["runs"][0];
  CHECK(j["distinct_shapes"] == 4);
  CHECK(host_bound >= 5);  // short micro-batches: the host bounds most
  CHECK(j["host_bound_micro_batches"] == host_bound);
  CHECK(std::abs(j["error_rel"].get<double>()) < 0.01);
  // Each run's 90 % wall-clock interval and whether the measurement lies inside it.
  CHECK(j["wall_clock_half_width"].get<double>() > 0);  // this fit's own residual error: a synthetic, near-exact run
  CHECK(j["inside_interval"] == true);
}

TEST_CASE("calibrate over two files: a record of another tier in the second is named by file:line", "[calibrate]") {
  const std::string good =
      R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "hf-sdpa-efficient/loop", "rows": [512], "width": 512, "step_s": 0.4})"
      "\n";
  std::string other = good;
  other.replace(other.find("hf-sdpa-efficient/loop"), 22, "sdpa-auto/grouped");
  const TempFile a(good + good, ".jsonl");
  const TempFile b(good + other, ".jsonl");
  const auto r = run_cli("calibrate --measurements " + a.path() + " " + b.path() + " --prior none --format json");
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, b.path() + ":2: tier = 'sdpa-auto/grouped'"));
}

TEST_CASE("validate --run: a bar that is not a positive number exits 2", "[validate_run]") {
  const Files files;
  for (const char* flag : {"--max-total-error -1", "--max-saving-error-pp 0", "--max-total-error x"}) {
    INFO(flag);
    const auto r = run_cli(files.args(flag));
    CHECK(r.exit_code == 2);
  }
}
TEST_CASE("validate --run: runs of another GPU than the coefficients are refused with the line", "[validate_run]") {
  std::string text = longest_run();
  for (size_t at = text.find("NVIDIA H200"); at != std::string::npos; at = text.find("NVIDIA H200", at))
    text.replace(at, 11, "NVIDIA H100");
  const TempFile runs(text, ".jsonl");
  const TempFile coefficients(stepcast::io::coefficients_yaml(hand_coefficients()), ".yaml");
  const auto r = run_cli("validate --run " + runs.path() + " --coefficients " + coefficients.path());
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, runs.path() + ":1"));
}

TEST_CASE("validate --run says when a run's wall clock holds time outside its micro-batches", "[validate_run]") {
  // sorted_run() accounts for all of its 8.0 s; the same run with elapsed_s stretched by 1.0 s at the second
  // micro-batch (a data-loader stall, say) accounts for 8.0 of 9.0 s.
  std::string text = sorted_run();
  std::string stretched;
  size_t start = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t end = text.find('\n', start);
    auto j = nlohmann::json::parse(text.substr(start, end - start));
    if (i >= 1) j["run"]["elapsed_s"] = j["run"]["elapsed_s"].get<double>() + 1.0;
    stretched += j.dump() + "\n";
    start = end + 1;
  }
  const TempFile coefficients(stepcast::io::coefficients_yaml(hand_coefficients()), ".yaml");
  const TempFile plain(text, ".jsonl");
  const TempFile gap(stretched, ".jsonl");
  const auto ok = run_cli("validate --run " + plain.path() + " --coefficients " + coefficients.path());
  REQUIRE(ok.exit_code == 0);
  CHECK(ok.out.find("account for") == std::string::npos);
  const auto r = run_cli("validate --run " + gap.path() + " --coefficients " + coefficients.path() + " --format json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("runs").at(0).at("measured_s").get<double>() == Approx(9.0));
  CHECK(j.at("runs").at(0).at("accounted_s").get<double>() == Approx(8.0));
  const auto t = run_cli("validate --run " + gap.path() + " --coefficients " + coefficients.path());
  CHECK(t.out.find("account for 8.00 s of its 9.00 s") != std::string::npos);
}

namespace {

// Causal query-key pairs of one document on a layer, as docs/planner.md "Packing" counts them: its length
// rounded up to the 128-row tile, the sliding window (0: none) within it.
double document_pairs(double length, double window) {
  const double w = std::ceil(length / 128) * 128;
  if (window <= 0 || window >= w) return w * (w + 1) / 2;
  return window * (window + 1) / 2 + (w - window) * window;
}

}  // namespace

// The packed fixture (tests/data/runs/README.md) priced with only the two attention rates, so each predicted
// micro-batch is Gemma-4's attention work over its documents (docs/method.md: 4 x heads x head_dim x pairs x
// layers x 3.5 passes): 25 sliding layers (16 x 256, window 1,024) on flash varlen at the attention rate, 5
// global layers (16 x 512) on the efficient varlen kernel at the attention_efficient rate.
TEST_CASE("validate --run: a packed varlen run is priced per document and per backend", "[validate_run]") {
  sm::Coefficients c = hand_coefficients();
  c.tier = "sdpa-auto/grouped/gqa-expand";
  c.step[sm::kHost] = {0, 0, false, "hand"};
  c.step[sm::kFixed] = {0, 0, false, "hand"};
  c.run[sm::kOptimizerStep] = {0, 0, false, "hand"};
  c.step[sm::kAttention] = {0.01, 0.001, true, "hand"};
  c.step[sm::kAttentionEfficient] = {0.03, 0.001, true, "hand"};
  const TempFile coefficients(stepcast::io::coefficients_yaml(c), ".yaml");
  const std::string runs = std::string(STEPCAST_TEST_DATA) + "/runs/packing-32-cut.jsonl";
  const auto r = run_cli("validate --run " + runs + " --coefficients " + coefficients.path() + " --format json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto attention_s = [](const std::vector<std::vector<double>>& micro_batches) {
    const double sliding = 4.0 * 16 * 256 * 25 * 3.5 / 1e12 * 0.01;
    const double global = 4.0 * 16 * 512 * 5 * 3.5 / 1e12 * 0.03;
    double s = 0;
    for (const auto& documents : micro_batches)
      for (double l : documents) s += sliding * document_pairs(l, 1024) + global * document_pairs(l, 0);
    return s;
  };
  REQUIRE(j["runs"].size() == 3);
  const auto& block_mask = j["runs"][0];
  const auto& free = j["runs"][1];
  const auto& pack = j["runs"][2];
  CHECK(free["id"] == "packing-32/padding-free/varlen");
  // Every layer on a varlen kernel: no first-seen cost for its 3 new shapes, only the run start (2.0 s).
  CHECK(free["predicted_first_seen_s"].get<double>() == 0);
  CHECK(free["predicted_s"].get<double>() ==
        Approx(2.0 + attention_s({{7475, 2147}, {1608, 1044}, {800, 3186}})).epsilon(1e-9));
  CHECK(pack["distinct_shapes"] == 1);  // pack rows are max_length wide
  CHECK(pack["predicted_s"].get<double>() ==
        Approx(2.0 + attention_s({{7475, 2147, 1608, 1044, 800}, {3186, 8192}, {3941, 1554, 2548, 847, 1089, 3493, 1316}}))
            .epsilon(1e-9));
  // The same documents under a block-diagonal mask run cuDNN / masked kernels planned per shape: 3 x 1.0 s.
  CHECK(block_mask["id"] == "packing-32/padding-free/block-mask");
  CHECK(block_mask["predicted_first_seen_s"].get<double>() == Approx(3.0).epsilon(1e-12));
}
