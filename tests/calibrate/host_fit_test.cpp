// Recovery of the host side: records simulated from known coefficients with a host floor (launches_per_step
// on each record) and overlap exponent p = 3 over widths 128-8192 and 1-8 rows; the fit must select
// host_s_per_klaunch, recover it within a few %, and pick p = 3 from its grid. Without host-bound records the
// host term must not be selected. Recorded-run micro-batches must stay out of the steady fit.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "calibrate/fit.hpp"
#include "calibrate/run_records.hpp"
#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/features.hpp"
#include "model/step_model.hpp"

namespace sc = stepcast::calibrate;
namespace sm = stepcast::model;

namespace {

constexpr double kLaunches = 25000;    // kernel launches of one step (the order of HF + peft on the MoE)
constexpr double kHostPerK = 0.02;     // s per 1,000 launches: a 0.5 s host floor
constexpr double kOverlap = 3;

sm::Coefficients truth(double launches) {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "sdpa-auto/grouped/gqa-expand";  // cuDNN on the sliding layers: one graph a new shape
  c.step[sm::kGemm] = {0.0045, 0, true, ""};     // s per TFLOP
  c.step[sm::kAttention] = {0.009, 0, true, ""};
  c.step[sm::kHost] = {kHostPerK * 25000 / launches, 0, true, ""};  // the same 0.5 s floor whatever the count
  c.launches_per_step = launches;
  c.overlap_exponent = kOverlap;
  return c;
}

sc::Record record(const sm::Coefficients& c, int64_t rows, int64_t width, double step_s, int64_t line) {
  sc::Record r;
  r.model = c.model;
  r.gpu = c.gpu;
  r.tier = c.tier;
  r.rows.assign(static_cast<size_t>(rows), width);
  r.width = width;
  r.step_s = step_s;
  r.line = line;
  return r;
}

// Full rows (no padding, so the mask-path term stays unexercised), 0.3 % multiplicative noise.
std::vector<sc::Record> simulate(const sm::StepModel& m, const std::vector<int64_t>& widths, const std::vector<int64_t>& rows,
                                 bool with_launch_counts, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<sc::Record> out;
  int64_t line = 1;
  for (int64_t w : widths)
    for (int64_t r : rows) {
      sc::Record rec = record(m.coefficients(), r, w, 0, line++);
      rec.step_s = m.step_s(sc::to_batch(rec)) * (1.0 + 0.003 * gauss(rng));
      if (with_launch_counts) rec.extra["launches_per_step"] = m.coefficients().launches_per_step;
      out.push_back(rec);
    }
  return out;
}

const std::vector<int64_t> kSmallToLarge = {128, 256, 512, 1024, 2048, 4096, 8192};
const std::vector<int64_t> kRows = {1, 2, 4, 8};

bool has_note(const std::vector<std::string>& notes, const std::string& fragment) {
  for (const auto& n : notes)
    if (n.find(fragment) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the fit finds a host floor, its per-launch cost and the overlap exponent", "[host_fit]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::Coefficients c = truth(kLaunches);
  const sm::StepModel m(shape, c);
  // The grid spans both sides: 1 x 128 is host-bound, 8 x 8192 device-bound.
  REQUIRE(m.sides(sc::to_batch(record(c, 1, 128, 0, 0))).host_bound());
  REQUIRE_FALSE(m.sides(sc::to_batch(record(c, 8, 8192, 0, 0))).host_bound());
  const auto records = simulate(m, kSmallToLarge, kRows, true, 11);
  const auto report = sc::fit(shape, records, sc::FitOptions{});
  const auto& got = report.coefficients;
  const auto& host = got.step[sm::kHost];
  INFO("host: " << host.reason << "; fixed: " << got.step[sm::kFixed].reason);
  REQUIRE(host.selected);
  CHECK(host.value == Approx(kHostPerK).epsilon(0.03));
  CHECK(host.std_error > 0);
  CHECK(got.launches_per_step == kLaunches);
  CHECK(got.overlap_exponent == kOverlap);
  CHECK(has_note(report.notes, "overlap exponent p = 3"));
  // The floor is the host term's, not a fixed cost's (with one launch count the two columns are collinear).
  CHECK_FALSE(got.step[sm::kFixed].selected);
  CHECK(got.step[sm::kGemm].value == Approx(0.0045).epsilon(0.03));
  CHECK(got.step_rms_rel < 0.006);
  CHECK(got.points == static_cast<int64_t>(records.size()));
}

TEST_CASE("without host-bound records the host term is not selected", "[host_fit]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::Coefficients c = truth(kLaunches);
  const sm::StepModel m(shape, c);
  const auto records = simulate(m, {8192, 12288, 16384}, {4, 6, 8}, true, 5);
  for (const auto& r : records) REQUIRE(m.sides(sc::to_batch(r)).device_s > 8 * 0.5);  // the host is < 1/8 of it
  const auto report = sc::fit(shape, records, sc::FitOptions{});
  const auto& host = report.coefficients.step[sm::kHost];
  INFO(host.reason);
  CHECK_FALSE(host.selected);
  CHECK(host.value == 0.0);
  CHECK(host.reason.rfind("not selected", 0) == 0);
  CHECK_FALSE(has_note(report.notes, "overlap exponent"));
  CHECK(report.coefficients.step[sm::kGemm].value == Approx(0.0045).epsilon(0.03));
}

TEST_CASE("without launch counts the host term is fitted in seconds per step (1000 nominal launches)", "[host_fit]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::Coefficients c = truth(1000);  // 0.5 s per 1,000 launches x 1 = the same 0.5 s floor
  const sm::StepModel m(shape, c);
  const auto records = simulate(m, kSmallToLarge, kRows, false, 3);
  const auto report = sc::fit(shape, records, sc::FitOptions{});
  const auto& got = report.coefficients;
  INFO(got.step[sm::kHost].reason);
  CHECK(got.launches_per_step == 1000);
  CHECK(has_note(report.notes, "no record counts its kernel launches"));
  REQUIRE(got.step[sm::kHost].selected);
  CHECK(got.step[sm::kHost].value == Approx(0.5).epsilon(0.03));
}

TEST_CASE("recorded-run micro-batches stay out of the steady fit and give the run costs", "[host_fit][run]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const sm::Coefficients c = truth(kLaunches);
  const sm::StepModel m(shape, c);
  auto records = simulate(m, kSmallToLarge, kRows, true, 11);
  const size_t steady = records.size();
  // One run of 1 x 256, 1 x 512, 1 x 256, 1 x 1024 (accumulation 2): each new shape pays 1.0 s over its
  // steady step, the first micro-batch 3.0 s more (start); optimizer steps 0.3 (the first) and 0.1 s.
  struct Step {
    int64_t width;
    double extra_s;
    bool first_seen;
    double optimizer_s;
  };
  const std::vector<Step> steps = {{256, 4.0, true, -1}, {512, 1.0, true, 0.3}, {256, 0.0, false, -1}, {1024, 1.0, true, 0.1}};
  double elapsed = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    sc::Record r = record(c, 1, steps[i].width, 0, static_cast<int64_t>(steady + i + 1));
    r.step_s = m.step_s(sc::to_batch(r)) + steps[i].extra_s;
    sc::RunFields f;
    f.id = "run";
    f.policy = "pad-to-longest";
    f.micro_batch = 1;
    f.accumulation = 2;
    f.max_length = 1024;
    f.index = static_cast<int64_t>(i);
    f.optimizer_step = f.index / 2;
    f.first_seen = steps[i].first_seen;
    if (steps[i].optimizer_s > 0) f.optimizer_s = steps[i].optimizer_s;
    elapsed += *r.step_s + steps[i].optimizer_s * (steps[i].optimizer_s > 0 ? 1 : 0);
    f.elapsed_s = elapsed;
    r.extra["probe"] = "run";
    r.extra["run"] = sc::run_json(f);
    r.extra["launches_per_step"] = kLaunches;
    records.push_back(r);
  }
  const auto report = sc::fit(shape, records, sc::FitOptions{});
  const auto& got = report.coefficients;
  CHECK(got.points == static_cast<int64_t>(steady));
  REQUIRE(report.step_residuals.size() == steady);
  for (const auto& row : report.step_residuals) CHECK(row.line <= static_cast<int64_t>(steady));
  // The same steady fit as without the run (its 1-4 s excesses would otherwise drag it).
  CHECK(got.step[sm::kHost].value == Approx(kHostPerK).epsilon(0.03));
  CHECK(got.step_rms_rel < 0.006);
  // Run costs over the fitted steady model: first-seen median{1.0, 1.0}; start 4.0 - 1.0 = 3.0 plus the first
  // optimizer step's extra 0.3 - 0.1 = 0.2; optimizer 0.1 (the steps after the first). The steady model's
  // own error (< 1 % of a ~0.5 s step) moves the first two by a few ms.
  CHECK(got.run[sm::kFirstSeen].value == Approx(1.0).margin(0.02));
  CHECK(got.run[sm::kRunStart].value == Approx(3.2).margin(0.02));
  CHECK(got.run[sm::kOptimizerStep].value == Approx(0.1).epsilon(1e-12));
  CHECK(has_note(report.notes, "1 recorded run(s)"));
}

TEST_CASE("the host term is found whatever the overlap exponent of the grid", "[host_fit]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const double p = GENERATE(1.5, 2.0, 3.0, 6.0, 16.0);
  sm::Coefficients c = truth(kLaunches);
  c.overlap_exponent = p;
  const sm::StepModel m(shape, c);
  const auto report = sc::fit(shape, simulate(m, kSmallToLarge, kRows, true, 11), sc::FitOptions{});
  const auto& got = report.coefficients;
  INFO("p " << p << ": host " << got.step[sm::kHost].reason << "; fixed " << got.step[sm::kFixed].reason);
  CHECK(got.step[sm::kHost].selected);
  CHECK(got.overlap_exponent == p);
  CHECK(got.step_rms_rel < 0.006);  // the 0.3 % noise
}
