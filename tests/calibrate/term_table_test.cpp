// The fit over a term table (model/features.hpp, calibrate/solve.hpp, calibrate/select.hpp): a step term added
// as one table row plus its feature is recovered from simulated records, or held at 0 when the data do not
// need it; held terms stay exactly at 0 in a solve; the tables name every term once.
#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>

#include "calibrate/fit.hpp"
#include "calibrate/solve.hpp"
#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/features.hpp"
#include "model/step_model.hpp"

namespace sc = stepcast::calibrate;
namespace sm = stepcast::model;

namespace {

// The dummy term: a cost per row of the micro-batch (e.g. per-sequence bookkeeping), in seconds.
const sc::ExtraStepTerm kPerRow{{"per_row_s", "s/row", "rows of the micro-batch", sm::TermRole::optional},
                                [](const sm::MicroBatch& b) { return static_cast<double>(b.rows.size()); }};

sm::Coefficients truth() {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "hf-sdpa-efficient/loop";
  c.step[sm::kFixed] = {0.3, 0, true, ""};
  c.step[sm::kGemm] = {0.0045, 0, true, ""};  // s per TFLOP
  c.step[sm::kAttention] = {0.009, 0, true, ""};
  c.step[sm::kMaskPath] = {0.004, 0, true, ""};
  c.memory[sm::kMemFixed] = {3.0, 0, true, ""};
  c.memory[sm::kMemToken] = {700.0, 0, true, ""};
  return c;
}

// 1-8 rows, widths 1k-16k, every third batch padded; step = the model's step + per_row_s * rows, 0.3 % noise.
std::vector<sc::Record> simulate(const sm::StepModel& m, double per_row_s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  const int64_t widths[] = {1024, 2048, 4096, 8192, 16384};
  std::vector<sc::Record> out;
  for (int i = 0; i < 40; ++i) {
    sc::Record r;
    r.model = m.coefficients().model;
    r.gpu = m.coefficients().gpu;
    r.tier = m.coefficients().tier;
    r.width = widths[i % 5];
    const int rows = 1 + (i * 3) % 8;
    const bool padded = i % 3 == 1;
    for (int k = 0; k < rows; ++k) r.rows.push_back(padded && k % 2 == 1 ? r.width * 5 / 8 : r.width);
    const auto b = sc::to_batch(r);
    r.step_s = (m.step_s(b) + per_row_s * kPerRow.feature(b)) * (1.0 + 0.003 * gauss(rng));
    r.peak_gib = m.peak_gib(b) + 0.05 * gauss(rng);
    r.line = i + 1;
    out.push_back(r);
  }
  return out;
}

sc::FitReport fit_with_dummy(double per_row_s) {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::StepModel m(shape, truth());
  sc::FitOptions o;
  o.extra_step_terms = {kPerRow};
  return sc::fit(shape, simulate(m, per_row_s, 11), o);
}

// y = sum_j c_j * x_j over three terms, exact.
class Linear final : public sc::LeastSquaresData {
 public:
  struct Cost {
    template <typename T>
    bool operator()(const T* const c, T* r) const {
      r[0] = c[0] * x[0] + c[1] * x[1] + c[2] * x[2] - T(y);
      return true;
    }
    double x[3], y;
  };
  int add_residuals(ceres::Problem& problem, double* c) const override {
    for (const Cost& p : points) problem.AddResidualBlock(new ceres::AutoDiffCostFunction<Cost, 1, 3>(new Cost(p)), nullptr, c);
    return static_cast<int>(points.size());
  }
  double rss(const std::vector<double>& c) const override {
    double s = 0;
    for (const Cost& p : points) {
      const double e = c[0] * p.x[0] + c[1] * p.x[1] + c[2] * p.x[2] - p.y;
      s += e * e;
    }
    return s;
  }
  std::vector<Cost> points;
};

}  // namespace

