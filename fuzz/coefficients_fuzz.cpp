// Fuzz target: a coefficient file (io/coefficients_io) through predict and drift.
#include "fuzz/fuzz_support.hpp"

using stepcast::fuzz::run_stepcast;
using stepcast::fuzz::scratch_file;
using stepcast::fuzz::shipped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string coefficients = scratch_file(data, size, "coefficients.yaml");
  run_stepcast({"predict", "--coefficients", coefficients, "--rows", "1024,512", "--format", "json"}, coefficients);
  run_stepcast({"drift", "--coefficients", coefficients, "--measurements", shipped("measurements/h200-hf-peft.jsonl"),
                "--format", "json"},
               coefficients);
  return 0;
}
