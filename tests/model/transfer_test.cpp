// Carrying coefficients to another GPU, tier or model (model/transfer.hpp, docs/method.md "Transfer").
#include <cmath>

#include "catch.hpp"
#include "model/errors.hpp"
#include "model/gpu_efficiency.hpp"
#include "model/transfer.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;

namespace {
model::Coefficients h200_like() {
  model::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "sdpa-auto/grouped/gqa-expand";
  c.step[model::kFixed] = {0.18, 0.001, true, ""};
  c.step[model::kGemm] = {0.0065, 0.0001, true, ""};
  c.step[model::kAttention] = {0.0083, 0.0001, true, ""};
  c.step[model::kExpertStream] = {0.002, 0.0, true, ""};
  c.memory[model::kMemToken] = {4277, 1, true, ""};
  return c;
}
}  // namespace

TEST_CASE("an efficiency is one over seconds-per-TFLOP times the peak", "[transfer]") {
  const auto c = h200_like();
  const auto e = model::step_efficiencies(c, model::gpu_info("NVIDIA H200"));
  CHECK(e[model::kGemm] == Approx(1.0 / (0.0065 * 989.4)));
  CHECK(e[model::kExpertStream] == Approx(1.0 / (0.002 * 4800)));
  CHECK(e[model::kFixed] == 0);  // host side: no GPU rate
  CHECK(e[model::kAttentionMath] == 0);  // not selected
}

TEST_CASE("a GPU transfer carries each category by its kernels' public efficiencies, the host and memory terms as they are",
          "[transfer]") {
  const auto c = h200_like();
  const auto t = model::transfer_coefficients(c, {"", "NVIDIA RTX PRO 6000 Blackwell", ""}, true);
  const auto from = model::gpu_info("NVIDIA H200"), to = model::gpu_info("NVIDIA RTX PRO 6000 Blackwell");
  CHECK(t.coefficients.gpu == to.name);
  // Each rate scales by what the two GPUs achieve for its category (model/gpu_efficiency.hpp), at 4096.
  const auto& m = model::shipped_efficiency();
  const double gemm = m.achieved(from, model::KernelCategory::gemm, 4096).rate /
                      m.achieved(to, model::KernelCategory::gemm, 4096).rate;
  CHECK(t.coefficients.step[model::kGemm].value == Approx(0.0065 * gemm));
  const double attention = m.achieved(from, model::KernelCategory::attention, 4096).rate /
                           m.achieved(to, model::KernelCategory::attention, 4096).rate;
  CHECK(t.coefficients.step[model::kAttention].value == Approx(0.0083 * attention));
  // Expert-stream bytes are real bytes: their DRAM share carries by the copy rates, the rest by the FP32 peaks.
  const double copy_h200 = m.achieved(from, model::KernelCategory::memory, 256.0 * (1 << 20)).rate;
  const double copy_to = m.achieved(to, model::KernelCategory::memory, 256.0 * (1 << 20)).rate;
  const double dram = 1.0 / copy_h200 / 0.002;
  // SMs x clock: 132 x 1.98 GHz (67 TFLOP/s FP32 / 256) against 188 x 2.6 GHz (125 / 256), sm90 and sm120 both
  // 128 FP32 lanes a SM.
  CHECK(t.coefficients.step[model::kExpertStream].value ==
        Approx(0.002 * (dram * copy_h200 / copy_to + (1 - dram) * 67.0 / to.peaks.fp32_tflops)));
  CHECK(t.coefficients.step[model::kFixed].value == 0.18);
  CHECK(t.coefficients.memory[model::kMemToken].value == 4277);
  REQUIRE(t.provenance.size() == 1);
  CHECK(t.provenance[0] == model::Provenance::transferred_gpu);
  CHECK_THAT(t.summary(), Contains("transferred: GPU 'NVIDIA H200' -> 'NVIDIA RTX PRO 6000 Blackwell"));
  CHECK_THAT(t.summary(), Contains("sm90 -> sm120"));
  // The data each factor rests on, and the band of the distance, under the summary.
  CHECK_THAT(t.summary(), Contains("\n  gemm x"));
  CHECK_THAT(t.summary(), Contains(".csv"));
  CHECK_THAT(t.summary(), Contains("interval: +-"));
  CHECK_THAT(t.summary(), Contains("another arch"));
  CHECK(t.transfer_half_width.unpadded == Approx(model::shipped_band(model::Distance::another_arch).half_width));
}

