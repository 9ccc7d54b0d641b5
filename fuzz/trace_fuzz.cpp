// Fuzz target: a Chrome trace (kernels/trace_reader) through stepcast kernels.
#include "fuzz/fuzz_support.hpp"

using stepcast::fuzz::run_stepcast;
using stepcast::fuzz::scratch_file;
using stepcast::fuzz::shipped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string trace = scratch_file(data, size, "trace.json");
  run_stepcast({"kernels", trace, "--format", "json"}, trace);
  return 0;
}
