// Fuzz target: a CUPTI kernel table (kernels/cupti_table) through stepcast kernels.
#include "fuzz/fuzz_support.hpp"

using stepcast::fuzz::run_stepcast;
using stepcast::fuzz::scratch_file;
using stepcast::fuzz::shipped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string table = scratch_file(data, size, "table.jsonl");
  run_stepcast({"kernels", table, "--format", "json"}, table);
  return 0;
}