TEST_CASE("memory-bound work of real bytes carries by its DRAM share, the rest runs on the SMs", "[transfer]") {
  // The H200 -> H100 kernel tables: memory-bound time grew 1.17-1.19x where large copies grew 1.43x
  // (measurements/records/h100-transfer). The default's weighted 0.530 ms/GB is 48 % the DRAM's at the H200's
  // 3905 GB/s copy rate; the H100 has the same SMs and clocks (FP32 67 TFLOP/s), so only that share slows down.
  auto c = h200_like();
  c.step[model::kExpertStream] = {0, 0, false, ""};
  c.step[model::kMemoryBound] = {0.00053, 0, true, ""};
  const auto& m = model::shipped_efficiency();
  const auto h200 = model::gpu_info("NVIDIA H200"), h100 = model::gpu_info("NVIDIA H100 80GB HBM3");
  const double copy_h200 = m.achieved(h200, model::KernelCategory::memory, 256.0 * (1 << 20)).rate;
  const double copy_h100 = m.achieved(h100, model::KernelCategory::memory, 256.0 * (1 << 20)).rate;
  const double dram = 1.0 / copy_h200 / 0.00053;
  CHECK(dram == Approx(0.483).epsilon(0.01));
  c.memory_work = "weighted";
  const auto weighted = model::transfer_coefficients(c, {"", h100.name, ""}, true);
  const double factor = weighted.coefficients.step[model::kMemoryBound].value / 0.00053;
  CHECK(factor == Approx(dram * copy_h200 / copy_h100 + (1 - dram)));
  CHECK(factor > 1.1);
  CHECK(factor < copy_h200 / copy_h100);
  CHECK_THAT(weighted.summary(), Contains("memory_s_per_gb x"));
  CHECK_THAT(weighted.summary(), Contains("is DRAM"));
  // The plain count's bytes miss most of the traffic (its rate is ~22x the bandwidth's cost): no split, by copies.
  c.memory_work = "plain";
  const auto plain = model::transfer_coefficients(c, {"", h100.name, ""}, true);
  CHECK(plain.coefficients.step[model::kMemoryBound].value == Approx(0.00053 * copy_h200 / copy_h100));
  // Another arch: the A100's 108 SMs at 1.41 GHz (19.5 TFLOP/s FP32 over 64 lanes a SM, not 128) issue the rest.
  c.memory_work = "weighted";
  const auto a100 = model::gpu_info("NVIDIA A100-SXM4-80GB");
  const double copy_a100 = m.achieved(a100, model::KernelCategory::memory, 256.0 * (1 << 20)).rate;
  const auto ampere = model::transfer_coefficients(c, {"", a100.name, ""}, true);
  const double sm_ratio = (67.0 / 256) / (19.5 / 128);
  CHECK(sm_ratio == Approx(132 * 1.98 / (108 * 1.41)).epsilon(0.01));
  CHECK(ampere.coefficients.step[model::kMemoryBound].value / 0.00053 ==
        Approx(dram * copy_h200 / copy_a100 + (1 - dram) * sm_ratio));
  // No lanes declared for the arch (sm100, gfx942): no split, by the copy rates alone.
  const auto b200 = model::gpu_info("NVIDIA B200");
  const double copy_b200 = m.achieved(b200, model::KernelCategory::memory, 256.0 * (1 << 20)).rate;
  CHECK(model::transfer_coefficients(c, {"", b200.name, ""}, true).coefficients.step[model::kMemoryBound].value ==
        Approx(0.00053 * copy_h200 / copy_b200));
  // A cost at or below the DRAM's (a kernel at the copy rate) is all DRAM.
  c.step[model::kMemoryBound] = {0.5 / copy_h200, 0, true, ""};
  const auto fast = model::transfer_coefficients(c, {"", h100.name, ""}, true);
  CHECK(fast.coefficients.step[model::kMemoryBound].value == Approx(0.5 / copy_h200 * copy_h200 / copy_h100));
}

