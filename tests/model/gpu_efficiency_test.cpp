// Kernel efficiencies fitted to public measurements (model/gpu_efficiency.hpp, docs/gpus.md): recovery from
// synthetic points, the levels, the path factors, the distances and their held-out bands.
#include <cmath>

#include "catch.hpp"
#include "model/gpu_efficiency.hpp"

using namespace stepcast::model;

namespace {

const GpuSpec& spec(const std::string& name) { return *find_gpu(known_gpus(), name); }
GpuInfo info(const std::string& name) { return gpu_info(name); }

PublicPoint gemm_point(const std::string& gpu, const std::string& family, const std::string& path, double size, double value) {
  PublicPoint p;
  p.file = "synthetic.csv";
  p.gpu = gpu;
  p.arch = spec(gpu).arch;
  p.kind = "gemm";
  p.family = family;
  p.path = path;
  p.m = p.n = p.k = size;
  p.value = value;
  p.unit = "tflops";
  return p;
}

// rate = peak x factor x E x / (x + h), times a deterministic +-2 % wobble.
double rate(const std::string& gpu, double factor, double e, double h, double x, int i) {
  return spec(gpu).peaks.bf16_tflops * factor * e * x / (x + h) * (1 + 0.02 * ((i % 3) - 1));
}

}  // namespace

TEST_CASE("recovery: a family's E and h, and a non-native path's factor, come back from its points", "[efficiency]") {
  const double e = 0.7, h = 1000, f = 0.6;
  std::vector<PublicPoint> pts;
  int i = 0;
  for (double x : {512.0, 1024.0, 2048.0, 4096.0, 8192.0}) {
    pts.push_back(gemm_point("NVIDIA A100-SXM4-80GB", "k", "mma", x, rate("NVIDIA A100-SXM4-80GB", 1, e, h, x, i++)));
    pts.push_back(gemm_point("NVIDIA GeForce RTX 4090", "k", "mma", x, rate("NVIDIA GeForce RTX 4090", 1, e, h, x, i++)));
    // The same sm80-style family on an sm90 card issues mma.sync: its ceiling is f of the wgmma peak.
    pts.push_back(gemm_point("NVIDIA H100 80GB HBM3", "k", "mma", x, rate("NVIDIA H100 80GB HBM3", f, e, h, x, i++)));
  }
  const EfficiencyModel m(pts, known_gpus(), known_archs());
  const Curve* c = m.curve("k", "family", "");
  REQUIRE(c != nullptr);
  CHECK(std::exp(c->log_e) == Approx(e).epsilon(0.05));
  CHECK(c->half_x == Approx(h).epsilon(0.25));
  CHECK(c->points == 15);
  const PathFactor pf = m.path_factor("sm90", "mma");
  CHECK(pf.how == "family pairs");
  CHECK(pf.value == Approx(f).epsilon(0.08));
  CHECK(m.path_factor("sm80", "mma").how == "native");
  CHECK(m.path_factor("sm80", "mma").value == 1.0);
  // The model's own rate of a point is close to the point.
  for (const auto& p : pts) CHECK(m.achieved(p).rate == Approx(p.value).epsilon(0.1));
}

TEST_CASE("a published probe of a path's ceiling is taken over the family's pairs", "[efficiency]") {
  std::vector<PublicPoint> pts = {gemm_point("NVIDIA A100-SXM4-80GB", "k", "mma", 4096, 250),
                                  gemm_point("NVIDIA H100 80GB HBM3", "k", "mma", 4096, 300)};
  PublicPoint probe;
  probe.file = "probe.csv";
  probe.gpu = "NVIDIA H800";  // not in the table: a fraction needs no peak
  probe.arch = "sm90";
  probe.kind = "tensor_path";
  probe.path = "mma";
  probe.value = 0.65;
  probe.unit = "fraction_of_peak";
  pts.push_back(probe);
  const EfficiencyModel m(pts, known_gpus(), known_archs());
  CHECK(m.path_factor("sm90", "mma").how == "probe");
  CHECK(m.path_factor("sm90", "mma").value == Approx(0.65));
  // Without any evidence a non-native path is "unmeasured" (factor 1, said so).
  CHECK(m.path_factor("sm100", "mma").how == "unmeasured");
}

