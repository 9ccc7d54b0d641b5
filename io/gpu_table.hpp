#pragma once
// scenarios/gpus.yaml → the GPU table (model/gpus.hpp). Read at build time by stepcast_gpu_table, which
// writes the C++ initialiser model/gpus.cpp compiles in, and by tests; every problem with file:line:col.
#include <string>
#include <vector>

#include "model/gpus.hpp"

namespace stepcast::io {

// Parses and checks the table: names and aliases unique across entries, vendor nvidia or amd, compute
// capability "<major>.<minor>" (NVIDIA only: an AMD device has none), usable memory > 0, and a source for
// every figure given. Unknown keys are errors (a typo must never become a missing figure).
std::vector<model::GpuSpec> load_gpu_table(const std::string& path);

// The whole file: the GPUs and the archs (each arch's native tensor path and the kernel family and path of
// every category: gemm, attention, attention_efficient as "family/path" with path one of mma, wgmma, tcgen05,
// mfma; memory as a family alone). Every GPU's arch must be listed, each arch once.
struct GpuTable {
  std::vector<model::GpuSpec> gpus;
  std::vector<model::ArchSpec> archs;
};
GpuTable load_gpu_tables(const std::string& path);

// The entries as the body of a C++ brace initialiser of std::vector<model::GpuSpec>.
std::string gpu_table_initialiser(const std::vector<model::GpuSpec>& table);
// The archs as the body of a C++ brace initialiser of std::vector<model::ArchSpec>.
std::string arch_table_initialiser(const std::vector<model::ArchSpec>& archs);
// `s` as a C++ string literal (quotes and backslashes escaped), for the generated initialisers here and in
// io/public_measurements.cpp.
std::string quoted(const std::string& s);

}  // namespace stepcast::io
