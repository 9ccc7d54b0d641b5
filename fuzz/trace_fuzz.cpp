// Fuzz target: a Chrome trace (kernels/trace_reader), then the analysis stepcast kernels prints; every figure of
// its JSON is a number and every time and count >= 0. The replays add stepcast kernels as a command.
#include "fuzz/fuzz_support.hpp"
#include "kernels/report.hpp"
#include "kernels/trace_reader.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string trace = scratch_file(data, size, "trace.json");
  kernels::KernelTable table;
  if (reads_or_refuses([&] { table = kernels::read_chrome_trace(trace); }, trace))
    computes_or_refuses([&] { check_json_figures(kernels::to_json(kernels::analyze(std::move(table)))); }, "kernels");
  if (whole_commands()) run_stepcast({"kernels", trace, "--format", "json"}, trace);
  return 0;
}