TEST_CASE("an sm80 kernel on sm90 runs against mma.sync's ceiling, not the H200's wgmma peak", "[transfer]") {
  // The seed's finding as data: PyTorch's memory-efficient attention is sm80 CUTLASS code on both cards; from
  // the H200 to the sm_120 card its rate carries by the two mma.sync ceilings, not by the datasheets' peaks.
  auto c = h200_like();
  c.step[model::kAttentionEfficient] = {0.0187, 0, true, ""};
  const auto t = model::transfer_coefficients(c, {"", "NVIDIA RTX PRO 6000 Blackwell", ""}, true);
  const double mma_sm90 = model::shipped_efficiency().path_factor("sm90", "mma").value;
  CHECK(mma_sm90 == Approx(0.6526));  // the published probe (measurements/public/blackwell-tensorcore-kernels.csv)
  CHECK(t.coefficients.step[model::kAttentionEfficient].value == Approx(0.0187 * 989.4 * mma_sm90 / 503.8));
  CHECK(t.coefficients.step[model::kAttentionEfficient].value < 0.0187 * 989.4 / 503.8);  // faster than by peaks
}

TEST_CASE("the GPU transfer's interval widens with distance", "[transfer]") {
  const auto c = h200_like();
  const double same = model::transfer_coefficients(c, {"", "NVIDIA H100 80GB HBM3", ""}, true).transfer_half_width.unpadded;
  const double other = model::transfer_coefficients(c, {"", "NVIDIA A100-SXM4-80GB", ""}, true).transfer_half_width.unpadded;
  const double vendor = model::transfer_coefficients(c, {"", "AMD Instinct MI300X", ""}, true).transfer_half_width.unpadded;
  CHECK(same > 0);
  CHECK(same < other);
  CHECK(other < vendor);
}

TEST_CASE("another model, GPU or tier without --transfer names every mismatch", "[transfer]") {
  const auto c = h200_like();
  try {
    model::transfer_coefficients(c, {"llama-3-8b", "NVIDIA H100 80GB HBM3", "sdpa-math/grouped"}, false);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Contains("model 'llama-3-8b'"));
    CHECK_THAT(what, Contains("GPU 'NVIDIA H100 80GB HBM3'"));
    CHECK_THAT(what, Contains("tier 'sdpa-math/grouped'"));
    CHECK_THAT(what, Contains("--transfer"));
  }
  // The same names (an alias, the canonical tier spelling) are no transfer.
  const auto same = model::transfer_coefficients(c, {"gemma-4-26b-a4b", "NVIDIA H200", "sdpa-auto/grouped/gqa-expand"}, false);
  CHECK_FALSE(same.transferred());
  CHECK(same.provenance == std::vector<model::Provenance>{model::Provenance::calibrated});
}

TEST_CASE("a GPU without a published peak cannot take a transfer", "[transfer]") {
  CHECK_THROWS_WITH(model::transfer_coefficients(h200_like(), {"", "NVIDIA A10G", ""}, true),
                    Contains("'NVIDIA A10G' has no peak_bf16_tflops"));
}

TEST_CASE("a tier transfer to a math tier never prices math layers at zero", "[transfer]") {
  const auto t = model::transfer_coefficients(h200_like(), {"", "", "sdpa-math/grouped"}, true);
  CHECK(t.coefficients.step[model::kAttentionMath].selected);
  CHECK(t.coefficients.step[model::kAttentionMath].value == Approx(0.0083));
  CHECK(t.provenance[0] == model::Provenance::transferred_tier);
  CHECK_THAT(t.summary(), Contains("lower bound"));
}

