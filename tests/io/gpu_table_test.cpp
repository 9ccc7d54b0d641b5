// scenarios/gpus.yaml's reader: the shipped file, and every rule with its file:line:col.
#include "catch.hpp"
#include "temp_file.hpp"
#include "io/gpu_table.hpp"
#include "model/errors.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;

TEST_CASE("the shipped GPU table reads, and is the one compiled in", "[gpus]") {
  const auto table = io::load_gpu_table(STEPCAST_SCENARIOS "/gpus.yaml");
  REQUIRE(table.size() == model::known_gpus().size());
  for (size_t i = 0; i < table.size(); ++i) {
    CHECK(table[i].name == model::known_gpus()[i].name);
    CHECK(table[i].sm == model::known_gpus()[i].sm);
    CHECK(table[i].capacity_gib == model::known_gpus()[i].capacity_gib);
    CHECK(table[i].peaks.bf16_tflops == model::known_gpus()[i].peaks.bf16_tflops);
    CHECK(table[i].peaks.memory_gbs == model::known_gpus()[i].peaks.memory_gbs);
    CHECK(table[i].peaks.sms == model::known_gpus()[i].peaks.sms);
    CHECK(table[i].default_coefficients == model::known_gpus()[i].default_coefficients);
  }
  // The H200 declares its default predictor once; it is a coefficient file beside the table.
  const model::GpuSpec* h200 = model::find_gpu(table, "NVIDIA H200");
  REQUIRE(h200 != nullptr);
  CHECK(h200->default_coefficients == "coefficients/h200-hf-peft-pooled.yaml");
}

TEST_CASE("a default predictor names an existing coefficient file, relative to the table", "[gpus]") {
  // The table's folder is the temp folder: a file that is not there is refused at its key.
  testing::TempFile f("gpus:\n  - name: A\n    vendor: nvidia\n    default_coefficients: coefficients/none.yaml\n", ".yaml");
  try {
    io::load_gpu_table(f.path());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains(f.path() + ":4:27: gpus[0].default_coefficients = 'coefficients/none.yaml'. "
                                                          "Violated constraint: an existing coefficient file"));
  }
}

TEST_CASE("GPU table problems carry file:line:col", "[gpus]") {
  struct Case {
    std::string text, expect;
  };
  const std::string src = "\n    sources: {compute_capability: x}";
  auto c = GENERATE_COPY(values<Case>({
      {"gpus:\n  - name: A\n    vendor: nvidia\n    compute_capability: \"9\"" + src, ":4:25: compute_capability = '9'"},
      {"gpus:\n  - name: A\n    vendor: amd\n    compute_capability: \"9.0\"" + src, "never sm90"},
      {"gpus:\n  - name: A\n    vendor: intel", "vendor"},
      {"gpus:\n  - name: A\n    vendor: nvidia\n    compute_capability: \"9.0\"", "no sources for compute_capability"},
      {"gpus:\n  - name: A\n    vendor: nvidia\n  - name: B\n    aliases: [A]\n    vendor: nvidia",
       "'A' names 'A' already"},
      {"gpus:\n  - name: A\n    vendor: nvidia\n    peak_tflops: 1", "peak_tflops"},
      {"gpus:\n  - name: A\n    vendor: nvidia\n    usable_memory_gib: -1\n    sources: {usable_memory_gib: x}",
       "usable_memory_gib = -1"},
      {"gpus: []", "gpus is missing or empty"},
      {"gpus:\n  - name: A\n    vendor: nvidia\n    peak_bf16_tflops: 900", "no sources for peak_bf16_tflops"},
      {"gpus:\n  - name: A\n    vendor: nvidia\n    memory_bandwidth_gbs: 0\n    sources: {memory_bandwidth_gbs: x}",
       "memory_bandwidth_gbs = 0"},
      {"gpus:\n  - name: A\n    vendor: nvidia\n    sms: 0\n    sources: {sms: x}", "sms = 0"},
  }));
  testing::TempFile f(c.text, ".yaml");
  INFO(c.text);
  try {
    io::load_gpu_table(f.path());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains(c.expect));
  }
}

namespace {
// A minimal valid table: one NVIDIA GPU of sm90 and its arch.
const std::string kArchs =
    "archs:\n  - name: sm90\n    vendor: nvidia\n    native_path: wgmma\n"
    "    kernels: {gemm: blas/wgmma, attention: cudnn/wgmma, attention_efficient: cutlass_efficient/mma, memory: copy}\n";
const std::string kGpu = "gpus:\n  - name: A\n    vendor: nvidia\n    compute_capability: \"9.0\"\n"
                         "    sources: {compute_capability: x}\n";
}  // namespace