TEST_CASE("a GPU's efficiency comes from its own points, a sibling's, its arch's or the family's", "[efficiency]") {
  std::vector<PublicPoint> pts = {gemm_point("NVIDIA H100 80GB HBM3", "blas", "wgmma", 4096, 0.8 * 989.4),
                                  gemm_point("NVIDIA A100-SXM4-80GB", "blas", "mma", 4096, 0.6 * 312),
                                  gemm_point("NVIDIA GeForce RTX 5090", "blas", "mma", 4096, 0.9 * 209.5)};
  const EfficiencyModel m(pts, known_gpus(), known_archs());
  const auto own = m.achieved(info("NVIDIA H100 80GB HBM3"), KernelCategory::gemm, 4096);
  CHECK(own.level == "gpu");
  CHECK(own.rate == Approx(0.8 * 989.4));
  // The H200 is the H100's silicon (the same tensor rate per SM): its sibling.
  const auto sib = m.achieved(info("NVIDIA H200"), KernelCategory::gemm, 4096);
  CHECK(sib.level == "sibling NVIDIA H100 80GB HBM3");
  CHECK(sib.rate == Approx(0.8 * 989.4));
  // The RTX PRO 6000 is sm_120 like the 5090, but twice as dense per SM (no GeForce halving): not a sibling.
  const auto arch = m.achieved(info("NVIDIA RTX PRO 6000 Blackwell Workstation Edition"), KernelCategory::gemm, 4096);
  CHECK(arch.level == "arch");
  CHECK(arch.rate == Approx(0.9 * 503.8));
  // No point of its arch: the family's mean over every GPU (geometric).
  const auto fam = m.achieved(info("NVIDIA L40S"), KernelCategory::gemm, 4096);
  CHECK(fam.level == "family");
  CHECK(fam.efficiency == Approx(std::cbrt(0.8 * 0.6 * 0.9)));
  // A family with no point at all: the path's ceiling, said so.
  const auto none = m.achieved(info("NVIDIA H100 80GB HBM3"), KernelCategory::attention_efficient, 4096);
  CHECK(none.level == "none");
  CHECK(none.family == "cutlass_efficient");
  CHECK(none.path == "mma");
}

TEST_CASE("distances: the same silicon, another arch (or density), another vendor", "[efficiency]") {
  CHECK(gpu_distance(info("NVIDIA H200"), info("NVIDIA H100 80GB HBM3")) == Distance::same_arch);
  CHECK(gpu_distance(info("NVIDIA H200"), info("NVIDIA H200")) == Distance::same_gpu);
  CHECK(gpu_distance(info("NVIDIA H200"), info("NVIDIA RTX PRO 6000 Blackwell Workstation Edition")) ==
        Distance::another_arch);
  CHECK(gpu_distance(info("NVIDIA GeForce RTX 5090"), info("NVIDIA RTX PRO 6000 Blackwell Workstation Edition")) ==
        Distance::another_arch);
  CHECK(gpu_distance(info("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"),
                     info("NVIDIA RTX PRO 6000 Blackwell Workstation Edition")) == Distance::same_arch);
  CHECK(gpu_distance(info("NVIDIA H200"), info("AMD Instinct MI300X")) == Distance::another_vendor);
}

TEST_CASE("a band covers 90 % of its distance's held-out pairs, the largest below 10 pairs", "[efficiency]") {
  std::vector<HeldOutPair> pairs;
  for (int i = 1; i <= 20; ++i) {
    HeldOutPair p;
    p.target.value = 100;
    p.target.gpu = "g" + std::to_string(i % 4);
    p.predicted = i % 2 ? 100 + i : 100 / (1 + i / 100.0);  // +i % or 1/(1+i %): symmetric
    p.distance = Distance::another_arch;
    pairs.push_back(p);
  }
  const ErrorBand b = error_band(pairs, Distance::another_arch);
  CHECK(b.pairs == 20);
  CHECK(b.gpus == 4);
  CHECK(b.half_width == Approx(0.18));  // the 18th of 20 sorted errors 0.01 ... 0.20
  CHECK(error_band(pairs, Distance::same_arch).pairs == 0);
  pairs.resize(5);
  CHECK(error_band(pairs, Distance::another_arch).half_width == Approx(0.05));
}

TEST_CASE("the shipped points: held-out bands widen with distance", "[efficiency]") {
  const auto pairs = held_out_pairs(public_points(), known_gpus(), known_archs());
  const ErrorBand same = error_band(pairs, Distance::same_arch), other = error_band(pairs, Distance::another_arch),
                  vendor = error_band(pairs, Distance::another_vendor);
  CHECK(same.pairs >= 10);
  CHECK(other.pairs >= 100);
  CHECK(vendor.pairs >= 10);
  CHECK(same.half_width < other.half_width);
  CHECK(other.half_width < vendor.half_width);
  // The shipped fit's own pieces (bench/gpu_efficiency_report prints them all).
  CHECK(shipped_efficiency().path_factor("sm90", "mma").how == "probe");
  CHECK(shipped_efficiency().path_factor("sm100", "mma").how == "family pairs");
}
