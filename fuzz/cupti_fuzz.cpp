// Fuzz target: a CUPTI kernel table (kernels/cupti_table's parser, on the text), then for an accepted table the
// file read (kernels::read_kernel_table: the format told by its first line) and the analysis stepcast kernels
// prints: every figure of its JSON is a number and every time and count >= 0. The file read allocates a 1 MiB
// window, so only accepted tables pay for it. The replays add stepcast kernels as a command.
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "kernels/cupti_table.hpp"
#include "kernels/report.hpp"
#include "kernels/trace_reader.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = scratch_file(data, size, "table.jsonl");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool parsed = reads_or_refuses([&] { kernels::parse_cupti_table(text, file); }, file);
  kernels::KernelTable table;
  if (parsed && kernels::looks_like_cupti_table(text.substr(0, 256)) &&
      reads_or_refuses([&] { table = kernels::read_kernel_table(file); }, file))
    computes_or_refuses([&] { check_json_figures(kernels::to_json(kernels::analyze(std::move(table)))); }, "kernels");
  if (whole_commands()) run_stepcast({"kernels", file, "--format", "json"}, file);
  return 0;
}