TEST_CASE("every GPU's arch is declared once, with a family and path per category", "[gpus]") {
  testing::TempFile ok(kGpu + kArchs, ".yaml");
  const io::GpuTable t = io::load_gpu_tables(ok.path());
  REQUIRE(t.gpus.size() == 1);
  CHECK(t.gpus[0].arch == "sm90");
  REQUIRE(t.archs.size() == 1);
  CHECK(t.archs[0].native_path == "wgmma");
  CHECK(t.archs[0].kernel(model::KernelCategory::attention_efficient).family == "cutlass_efficient");
  CHECK(t.archs[0].kernel(model::KernelCategory::attention_efficient).path == "mma");
  CHECK(t.archs[0].kernel(model::KernelCategory::memory).path.empty());

  struct Case {
    std::string text, expect;
  };
  auto c = GENERATE_COPY(values<Case>({
      {kGpu, "archs is missing or empty"},
      {"gpus:\n  - name: A\n    vendor: nvidia\n    compute_capability: \"8.9\"\n    sources: {compute_capability: x}\n" + kArchs,
       ":2:5: gpus[0]: arch 'sm89' of 'A' is not in archs"},
      {kGpu + kArchs + kArchs.substr(7), "arch 'sm90' is listed twice"},
      {kGpu + "archs:\n  - name: sm90\n    vendor: nvidia\n    native_path: wgmma\n"
              "    kernels: {gemm: blas/wmma, attention: cudnn/wgmma, attention_efficient: x/mma, memory: copy}\n",
       ":10:21: gemm = 'blas/wmma'. Violated constraint: family/path"},
      {kGpu + "archs:\n  - name: sm90\n    vendor: nvidia\n    native_path: wgmma\n"
              "    kernels: {gemm: blas/wgmma, attention: cudnn/wgmma, attention_efficient: x/mma, memory: copy/mma}\n",
       "memory = 'copy/mma'"},
      {kGpu + "archs:\n  - name: sm90\n    vendor: nvidia\n    native_path: wgmma\n    kernels: {gemm: blas/wgmma}\n",
       "attention"},
      {"gpus:\n  - name: M\n    vendor: amd\n" + kArchs, "no arch. Violated constraint: an AMD device names its gfx arch"},
      {"gpus:\n  - name: M\n    vendor: nvidia\n    arch: gfx942\n    sources: {arch: x}\n" + kArchs, "arch on an NVIDIA device"},
      {kGpu + kArchs + "    fp32_lanes_per_sm: 0\n", "fp32_lanes_per_sm"},
  }));
  testing::TempFile f(c.text, ".yaml");
  INFO(c.text);
  try {
    io::load_gpu_tables(f.path());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains(c.expect));
  }
}

TEST_CASE("the shipped archs are the ones compiled in, and every GPU's arch is among them", "[gpus]") {
  const io::GpuTable t = io::load_gpu_tables(STEPCAST_SCENARIOS "/gpus.yaml");
  REQUIRE(t.archs.size() == model::known_archs().size());
  for (size_t i = 0; i < t.archs.size(); ++i) {
    CHECK(t.archs[i].name == model::known_archs()[i].name);
    CHECK(t.archs[i].native_path == model::known_archs()[i].native_path);
    CHECK(t.archs[i].fp32_lanes_per_sm == model::known_archs()[i].fp32_lanes_per_sm);
  }
  // SMs x clock from the FP32 peak: Ampere's GA100 has half the lanes of the later archs.
  CHECK(model::find_arch(model::known_archs(), "sm80")->fp32_lanes_per_sm == 64);
  CHECK(model::find_arch(model::known_archs(), "sm90")->fp32_lanes_per_sm == 128);
  for (const auto& g : model::known_gpus()) {
    INFO(g.name);
    CHECK(model::find_arch(model::known_archs(), g.arch) != nullptr);
  }
  // The seed's finding as data: the memory-efficient kernels are sm80 code on every NVIDIA arch.
  for (const char* arch : {"sm90", "sm100", "sm120"})
    CHECK(model::find_arch(model::known_archs(), arch)->kernel(model::KernelCategory::attention_efficient).path == "mma");
  CHECK(model::find_arch(model::known_archs(), "sm90")->native_path == "wgmma");
}
