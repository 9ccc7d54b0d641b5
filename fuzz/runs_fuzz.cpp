// Fuzz target: recorded runs (calibrate/run_records) through validate --run.
#include "fuzz/fuzz_support.hpp"

using stepcast::fuzz::run_stepcast;
using stepcast::fuzz::scratch_file;
using stepcast::fuzz::shipped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
#ifdef STEPCAST_WITH_CALIBRATE
  const std::string runs = scratch_file(data, size, "runs.jsonl");
  run_stepcast({"validate", "--run", runs, "--coefficients", shipped("coefficients/h200-hf-peft-sdpa-grouped_mm.yaml"),
                "--format", "json"},
               runs);
#else
  (void)data, (void)size;
#endif
  return 0;
}
