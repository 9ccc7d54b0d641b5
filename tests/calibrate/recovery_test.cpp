// Recovery: simulate records with known coefficients and noise, fit, get the coefficients back within
// their standard errors; a fixed term is found when present and not invented when absent.
#include <cmath>
#include <map>
#include <random>

#include "calibrate/fit.hpp"
#include "calibrate/validate.hpp"
#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/features.hpp"
#include "model/step_model.hpp"

namespace sc = stepcast::calibrate;
namespace sm = stepcast::model;

namespace {

sm::Coefficients truth(double fixed_s) {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "hf-sdpa-efficient/loop";
  auto set = [](sm::Term& t, double v) { t = {v, 0, v > 0, ""}; };
  set(c.step[sm::kFixed], fixed_s);
  set(c.step[sm::kGemm], 0.0045);       // s per TFLOP
  set(c.step[sm::kAttention], 0.009);
  set(c.step[sm::kMaskPath], 0.004);
  set(c.memory[sm::kMemFixed], 3.0);
  set(c.memory[sm::kMemActivation], 0.9);  // times the architecture's activations
  set(c.memory[sm::kMemMask], 2.0);
  return c;
}

// A spread like the H200 bar's: 1-8 rows, widths 2k-16k, 0-37 % padding.
std::vector<sc::Record> simulate(const sm::StepModel& m, const sm::Coefficients& c, int n, double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  const int64_t widths[] = {2048, 4096, 8192, 12288, 16384};
  std::vector<sc::Record> out;
  for (int i = 0; i < n; ++i) {
    sc::Record r;
    r.model = c.model;
    r.gpu = c.gpu;
    r.tier = c.tier;
    r.width = widths[i % 5];
    const int rows = 1 + (i * 3) % 8;
    const bool padded = i % 3 == 1;
    for (int k = 0; k < rows; ++k) r.rows.push_back(padded && k % 2 == 1 ? r.width * 5 / 8 : r.width);
    if (padded && rows == 1) r.rows[0] = r.width * 3 / 4;
    const auto b = sc::to_batch(r);
    r.step_s = m.step_s(b) * (1.0 + noise * gauss(rng));
    r.peak_gib = m.probe_peak_gib(b) + 0.1 * gauss(rng);
    r.line = i + 1;
    out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("a fit recovers known coefficients within their standard errors", "[recovery]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const double fixed_s = GENERATE(0.0, 0.4);
  const auto c = truth(fixed_s);
  const sm::StepModel m(shape, c);
  const auto records = simulate(m, c, 30, 0.003, 42);
  const auto report = sc::fit(shape, records, sc::FitOptions{});
  const auto& got = report.coefficients;
  INFO("fixed_s truth " << fixed_s << ": " << got.step[sm::kFixed].reason);
  CHECK(got.step[sm::kFixed].selected == (fixed_s > 0));
  for (int j : {sm::kFixed, sm::kGemm, sm::kAttention, sm::kMaskPath}) {
    if (!c.step[j].selected) continue;
    INFO(sm::step_term_names()[j] << " = " << got.step[j].value << " ± " << got.step[j].std_error << ", truth "
                                  << c.step[j].value << "; " << got.step[j].reason);
    REQUIRE(got.step[j].selected);
    CHECK(std::abs(got.step[j].value - c.step[j].value) < 4 * got.step[j].std_error + 1e-12);
    CHECK(got.step[j].std_error < 0.25 * c.step[j].value);
  }
  for (int j : {sm::kMemFixed, sm::kMemActivation, sm::kMemMask}) {
    INFO(sm::memory_term_names()[j] << " = " << got.memory[j].value << " ± " << got.memory[j].std_error);
    REQUIRE(got.memory[j].selected);
    CHECK(std::abs(got.memory[j].value - c.memory[j].value) < 4 * got.memory[j].std_error + 1e-9);
  }
  CHECK(got.step_rms_rel < 0.01);
}

TEST_CASE("a robust loss keeps one corrupted record from moving the fit", "[recovery]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto c = truth(0.2);
  const sm::StepModel m(shape, c);
  auto records = simulate(m, c, 20, 0.002, 7);
  *records[4].step_s *= 1.5;  // a straggler step
  sc::FitOptions o;
  o.loss = GENERATE(std::string("huber"), std::string("cauchy"));
  o.loss_scale = 0.02;
  const auto got = sc::fit(shape, records, o).coefficients;
  INFO(o.loss);
  CHECK(got.step[sm::kGemm].value == Approx(c.step[sm::kGemm].value).epsilon(0.05));
  CHECK(got.step[sm::kAttention].value == Approx(c.step[sm::kAttention].value).epsilon(0.05));
}

TEST_CASE("the expert streaming floor is found where few experts are hit", "[recovery]") {
  // Tiny batches (16-512 tokens) hit only some of the 128 experts: the weight-streaming floor bends
  // the curve; it must be recovered, not mistaken for a fixed term.
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  sm::Coefficients c = truth(0.0);
  c.step[sm::kMaskPath] = {};
  c.step[sm::kExpertStream] = {0.25, 0, true, ""};  // s per GB streamed (~4 GB/s effective incl. loop overhead)
  const sm::StepModel m(shape, c);
  std::vector<sc::Record> records;
  int line = 1;
  for (int64_t w : {16, 32, 64, 128, 256, 512, 2048, 4096, 8192}) {
    sc::Record r;
    r.model = c.model;
    r.gpu = c.gpu;
    r.tier = c.tier;
    r.rows = {w};
    r.width = w;
    r.step_s = m.step_s(sc::to_batch(r)) * (1.0 + 0.002 * ((line % 3) - 1));
    r.line = line++;
    records.push_back(r);
  }
  const auto got = sc::fit(shape, records, sc::FitOptions{}).coefficients;
  INFO(got.step[sm::kExpertStream].reason << " / fixed: " << got.step[sm::kFixed].reason);
  REQUIRE(got.step[sm::kExpertStream].selected);
  CHECK(got.step[sm::kExpertStream].value == Approx(0.25).epsilon(0.05));
}

TEST_CASE("leave-one-out on clean simulated data is accurate", "[recovery][validate]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto c = truth(0.3);
  const sm::StepModel m(shape, c);
  const auto records = simulate(m, c, 12, 0.003, 3);
  const auto v = sc::cross_validate(shape, records, sc::FitOptions{}, 0);
  CHECK(v.scheme == "leave-one-out");
  CHECK(v.step.count == 12);
  CHECK(v.step.mape < 0.01);
  CHECK(v.peak.mape < 0.01);
}

TEST_CASE("a pooled fit recovers rates shared by several models, and holds one model out at a time", "[recovery][pooled]") {
  // Two families whose GEMM and attention work differ per token: one rate each prices both (docs/method.md,
  // "The default predictor").
  auto c = truth(0.0);
  c.tier = "sdpa-auto/grouped/gqa-expand";
  std::vector<sc::Record> records;
  std::map<std::string, sm::ModelShape> shapes;
  unsigned seed = 7;
  for (const char* name : {"gemma-4-26b-a4b", "llama-3-8b", "qwen2.5-7b"}) {
    const auto shape = stepcast::io::load_model(name);
    shapes.emplace(name, shape);
    sm::Coefficients mine = c;
    mine.model = name;
    const sm::StepModel m(shape, mine);
    for (auto& r : simulate(m, mine, 12, 0.003, seed++)) {
      r.line = static_cast<int64_t>(records.size()) + 1;
      records.push_back(r);
    }
  }
  const sc::FitShapes pooled(shapes);
  const auto report = sc::fit(pooled, records, sc::FitOptions{});
  const auto& got = report.coefficients;
  CHECK(got.model == sm::kPooledModel);
  CHECK(got.models == std::vector<std::string>{"gemma-4-26b-a4b", "llama-3-8b", "qwen2.5-7b"});
  for (int j : {sm::kGemm, sm::kAttention}) {
    INFO(sm::step_term_names()[j] << " = " << got.step[j].value << " ± " << got.step[j].std_error);
    REQUIRE(got.step[j].selected);
    CHECK(std::abs(got.step[j].value - c.step[j].value) < 4 * got.step[j].std_error + 1e-12);
  }
  CHECK(got.step_rms_rel < 0.01);
  // Each model predicted by a fit on the other two: the same rates, so within the noise.
  const auto held = sc::leave_one_model_out(pooled, records, sc::FitOptions{});
  CHECK(held.scheme == "leave-one-model-out");
  CHECK(held.folds == 3);
  CHECK(held.step.count == 36);
  CHECK(held.step.mape < 0.02);
  // A record of a model the pooled fit did not load is refused at its line, not priced as another model.
  auto stray = records.front();
  stray.model = "mistral-7b";
  records.push_back(stray);
  CHECK_THROWS_WITH(sc::fit(pooled, records, sc::FitOptions{}), Catch::Matchers::Contains("model 'mistral-7b'"));
}

TEST_CASE("a kind with fewer than 9 held-out points takes the larger of its own band and all the records'",
          "[validate][intervals]") {
  // Conformal 90 % needs 9 points of its own; two padded points alone gave +-0.04 % (docs/method.md "Results").
  auto row = [](bool padded, double measured, double predicted) {
    sc::HeldOutRow r;
    r.padded = padded;
    r.measured_step_s = measured;
    r.predicted_step_s = predicted;
    return r;
  };
  sc::Validation few;
  few.scheme = "leave-one-out";
  for (double p : {1.01, 0.98, 1.03, 0.99}) few.rows.push_back(row(false, 1.0, p));
  for (double p : {1.0004, 0.9997}) few.rows.push_back(row(true, 1.0, p));
  const auto h = sc::held_out_errors(few);
  CHECK(h.points_padded == 2);
  CHECK(h.half_width.padded == Approx(0.03).epsilon(1e-9));    // all six records' band, not 0.0004
  CHECK(h.half_width.unpadded == Approx(0.03).epsilon(1e-9));
  // With 9 of its own, a kind keeps its own quantile even when all the records' is wider.
  sc::Validation many = few;
  for (int i = 0; i < 7; ++i) many.rows.push_back(row(true, 1.0, 1.001));
  for (int i = 0; i < 3; ++i) many.rows.push_back(row(false, 1.0, 1.10));
  const auto m = sc::held_out_errors(many);
  CHECK(m.points_padded == 9);
  CHECK(m.half_width.padded == Approx(0.001).epsilon(1e-6));
}
