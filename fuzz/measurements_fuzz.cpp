// Fuzz target: measurement records (calibrate/records) through predict, drift and calibrate.
#include "fuzz/fuzz_support.hpp"

using stepcast::fuzz::run_stepcast;
using stepcast::fuzz::scratch_file;
using stepcast::fuzz::shipped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string records = scratch_file(data, size, "records.jsonl");
  run_stepcast({"predict", "--coefficients", shipped("coefficients/h200-hf-peft-sdpa-grouped_mm.yaml"),
                "--measurements", records, "--format", "json"},
               records);
  run_stepcast({"drift", "--coefficients", shipped("coefficients/h200-hf-peft-sdpa-grouped_mm.yaml"), "--measurements",
                records, "--format", "json"},
               records);
#ifdef STEPCAST_WITH_CALIBRATE
  run_stepcast({"calibrate", "--measurements", records, "--prior", "none", "--format", "json"}, records);
#endif
  return 0;
}
