#pragma once
// Device activity (kernels, memcpy, memset) behind one interface, after Kineto's CuptiActivityApi and its
// fake: the CUPTI collector on a CUDA build, a replay of recorded activity in tests. The table logic
// (kernel table, launch counts) only ever sees ActivityRecords, so it is tested without a GPU.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cupti_table.hpp"

namespace stepcast::harness {

struct ActivityRecord {
  std::string kind;  // "kernel", "memcpy", "memset" (the kernel-table format's kinds)
  std::string name;  // demangled kernel name, or "Memcpy DtoD (Device -> Device)", "Memset (Device)"
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  virtual void start() = 0;                       // begin collecting
  virtual std::vector<ActivityRecord> stop() = 0;  // synchronize, flush every buffer, stop, return the window
};

// Hands back the records it was built with, once per start/stop window.
class ReplaySource : public ActivitySource {
 public:
  explicit ReplaySource(std::vector<ActivityRecord> records) : records_(std::move(records)) {}
  void start() override { started_ = true; }
  std::vector<ActivityRecord> stop() override;

 private:
  std::vector<ActivityRecord> records_;
  bool started_ = false;
};

// The CUPTI Activity API collector (CONCURRENT_KERNEL, MEMCPY, MEMSET); nullptr on a build without CUPTI.
std::unique_ptr<ActivitySource> make_cupti_source();

struct LaunchCounts {
  int64_t kernels = 0;
  int64_t memcpy = 0;
  int64_t memset = 0;
  int64_t kernel_ns = 0;    // summed kernel durations (overlapping kernels counted twice, as profilers do)
  int64_t copy_ns = 0;      // memcpy + memset
  int64_t short_kernels = 0;  // kernels shorter than the table's short threshold (launch-bound signal)
};

LaunchCounts count_launches(const std::vector<ActivityRecord>& records,
                            int64_t short_threshold_ns = kernels::kDefaultShortThresholdNs);

// The kernel table: one row per distinct kind + name, largest total first.
kernels::CuptiTable build_kernel_table(const std::vector<ActivityRecord>& records, kernels::CuptiTableHeader header);

}  // namespace stepcast::harness
