#pragma once
// From a kernel table to what a person needs: time by category (attention split forward / backward),
// library and arch of every kernel, diagnosis lines, and the before/after comparison of two tables.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/classify.hpp"
#include "kernels/table.hpp"

namespace stepcast::kernels {

struct KernelRow {
  KernelStat stat;
  KernelClass cls;
  double share = 0;  // of device time
};

struct Share {
  double time_s = 0;
  double share = 0;
};

struct Diagnostic {
  std::string kind;     // older_arch, fallback_tier, launch_bound, attention_share, gemm_share, ...
  std::string message;  // one line in plain words
  double share = 0;     // the share of device time the line is about
};

struct Report {
  KernelTable table;                         // the input, kernels as read (activity dropped after analysis)
  std::string device_arch;                   // "sm90", "gfx90a"; "" when unknown
  double device_time_s = 0;                  // kernels + memcpy + memset, summed over streams
  std::map<std::string, Share> categories;   // every name of kCategoryNames
  std::map<std::string, Share> attention_by_direction;  // "forward", "backward", "unknown"
  std::map<std::string, Share> communication_by_collective;  // kCollectiveNames and "unknown"
  // Communication time (the union over streams) during which no compute kernel ran; < 0 when the input
  // has no timeline (a CUPTI table).
  double communication_exposed_s = -1;
  double communication_union_s = 0;
  std::vector<KernelRow> kernels;            // by time, largest first
  int64_t launches = 0;                      // kernel launches (memcpy/memset not counted)
  int64_t steps = 1;                         // the table's steps, 1 when it does not say
  double launches_per_step = 0;
  double short_time_share = 0;               // of device time, in launches shorter than the threshold
  double short_launch_share = 0;             // of launches
  std::vector<Diagnostic> diagnostics;
};

struct AnalyzeOptions {
  // A short-kernel time share at or above this is called a launch-bound signal: with most of the time in
  // kernels of a few µs, the CPU's ~5 µs per launch, not the GPU, sets the pace.
  double launch_bound_share = 0.25;
};

Report analyze(KernelTable table, const AnalyzeOptions& options = {});

struct Change {
  std::string name;      // kernel name, or the category ("attention backward") in category changes
  double before_s = 0;
  double after_s = 0;
  double delta_s = 0;    // after - before
  std::string status;    // "appeared", "vanished", "changed"
  std::string category;  // of the kernel
  std::string direction;
};

struct Comparison {
  std::vector<std::string> warnings;     // e.g. the two traces ran on different devices
  std::vector<Change> changes;           // per kernel name, by |delta_s|, largest first
  std::vector<Change> category_changes;  // per category (attention split by direction), by |delta_s|
  double before_device_time_s = 0;
  double after_device_time_s = 0;
};

Comparison compare(const Report& before, const Report& after);

nlohmann::json to_json(const Report& report);
nlohmann::json to_json(const Comparison& comparison);

// The device's arch label: "sm90" for NVIDIA (compute capability 9.0), AMD's gfx name ("gfx90a" from
// gcnArchName, or from hipDeviceProp's major/minor where the trace has only those), "" when unknown.
std::string device_arch(const DeviceInfo& device);

// "65.2" for 0.6524: percentages as the messages print them.
std::string percent(double share);

}  // namespace stepcast::kernels
