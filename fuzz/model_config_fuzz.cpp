// Fuzz target: a Hugging Face config.json (io/model_config) through describe and predict.
#include "fuzz/fuzz_support.hpp"

using stepcast::fuzz::run_stepcast;
using stepcast::fuzz::scratch_file;
using stepcast::fuzz::shipped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string config = scratch_file(data, size, "config.json");
  run_stepcast({"describe", "--model", config, "--width", "4096", "--format", "json"}, config);
  run_stepcast({"predict", "--coefficients", shipped("coefficients/h200-hf-peft-sdpa-grouped_mm.yaml"), "--model",
                config, "--rows", "512,256", "--format", "json"},
               config);
  return 0;
}
