// The host side of a step (model/features.hpp): the smooth maximum of device and host seconds, the host term
// from launches per step, and StepModel::sides() saying which side bounds a micro-batch. Numbers by hand.
#include <array>
#include <bit>
#include <cmath>

#include "catch.hpp"
#include "uniform_batch.hpp"
#include "io/model_config.hpp"
#include "model/coefficients.hpp"
#include "model/features.hpp"
#include "model/step_model.hpp"

namespace sm = stepcast::model;

namespace {

// Coefficients in the layout step_seconds() takes (one parameter vector indexed by StepTerm, as Ceres passes it).
struct Pointers {
  explicit Pointers(const std::array<double, sm::kStepTerms>& c) : p(c) {}
  std::array<double, sm::kStepTerms> p;
};

using stepcast::testing::uniform_batch;

// Gemma-4 26B-A4B on the H200 with a 0.5 s host floor: 25,000 launches x 0.02 s per 1,000 launches.
sm::Coefficients host_floor_coefficients(double overlap) {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "hf-sdpa-efficient/loop";
  c.step[sm::kGemm] = {0.0045, 0, true, ""};
  c.step[sm::kAttention] = {0.009, 0, true, ""};
  c.step[sm::kHost] = {0.02, 0, true, ""};
  c.launches_per_step = 25000;
  c.overlap_exponent = overlap;
  return c;
}

}  // namespace

TEST_CASE("smooth_max: p = 1 adds, p = 2 is the hypotenuse, a large p is the larger side", "[host]") {
  CHECK(sm::smooth_max(3.0, 4.0, 1.0) == Approx(7.0).epsilon(1e-12));
  CHECK(sm::smooth_max(3.0, 4.0, 2.0) == Approx(5.0).epsilon(1e-12));
  // 4 * (1 + 0.75^64)^(1/64) = 4 * (1 + 1.0e-8)^(1/64): 4 within 1e-9 relative.
  CHECK(sm::smooth_max(3.0, 4.0, 64.0) == Approx(4.0).epsilon(1e-9));
  CHECK(sm::smooth_max(4.0, 3.0, 3.0) == Approx(std::cbrt(91.0)).epsilon(1e-12));  // (64 + 27)^(1/3)
  CHECK(sm::smooth_max(0.0, 0.0, 4.0) == 0.0);
  CHECK(sm::smooth_max(2.5, 0.0, 4.0) == Approx(2.5).epsilon(1e-15));
  // Scaled by the larger side: 1e200^8 would overflow a double; (2 x 1e200^8)^(1/8) = 1e200 * 2^(1/8).
  const double big = sm::smooth_max(1e200, 1e200, 8.0);
  REQUIRE(std::isfinite(big));
  CHECK(big == Approx(1e200 * std::pow(2.0, 0.125)).epsilon(1e-12));
}

TEST_CASE("step_seconds: device terms, the streaming floor, and the host side through the smooth maximum", "[host]") {
  std::array<double, sm::kStepTerms> c{};
  c[sm::kFixed] = 0.1;         // s
  c[sm::kGemm] = 0.01;         // s per TFLOP
  c[sm::kAttention] = 0.02;    // s per TFLOP
  c[sm::kExpertStream] = 0.5;  // s per GB
  c[sm::kHost] = 0.004;        // s per 1,000 launches
  sm::StepFeatures f;
  f.x[sm::kFixed] = 1;
  f.x[sm::kGemm] = 10;
  f.x[sm::kAttention] = 5;
  f.x[sm::kExpertStream] = 2;
  f.expert_tflop = 8;
  f.x[sm::kHost] = 25;  // 25,000 launches
  const Pointers p(c);
  // Device: 0.1 + 0.01 x 10 + 0.02 x 5 + max(0, 0.5 x 2 - 0.01 x 8) = 0.3 + 0.92 = 1.22 s; host: 0.004 x 25 = 0.1 s.
  CHECK(sm::device_seconds(p.p.data(), f) == Approx(1.22).epsilon(1e-12));
  CHECK(sm::host_seconds(p.p.data(), f) == Approx(0.1).epsilon(1e-12));
  CHECK(sm::step_seconds(p.p.data(), f, 1.0) == Approx(1.32).epsilon(1e-12));
  CHECK(sm::step_seconds(p.p.data(), f, 2.0) == Approx(std::sqrt(1.22 * 1.22 + 0.01)).epsilon(1e-12));
  CHECK(sm::step_seconds(p.p.data(), f, 16.0) == Approx(1.22).epsilon(1e-12));

  SECTION("the streaming floor does not bite when the GEMM time of the experts exceeds it") {
    f.expert_tflop = 200;  // 0.5 x 2 - 0.01 x 200 < 0: device 0.3 s
    CHECK(sm::device_seconds(p.p.data(), f) == Approx(0.3).epsilon(1e-12));
  }
  SECTION("no launches counted: the host side is 0 and the step is the device time whatever p") {
    f.x[sm::kHost] = 0;
    CHECK(sm::host_seconds(p.p.data(), f) == 0.0);
    CHECK(sm::step_seconds(p.p.data(), f, 1.0) == Approx(1.22).epsilon(1e-12));
  }
  SECTION("a host coefficient of 0 leaves the device time") {
    std::array<double, sm::kStepTerms> c0 = c;
    c0[sm::kHost] = 0;
    const Pointers p0(c0);
    CHECK(sm::step_seconds(p0.p.data(), f, 1.0) == Approx(1.22).epsilon(1e-12));
  }
  SECTION("host-bound: the host side dominates") {
    f.x[sm::kHost] = 1000;  // 4 s of host work against 1.22 s of device work
    CHECK(sm::step_seconds(p.p.data(), f, 1.0) == Approx(5.22).epsilon(1e-12));
    CHECK(sm::step_seconds(p.p.data(), f, 64.0) == Approx(4.0).epsilon(1e-9));
  }
}

