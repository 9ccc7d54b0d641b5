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
