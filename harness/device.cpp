#include "harness/device.hpp"

#include <torch/version.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <string_view>

#include "kernels/classify.hpp"

#ifdef STEPCAST_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

namespace stepcast::harness {
namespace {

[[maybe_unused]] std::string cuda_version_text(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// The kernel driver's version as /proc reports it ("NVRM version: ... 580.159.04 ..."); "" if unreadable.
[[maybe_unused]] std::string kernel_driver_version() {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Release Build ...": the first dotted number.
  std::ifstream in("/proc/driver/nvidia/version");
  std::string word;
  while (in >> word) {
    const bool dotted = word.find('.') != std::string::npos && std::isdigit(static_cast<unsigned char>(word[0]));
    if (dotted && word.find_first_not_of("0123456789.") == std::string::npos) return word;
  }
  return "";
}

}  // namespace

DeviceInfo device_info(const torch::Device& device) {
  DeviceInfo info;
  info.torch_version = TORCH_VERSION;
#ifdef STEPCAST_WITH_CUDA
  if (device.is_cuda()) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index());
    info.cuda = true;
    info.name = p->name;
    info.compute_major = p->major;
    info.compute_minor = p->minor;
    info.num_sms = p->multiProcessorCount;
    info.total_bytes = static_cast<int64_t>(p->totalGlobalMem);
    info.arch = kernels::arch_label(p->major, p->minor);
    int v = 0;
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) info.cuda_runtime = cuda_version_text(v);
    if (cudaDriverGetVersion(&v) == cudaSuccess) info.cuda_driver = cuda_version_text(v);
    info.driver_version = kernel_driver_version();
  }
#else
  (void)device;
#endif
  return info;
}

struct StepTimer::Impl {
  torch::Device device;
  std::chrono::steady_clock::time_point t0, t1;
#ifdef STEPCAST_WITH_CUDA
  at::cuda::CUDAEvent start{cudaEventDefault};  // timing enabled (the default CUDAEvent disables it)
  at::cuda::CUDAEvent stop{cudaEventDefault};
#endif
  explicit Impl(const torch::Device& d) : device(d) {}
};

StepTimer::StepTimer(const torch::Device& device) : impl_(new Impl(device)) {}
StepTimer::~StepTimer() { delete impl_; }

void StepTimer::start() {
#ifdef STEPCAST_WITH_CUDA
  if (impl_->device.is_cuda()) {
    impl_->start.record();
    return;
  }
#endif
  impl_->t0 = std::chrono::steady_clock::now();
}

void StepTimer::stop() {
#ifdef STEPCAST_WITH_CUDA
  if (impl_->device.is_cuda()) {
    impl_->stop.record();
    return;
  }
#endif
  impl_->t1 = std::chrono::steady_clock::now();
}

double StepTimer::seconds() {
#ifdef STEPCAST_WITH_CUDA
  if (impl_->device.is_cuda()) {
    impl_->stop.synchronize();
    return static_cast<double>(impl_->start.elapsed_time(impl_->stop)) / 1000.0;
  }
#endif
  return std::chrono::duration<double>(impl_->t1 - impl_->t0).count();
}

void synchronize(const torch::Device& device) {
#ifdef STEPCAST_WITH_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();
#else
  (void)device;
#endif
}

int64_t allocated_bytes(const torch::Device& device) {
#ifdef STEPCAST_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return stats.allocated_bytes[0].current;  // [0]: StatType::AGGREGATE
  }
#endif
  (void)device;
  return 0;
}

int64_t peak_allocated_bytes(const torch::Device& device) {
#ifdef STEPCAST_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return stats.allocated_bytes[0].peak;
  }
#endif
  (void)device;
  return 0;
}

void reset_peak(const torch::Device& device) {
#ifdef STEPCAST_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#else
  (void)device;
#endif
}

void release_cached(const torch::Device& device) {
#ifdef STEPCAST_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#else
  (void)device;
#endif
}

bool is_oom(const std::exception& e) {
  const std::string_view what = e.what();
  return what.find("out of memory") != std::string_view::npos || what.find("OutOfMemory") != std::string_view::npos;
}

}  // namespace stepcast::harness
