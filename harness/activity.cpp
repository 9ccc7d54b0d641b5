#include "harness/activity.hpp"

#include "model/errors.hpp"

namespace stepcast::harness {

std::vector<ActivityRecord> ReplaySource::stop() {
  if (!started_) throw Error("ReplaySource::stop() without start()");
  started_ = false;
  return records_;
}

LaunchCounts count_launches(const std::vector<ActivityRecord>& records, int64_t short_threshold_ns) {
  LaunchCounts c;
  for (const auto& r : records) {
    if (r.kind == "kernel") {
      ++c.kernels;
      c.kernel_ns += r.duration_ns();
      if (r.duration_ns() < short_threshold_ns) ++c.short_kernels;
    } else if (r.kind == "memcpy") {
      ++c.memcpy;
      c.copy_ns += r.duration_ns();
    } else if (r.kind == "memset") {
      ++c.memset;
      c.copy_ns += r.duration_ns();
    }
  }
  return c;
}

kernels::CuptiTable build_kernel_table(const std::vector<ActivityRecord>& records, kernels::CuptiTableHeader header) {
  kernels::CuptiTableBuilder builder(std::move(header));
  for (const auto& r : records) builder.add(r.name, r.kind, r.duration_ns());
  return builder.table();
}

#ifndef STEPCAST_WITH_CUPTI
std::unique_ptr<ActivitySource> make_cupti_source() { return nullptr; }
#endif

}  // namespace stepcast::harness
