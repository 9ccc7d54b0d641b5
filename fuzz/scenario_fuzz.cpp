// Fuzz target: a scenario (io/scenario_io) through plan, baseline only (the sweep is bounded separately).
#include "fuzz/fuzz_support.hpp"

using stepcast::fuzz::run_stepcast;
using stepcast::fuzz::scratch_file;
using stepcast::fuzz::shipped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string scenario = scratch_file(data, size, "scenario.yaml");
  run_stepcast({"plan", scenario, "--no-sweep", "--format", "json"}, scenario);
  return 0;
}