TEST_CASE("FeatureMaker: the host feature is thousands of launches per step, 0 until set", "[host]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  sm::FeatureMaker maker(shape, sm::tier_from_label("hf-sdpa-efficient/loop"), sm::gpu_info("NVIDIA H200"));
  CHECK(maker.step(uniform_batch(2, 1024)).x[sm::kHost] == 0.0);
  maker.set_launches_per_step(25000);
  CHECK(maker.step(uniform_batch(2, 1024)).x[sm::kHost] == Approx(25.0).epsilon(1e-15));
  // The same for every shape: launches do not grow with tokens.
  CHECK(maker.step(uniform_batch(8, 8192)).x[sm::kHost] == Approx(25.0).epsilon(1e-15));
}

TEST_CASE("StepModel::sides: a short micro-batch is host-bound, a long one device-bound", "[host]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const double p = 3.0;
  const sm::StepModel m(shape, host_floor_coefficients(p));
  sm::Coefficients no_host = host_floor_coefficients(p);
  no_host.step[sm::kHost] = {};
  const sm::StepModel device_only(shape, no_host);

  for (const auto& b : {uniform_batch(1, 128), uniform_batch(2, 512), uniform_batch(4, 2048), uniform_batch(8, 8192)}) {
    const auto s = m.sides(b);
    INFO(b.rows.size() << " x " << b.width << ": device " << s.device_s << " s, host " << s.host_s << " s");
    CHECK(s.host_s == Approx(0.5).epsilon(1e-12));                   // 0.02 s x 25 thousand launches
    CHECK(s.device_s == Approx(device_only.step_s(b)).epsilon(1e-12));  // the device side is the old model
    CHECK(s.step_s == Approx(std::cbrt(std::pow(s.device_s, 3) + 0.125)).epsilon(1e-12));
    CHECK(m.step_s(b) == s.step_s);
    CHECK(s.step_s >= std::max(s.device_s, s.host_s));
  }
  const auto small = m.sides(uniform_batch(1, 128));
  const auto large = m.sides(uniform_batch(8, 8192));
  CHECK(small.host_bound());
  CHECK(small.device_s < 0.1);  // 128 tokens: a few TFLOPs at 4.5 ms each
  CHECK(small.step_s == Approx(0.5).epsilon(0.01));  // the floor: 128 tokens cost what the host costs
  CHECK_FALSE(large.host_bound());
  CHECK(large.device_s > 2.0);
  CHECK(large.step_s == Approx(large.device_s).epsilon(0.01));
}

TEST_CASE("StepModel: no launch count or an unselected host term leaves the step = the device time", "[host]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  sm::Coefficients unknown = host_floor_coefficients(2.0);
  unknown.launches_per_step = 0;
  sm::Coefficients unselected = host_floor_coefficients(2.0);
  unselected.step[sm::kHost].selected = false;  // the value stays 0.02 but is not used
  for (const auto& c : {unknown, unselected}) {
    const sm::StepModel m(shape, c);
    const auto s = m.sides(uniform_batch(1, 128));
    CHECK(s.host_s == 0.0);
    CHECK(s.step_s == s.device_s);
    CHECK_FALSE(s.host_bound());
  }
}

TEST_CASE("StepModel: the run terms are used only when selected", "[host][run]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  sm::Coefficients c = host_floor_coefficients(4.0);
  c.run[sm::kFirstSeen] = {1.25, 0.1, true, ""};
  c.run[sm::kRunStart] = {3.5, 0.2, true, ""};
  c.run[sm::kOptimizerStep] = {0.2, 0.01, false, ""};
  const sm::StepModel m(shape, c);
  // Forced onto the efficient kernels, no layer builds a cuDNN graph: a new shape costs nothing more.
  CHECK(m.first_seen_graphs(uniform_batch(2, 1024)) == 0u);
  CHECK(m.first_seen_s(uniform_batch(2, 1024)) == 0.0);
  CHECK(m.run_start_s() == 3.5);
  CHECK(m.optimizer_step_s() == 0.0);
  // On the auto tier the sliding layers (head_dim 256) run cuDNN, the 512-wide global layers the efficient kernels:
  // one graph a shape.
  c.tier = "sdpa-auto/grouped/gqa-expand";
  const sm::StepModel a(shape, c);
  CHECK(std::popcount(a.first_seen_graphs(uniform_batch(2, 1024))) == 1);
  CHECK(a.first_seen_s(uniform_batch(2, 1024)) == 1.25);
}