TEST_CASE("a step term added as a table row plus its feature is recovered from simulated data", "[terms][recovery]") {
  const double per_row_s = 0.05;
  const auto report = fit_with_dummy(per_row_s);
  REQUIRE(report.extra_step.size() == 1);
  const auto& got = report.extra_step[0];
  INFO("per_row_s = " << got.value << " ± " << got.std_error << ": " << got.reason);
  REQUIRE(got.selected);
  CHECK(got.reason.rfind("selected: estimate", 0) == 0);
  CHECK(std::abs(got.value - per_row_s) < 4 * got.std_error);
  CHECK(got.std_error < 0.1 * per_row_s);
  const auto c = truth();
  for (int j : {sm::kFixed, sm::kGemm, sm::kAttention, sm::kMaskPath}) {
    const auto& t = report.coefficients.step[j];
    INFO(sm::step_term_names()[j] << " = " << t.value << " ± " << t.std_error << "; " << t.reason);
    REQUIRE(t.selected);
    CHECK(std::abs(t.value - c.step[j].value) < 4 * t.std_error);
  }
  CHECK(report.coefficients.step_rms_rel < 0.006);
}

TEST_CASE("an added step term the data do not need is held at 0", "[terms][recovery]") {
  const auto report = fit_with_dummy(0.0);
  REQUIRE(report.extra_step.size() == 1);
  const auto& got = report.extra_step[0];
  INFO(got.reason);
  CHECK_FALSE(got.selected);
  CHECK(got.value == 0.0);
  CHECK(got.reason.rfind("not selected", 0) == 0);
  CHECK(report.coefficients.step[sm::kGemm].value == Approx(truth().step[sm::kGemm].value).epsilon(0.02));
}

TEST_CASE("an added term whose feature is 0 everywhere says no record exercises it", "[terms]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::StepModel m(shape, truth());
  sc::FitOptions o;
  o.extra_step_terms = {{{"never_s", "s", "nothing", sm::TermRole::core}, [](const sm::MicroBatch&) { return 0.0; }}};
  const auto report = sc::fit(shape, simulate(m, 0.0, 5), o);
  REQUIRE(report.extra_step.size() == 1);
  CHECK_FALSE(report.extra_step[0].selected);
  CHECK(report.extra_step[0].reason == "not selected: no record exercises it (its feature is 0 in every record)");
}

TEST_CASE("a solve holds the inactive terms at exactly 0 and fits the others", "[terms]") {
  // y = 1 + 2x + 2x^2 at x = 1..4, features (1, x, x^2): with all three terms active the fit is exact; with the
  // second held, it stays 0 and the others absorb what they can.
  Linear data;
  data.points = {{{1, 1, 1}, 5}, {{1, 2, 4}, 13}, {{1, 3, 9}, 25}, {{1, 4, 16}, 41}};
  const std::array<sm::TermSpec, 3> terms{{{"a", "", "", sm::TermRole::core},
                                           {"b", "", "", sm::TermRole::core},
                                           {"c", "", "", sm::TermRole::core}}};
  const sc::SolveSetup setup{terms, {}, 0.5, 1.0};
  const auto all = sc::solve(setup, {0.5, 0.5, 0.5}, {true, true, true}, data);
  CHECK(all.value[0] == Approx(1.0).epsilon(1e-6));
  CHECK(all.value[1] == Approx(2.0).epsilon(1e-6));
  CHECK(all.value[2] == Approx(2.0).epsilon(1e-6));
  CHECK(all.rss < 1e-12);
  const auto held = sc::solve(setup, {0.5, 0.5, 0.5}, {true, false, true}, data);
  CHECK(held.value[1] == 0.0);
  CHECK(held.se[1] == 0.0);
  CHECK(held.value[2] > 2.0);  // the x^2 term takes over the slope
  CHECK(held.rss > 1e-3);
  CHECK(held.dof == 2);
  CHECK(held.se_known);
  CHECK(held.se[0] > 0);
}

TEST_CASE("the term tables name every term once and say which ones older files lack", "[terms]") {
  std::set<std::string> names;
  for (const auto& t : sm::kStepTermTable) names.insert(std::string(t.name));
  for (const auto& t : sm::kMemoryTermTable) names.insert(std::string(t.name));
  CHECK(names.size() == sm::kStepTermTable.size() + sm::kMemoryTermTable.size());
  for (int j = 0; j < sm::kStepTerms; ++j) CHECK(sm::step_term_names()[j] == sm::kStepTermTable[j].name);
  for (int j = 0; j < sm::kMemoryTerms; ++j) CHECK(sm::memory_term_names()[j] == sm::kMemoryTermTable[j].name);
  CHECK(sm::added_after_first_files("host_s_per_klaunch"));
  CHECK_FALSE(sm::added_after_first_files("gemm_s_per_tflop"));
  CHECK_FALSE(sm::added_after_first_files("token_kib"));
}