TEST_CASE("each kind of prediction gets the interval of its own held-out errors", "[transfer][intervals]") {
  auto c = h200_like();
  c.step_rms_rel = 0.01;
  model::StepFeatures f;
  f.x[model::kFixed] = 1;
  f.x[model::kGemm] = 100;  // TFLOPs
  const double step = 0.18 + 0.0065 * 100;
  double lo = 0, hi = 0;
  const auto calibrated = model::transfer_coefficients(c, {}, false);
  // A file without held-out errors: 1.645 x sqrt(rms^2 + ((1 x 0.001 + 100 x 0.0001) / step)^2), padded or not.
  REQUIRE(model::step_interval(calibrated, f, step, false, lo, hi));
  const double fit = 1.645 * std::sqrt(0.01 * 0.01 + std::pow(0.011 / step, 2));
  CHECK(hi / step - 1 == Approx(fit));
  CHECK(step / lo - 1 == Approx(fit));
  // A file with them: its own quantiles, padded and unpadded apart.
  auto held = c;
  held.held_out = {true, "leave-one-out", 15, 6, {0.031, 0.054}};
  const auto own = model::transfer_coefficients(held, {}, false);
  CHECK(model::step_half_width(own, f, step, false) == Approx(0.031));
  CHECK(model::step_half_width(own, f, step, true) == Approx(0.054));
  // A transfer's interval is the kind's measured error alone (model/intervals.hpp), whatever the source's fit.
  const auto gpu = model::transfer_coefficients(held, {"", "NVIDIA L40S", ""}, true);
  // ... for another GPU, the held-out band of its distance to the source (model/gpu_efficiency.hpp).
  CHECK(model::step_half_width(gpu, f, step, false) ==
        Approx(model::shipped_band(model::Distance::another_arch).half_width));
  model::TransferAsk ask{"llama-3-8b", "", ""};
  ask.source_launches = 24000;
  ask.target_launches = 12000;
  const auto m = model::transfer_coefficients(c, ask, true);
  CHECK(model::step_half_width(m, f, step, false) == Approx(model::held_out_error(model::kModelTransfer).unpadded));
  CHECK(model::step_half_width(m, f, step, true) == Approx(model::held_out_error(model::kModelTransfer).padded));
  const auto no_launches = model::transfer_coefficients(c, {"llama-3-8b", "", ""}, true);
  CHECK(model::step_half_width(no_launches, f, step, false) == Approx(0.746));
  // Two transfers add up.
  ask.gpu = "NVIDIA L40S";
  CHECK(model::step_half_width(model::transfer_coefficients(c, ask, true), f, step, false) ==
        Approx(model::held_out_error(model::kModelTransfer).unpadded +
               model::shipped_band(model::Distance::another_arch).half_width));
}

TEST_CASE("the conformal half-width is the ceil(0.9 (n + 1))-th smallest ratio error", "[intervals]") {
  CHECK(model::ratio_error(1.1, 1.0) == Approx(0.1));
  CHECK(model::ratio_error(1.0, 1.1) == Approx(0.1));  // symmetric in the ratio
  std::vector<double> e;
  for (int i = 1; i <= 19; ++i) e.push_back(0.01 * i);
  CHECK(model::conformal_half_width(e) == Approx(0.18));  // ceil(0.9 x 20) = 18th of 19
  e.push_back(0.5);
  CHECK(model::conformal_half_width(e) == Approx(0.19));  // ceil(0.9 x 21) = 19th of 20
  CHECK(model::conformal_half_width({0.02, 0.07, 0.03}) == Approx(0.07));  // too few points: the largest
  CHECK(model::conformal_half_width({}) == 0);
}

