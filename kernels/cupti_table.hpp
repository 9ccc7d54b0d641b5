#pragma once
// The harness's CUPTI kernel table: one file per measured point, JSON Lines, written beside the
// measurement records (docs/kernels.md, "CUPTI kernel tables"). No CUDA dependency: the harness feeds
// durations from CUPTI activity records into CuptiTableBuilder; `stepcast kernels` reads the file back.
//
// Line 1, the header (the first key must be "stepcast_cupti_table", the format version):
//   {"stepcast_cupti_table": 1, "device": "NVIDIA H200", "compute_major": 9, "compute_minor": 0,
//    "num_sms": 132, "steps": 1, "short_threshold_ns": 10000, "label": "gemma-4 2x2048 sdpa-auto/grouped"}
// Lines 2..n, one per distinct kernel name and kind, sorted by total_ns (largest first):
//   {"name": "fmha_cutlassB_bf16_aligned_128x64_k65536_sm80", "kind": "kernel", "count": 30,
//    "total_ns": 16144600000, "min_ns": 531000000, "max_ns": 546000000,
//    "short_count": 0, "short_ns": 0}
// kind is "kernel", "memcpy" or "memset"; short_* count the launches shorter than the header's
// short_threshold_ns (the launch-bound signal). Unknown keys are errors, as in all our files.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stepcast::kernels {

inline constexpr int kCuptiTableVersion = 1;
inline constexpr int64_t kDefaultShortThresholdNs = 10'000;  // 10 µs: about 2-3x a kernel launch's CPU cost

struct CuptiTableHeader {
  std::string device;      // as the driver reports it, e.g. "NVIDIA H200"
  int compute_major = 0;   // cudaDeviceProp::major
  int compute_minor = 0;   // cudaDeviceProp::minor
  int num_sms = 0;         // cudaDeviceProp::multiProcessorCount
  int64_t steps = 1;       // optimizer/micro steps the activity window covers (launches per step = count / steps)
  int64_t short_threshold_ns = kDefaultShortThresholdNs;
  std::string label;       // free text: model, batch, tier
};

struct CuptiKernelRow {
  std::string name;
  std::string kind = "kernel";  // "kernel", "memcpy", "memset"
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  int64_t short_count = 0;  // launches with duration < short_threshold_ns
  int64_t short_ns = 0;     // their total duration
};

struct CuptiTable {
  CuptiTableHeader header;
  std::vector<CuptiKernelRow> rows;
};

// Accumulates activity records (one call per kernel / memcpy / memset) into rows.
class CuptiTableBuilder {
 public:
  explicit CuptiTableBuilder(CuptiTableHeader header) : header_(std::move(header)) {}
  void add(std::string_view name, std::string_view kind, int64_t duration_ns);
  CuptiTable table() const;  // rows sorted by total_ns, largest first (ties by name)

 private:
  CuptiTableHeader header_;
  std::unordered_map<std::string, CuptiKernelRow> rows_;  // keyed by kind + '\n' + name
};

// The JSON Lines text of a table (header line first).
std::string cupti_table_to_jsonl(const CuptiTable& table);

// Writes atomically (a temporary file beside `path`, then rename). Throws stepcast::Error on I/O failure.
void write_cupti_table(const CuptiTable& table, const std::filesystem::path& path);

// Parses a table; throws stepcast::InputError listing every problem as `file:line:col: ...`.
CuptiTable parse_cupti_table(std::string_view text, const std::string& source_name);
CuptiTable read_cupti_table(const std::filesystem::path& path);

// True when `first_bytes` (the start of a file) looks like a CUPTI table rather than a Chrome trace.
bool looks_like_cupti_table(std::string_view first_bytes);

}  // namespace stepcast::kernels
