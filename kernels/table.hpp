#pragma once
// What a trace or a CUPTI table says about device work, before any classification: one row per
// distinct kernel (or memcpy / memset) name, and the device it ran on.
#include <cstdint>
#include <string>
#include <vector>

namespace stepcast::kernels {

struct DeviceInfo {
  std::string name;       // "NVIDIA H200"; "" when the source does not say
  std::string vendor;     // "NVIDIA", "AMD"; "" when the source does not say
  int compute_major = 0;  // 0 when unknown. On ROCm, Kineto writes hipDeviceProp's major/minor here
  int compute_minor = 0;  // (9.0 on an MI250, 9.4 on an MI300X), not an NVIDIA compute capability.
  int num_sms = 0;        // streaming multiprocessors (NVIDIA) or compute units (AMD)
  std::string gcn_arch;   // AMD's gcnArchName ("gfx90a:sramecc+:xnack-") when the trace has it
};

// Where one device activity ran: [start_s, end_s) from the trace's first device activity, and its row in
// KernelTable::kernels.
struct Activity {
  double start_s = 0;
  double end_s = 0;
  uint32_t kernel = 0;
};

struct KernelStat {
  std::string name;
  std::string kind = "kernel";  // "kernel", "memcpy", "memset"
  std::string collective;       // a NCCL kernel's "Collective name" argument (Kineto writes it since PyTorch 2.1,
                                // and ncclDevKernel_Generic names none); rows are per name and collective
  std::string launched_by;      // "convolution" for the launches of a convolution operator (cuDNN runs some
                                // convolutions as cuBLAS GEMMs); rows are per name, collective and launcher
  int64_t count = 0;
  double time_s = 0;        // sum of the launches' durations
  int64_t short_count = 0;  // launches shorter than KernelTable::short_threshold_s
  double short_time_s = 0;
};

struct KernelTable {
  std::string source;          // the file it came from
  std::string format;          // "chrome_trace" or "cupti_table"
  DeviceInfo device;
  std::vector<KernelStat> kernels;
  int64_t steps = 0;           // ProfilerStep#N markers (Chrome) or the table header; 0 = not said
  double short_threshold_s = 10e-6;
  // Chrome traces only (0 when unknown): first device-activity start to last end, and the time at least
  // one kernel/copy was running (union of the intervals over all streams).
  double window_s = 0;
  double busy_s = 0;
  int64_t host_events = 0;         // Chrome traces: events that are not device activity (cpu_op, python_function...)
  std::vector<Activity> activity;  // Chrome traces: every device activity, in trace order; empty for CUPTI tables
};

}  // namespace stepcast::kernels