TEST_CASE("a model transfer re-prices fixed_s and the host term's launches by the two models' launches", "[transfer]") {
  auto c = h200_like();
  c.launches_per_step = 24000;
  model::TransferAsk ask{"llama-3-8b", "", ""};
  ask.source_launches = 24000;
  ask.target_launches = 12000;
  const auto t = model::transfer_coefficients(c, ask, true);
  // 12 000 fewer launches at 13.3 ms per 1000 (docs/method.md, "Launches").
  CHECK(t.coefficients.step[model::kFixed].value == Approx(0.18 - 12 * 0.0133));
  CHECK(t.coefficients.launches_per_step == Approx(12000));
  CHECK_THAT(t.summary(), Contains("re-priced by kernel launches 24000 -> 12000"));
  // Far fewer launches: the fixed cost stops at 0, not below.
  ask.target_launches = 1000;
  CHECK(model::transfer_coefficients(c, ask, true).coefficients.step[model::kFixed].value == 0);
}

TEST_CASE("without launch counts a model transfer carries the host side as it is", "[transfer]") {
  const auto c = h200_like();
  const auto t = model::transfer_coefficients(c, {"llama-3-8b", "", ""}, true);
  CHECK(t.coefficients.step[model::kFixed].value == 0.18);
  CHECK_THAT(t.summary(), !Contains("re-priced"));
}

TEST_CASE("a model transfer prices activations from the target's architecture, not the source's KiB per token",
          "[transfer]") {
  const auto c = h200_like();  // token_kib 4277 selected, no activation_scale
  const auto t = model::transfer_coefficients(c, {"mixtral-8x7b", "", ""}, true);
  CHECK_FALSE(t.coefficients.memory[model::kMemToken].selected);
  CHECK(t.coefficients.memory[model::kMemActivation].selected);
  CHECK(t.coefficients.memory[model::kMemActivation].value == 1.0);
  CHECK_THAT(t.summary(), Contains("activations from the target's architecture"));
  // A file that fits activation_scale keeps its own (a stack's factor, not a model's).
  auto fitted = h200_like();
  fitted.memory[model::kMemToken] = {};
  fitted.memory[model::kMemActivation] = {0.9, 0.01, true, ""};
  const auto kept = model::transfer_coefficients(fitted, {"mixtral-8x7b", "", ""}, true);
  CHECK(kept.coefficients.memory[model::kMemActivation].value == 0.9);
  CHECK_THAT(kept.summary(), !Contains("activations from"));
  // Another GPU of the same model keeps the model's own bytes per token.
  const auto gpu = model::transfer_coefficients(c, {"", "NVIDIA H100 80GB HBM3", ""}, true);
  CHECK(gpu.coefficients.memory[model::kMemToken].selected);
}

TEST_CASE("a shape outside the fitted domain is extrapolated-shape with a wider interval", "[transfer]") {
  auto c = h200_like();
  c.step_rms_rel = 0.01;
  c.domain = {true, 1, 8, 1024, 16384, 1024, 16384};
  const auto t = model::transfer_coefficients(c, {}, false);
  model::StepFeatures f;
  f.x[model::kFixed] = 1;
  f.x[model::kGemm] = 100;
  const double step = 0.18 + 0.0065 * 100;
  double lo = 0, hi = 0, wide_lo = 0, wide_hi = 0;

  const auto inside = model::at_shape(t, 2, 8192);
  CHECK(inside.provenance == std::vector{model::Provenance::calibrated});
  CHECK(inside.extrapolation.empty());
  REQUIRE(model::step_interval(inside, f, step, false, lo, hi));

  const auto above = model::at_shape(t, 2, 16384);  // 32768 tokens
  CHECK(above.provenance == std::vector{model::Provenance::extrapolated_shape});
  CHECK_THAT(above.extrapolation, Contains("tokens 32768 above the fitted 1024-16384"));
  REQUIRE(model::step_interval(above, f, step, false, wide_lo, wide_hi));
  // The held-out error of shapes up to 4x the fitted tokens (docs/method.md, "Intervals").
  CHECK(wide_hi / step - hi / step == Approx(0.0765));
  CHECK(wide_lo < lo);

  const auto below = model::at_shape(t, 1, 512);
  CHECK_THAT(below.extrapolation, Contains("tokens 512 below"));
  CHECK_THAT(below.extrapolation, Contains("width 512 below the fitted 1024-16384"));
  // A transfer keeps its own provenance and adds the shape's.
  const auto gpu = model::at_shape(model::transfer_coefficients(c, {"", "NVIDIA L40S", ""}, true), 4, 16384);
  CHECK(gpu.provenance ==
        std::vector{model::Provenance::transferred_gpu, model::Provenance::extrapolated_shape});
}

