#pragma once
// Streaming readers of device activity: torch.profiler / Kineto Chrome traces (`.json`, `.json.gz`) and
// the harness's CUPTI tables. A Chrome trace is tokenized in one pass over a 1 MiB window of the
// (decompressed) bytes; only the device events' names, durations and the device properties are kept,
// so memory follows the number of distinct kernel names, not the file size.
#include <cstdint>
#include <filesystem>
#include <string>

#include "kernels/table.hpp"

namespace stepcast::kernels {

struct ReadOptions {
  double short_threshold_s = 10e-6;  // launches shorter than this count as "short" (launch-bound signal)
};

// Reads either format (a CUPTI table is recognised by its first line). Throws stepcast::InputError on a
// missing, malformed or truncated file; Chrome-trace messages name the byte offset (of the decompressed
// stream for .gz) where the JSON went wrong.
KernelTable read_kernel_table(const std::filesystem::path& path, const ReadOptions& options = {});

// The Chrome-trace reader alone.
KernelTable read_chrome_trace(const std::filesystem::path& path, const ReadOptions& options = {});

}  // namespace stepcast::kernels
