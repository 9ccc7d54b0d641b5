// The shipped GPU table (scenarios/gpus.yaml): exact names and aliases, never substrings.
#include "catch.hpp"
#include "model/errors.hpp"
#include "model/gpus.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;

TEST_CASE("GPUs are looked up by exact name or alias", "[gpus]") {
  CHECK(model::gpu_info("NVIDIA H200").sm == 90);
  CHECK(model::gpu_info("NVIDIA H200").capacity_gib == Approx(139.8));
  CHECK(model::gpu_info("NVIDIA RTX PRO 6000 Blackwell Workstation Edition").sm == 120);
  // The alias resolves to its entry's name.
  const auto alias = model::gpu_info("NVIDIA RTX PRO 6000 Blackwell");
  CHECK(alias.name == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition");
  CHECK(alias.capacity_gib == Approx(95.0));
}

TEST_CASE("a GH200 is not an H200: no substring matching", "[gpus]") {
  const auto gh = model::gpu_info("NVIDIA GH200 480GB");
  CHECK(gh.name == "NVIDIA GH200 480GB");
  CHECK(gh.capacity_gib != Approx(139.8));
  CHECK(model::gpu_info("NVIDIA H200 NVL").capacity_gib == 0);  // unknown, not the SXM card's
  CHECK_THROWS_AS(model::gpu_info("H200"), InputError);
  CHECK_THROWS_AS(model::gpu_info("NVIDIA H200 "), InputError);
}

TEST_CASE("an AMD device is never sm90", "[gpus]") {
  const auto amd = model::gpu_info("AMD Instinct MI300X");
  CHECK(amd.vendor == "amd");
  CHECK(amd.sm == 0);
  CHECK(model::gpu_info("AMD Instinct MI300X VF").sm == 0);
}

TEST_CASE("an unknown GPU is an error that lists the known ones", "[gpus]") {
  try {
    model::gpu_info("NVIDIA Tesla T4");
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Contains("'NVIDIA Tesla T4' is not in scenarios/gpus.yaml"));
    for (const auto& g : model::known_gpus()) CHECK_THAT(what, Contains("'" + g.name + "'"));
  }
}

TEST_CASE("the compute figures the step model divides by are the datasheets' dense ones", "[gpus]") {
  // Dense BF16 = half the 2:4-sparse datasheet figure (scenarios/gpus.yaml).
  const auto h200 = model::gpu_info("NVIDIA H200").peaks;
  CHECK(h200.bf16_tflops == Approx(989.4));
  CHECK(h200.memory_gbs == Approx(4800));
  CHECK(h200.sms == 132);
  const auto rtx = model::gpu_info("NVIDIA RTX PRO 6000 Blackwell").peaks;
  CHECK(rtx.bf16_tflops == Approx(503.8));
  CHECK(rtx.memory_gbs == Approx(1792));
  // A figure no vendor publishes stays unknown rather than guessed.
  CHECK(model::gpu_info("NVIDIA A10G").peaks.bf16_tflops == 0);
  // Every GPU the issue lists is in the table, with a bandwidth.
  for (const char* name : {"NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-PCIE-40GB",
                           "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL",
                           "NVIDIA H200", "NVIDIA GH200 480GB", "NVIDIA B200", "NVIDIA L40S", "NVIDIA L4",
                           "NVIDIA A10G", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090",
                           "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"}) {
    INFO(name);
    CHECK(model::gpu_info(name).peaks.memory_gbs > 0);
  }
}
