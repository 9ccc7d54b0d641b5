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
  CHECK(h200->default_coefficients == "coefficients/h200-gemma4-categories.yaml");
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