TEST_CASE("an unknown domain makes no claim either way", "[transfer]") {
  const auto t = model::transfer_coefficients(h200_like(), {}, false);
  const auto far = model::at_shape(t, 64, 65536);
  CHECK(far.provenance == std::vector{model::Provenance::calibrated});
  CHECK(far.transfer_half_width.unpadded == t.transfer_half_width.unpadded);
  CHECK(model::domain_text(t.coefficients.domain) == "domain: unknown");
  model::ShapeDomain d{true, 1, 8, 1024, 16384, 1024, 16384};
  CHECK(model::domain_text(d) == "domain: rows 1-8, width 1024-16384, tokens 1024-16384 (the step fit's records)");
}

TEST_CASE("a stack's own attention kernels: FlashAttention 2 on Hopper by the two families' public rates", "[transfer]") {
  const auto c = h200_like();
  const auto& m = model::shipped_efficiency();
  const auto h100 = model::gpu_info("NVIDIA H100 80GB HBM3"), h200 = model::gpu_info("NVIDIA H200");
  model::TransferAsk ask{"", "NVIDIA H100 80GB HBM3", ""};
  const auto plain = model::transfer_coefficients(c, ask, true);
  ask.attention_kernels = "flash2";
  const auto flash = model::transfer_coefficients(c, ask, true);
  const double ratio = m.achieved(h100, model::KernelCategory::attention, 4096).rate /
                       m.achieved(h100, model::KernelCategory::attention, {"flash2", "mma"}, 4096).rate;
  CHECK(ratio > 1.5);  // the public FA2 H100 points run at about half cuDNN's
  CHECK(flash.coefficients.step[model::kAttention].value ==
        Approx(plain.coefficients.step[model::kAttention].value * ratio));
  CHECK(flash.coefficients.step[model::kGemm].value == Approx(plain.coefficients.step[model::kGemm].value));
  CHECK_THAT(flash.summary(), Contains("attention kernels 'flash2' (not sm90's 'cudnn'"));
  CHECK(flash.transfer_half_width.unpadded > plain.transfer_half_width.unpadded);
  // On the calibrated GPU itself, too; an arch whose own family it is changes nothing.
  model::TransferAsk same{"", "", ""};
  same.attention_kernels = "flash2";
  const double own = m.achieved(h200, model::KernelCategory::attention, 4096).rate /
                     m.achieved(h200, model::KernelCategory::attention, {"flash2", "mma"}, 4096).rate;
  CHECK(model::transfer_coefficients(c, same, true).coefficients.step[model::kAttention].value == Approx(0.0083 * own));
  model::TransferAsk a100{"", "NVIDIA A100-SXM4-80GB", ""};
  const double on_a100 = model::transfer_coefficients(c, a100, true).coefficients.step[model::kAttention].value;
  a100.attention_kernels = "flash2";
  CHECK(model::transfer_coefficients(c, a100, true).coefficients.step[model::kAttention].value == Approx(on_a100));
  a100.attention_kernels = "flash9";
  CHECK_THROWS_AS(model::transfer_coefficients(c, a100, true), InputError);
}
