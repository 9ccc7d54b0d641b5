#pragma once
// The device side of a measurement: CUDA-event timing, the caching allocator's statistics and the
// device's identity. On a CPU build (CI) the same calls time with a steady clock and report no memory.
#include <torch/torch.h>

#include <cstdint>
#include <exception>
#include <string>

namespace stepcast::harness {

struct DeviceInfo {
  bool cuda = false;
  std::string name = "cpu";     // as the driver reports it ("NVIDIA H200")
  int compute_major = 0;
  int compute_minor = 0;
  int num_sms = 0;
  int64_t total_bytes = 0;
  std::string arch;             // "sm90"
  std::string torch_version;    // LibTorch's TORCH_VERSION
  std::string cuda_runtime;     // "13.0"
  std::string cuda_driver;      // the driver's CUDA version, "13.0"
  std::string driver_version;   // the kernel driver, from nvidia-smi's source of truth when readable ("580.159.04")
};

DeviceInfo device_info(const torch::Device& device);

// Elapsed device time between start() and stop(): CUDA events on the current stream (the host does not
// wait at start), or a steady clock after a synchronize on CPU.
class StepTimer {
 public:
  explicit StepTimer(const torch::Device& device);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  void start();
  void stop();
  double seconds();  // waits for stop's event

 private:
  struct Impl;
  Impl* impl_;
};

void synchronize(const torch::Device& device);
int64_t allocated_bytes(const torch::Device& device);       // current, caching allocator; 0 on CPU
int64_t peak_allocated_bytes(const torch::Device& device);  // since the last reset_peak
void reset_peak(const torch::Device& device);
void release_cached(const torch::Device& device);           // emptyCache: free blocks back to the driver

// True for the caching allocator's out-of-memory error (c10::OutOfMemoryError, "CUDA out of memory").
bool is_oom(const std::exception& e);

}  // namespace stepcast::harness
