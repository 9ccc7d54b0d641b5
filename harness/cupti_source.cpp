// The CUPTI Activity API collector (built only with CUDA LibTorch and CUDA::cupti). Buffers are handed
// to CUPTI on request and parsed when CUPTI completes them; stop() synchronizes the device and forces a
// flush, so each measured point's window holds exactly its own activity.
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>

#include <cstdlib>
#include <mutex>

#include "harness/activity.hpp"
#include "model/errors.hpp"

#define CUPTI_CHECK(call)                                                                       \
  do {                                                                                          \
    const CUptiResult cupti_status_ = (call);                                                   \
    if (cupti_status_ != CUPTI_SUCCESS) {                                                       \
      const char* cupti_message_ = nullptr;                                                     \
      cuptiGetResultString(cupti_status_, &cupti_message_);                                     \
      throw ::stepcast::Error(std::string(#call) + " failed: " +                                \
                              (cupti_message_ != nullptr ? cupti_message_ : "unknown CUPTI error")); \
    }                                                                                           \
  } while (0)

#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    const cudaError_t cuda_status_ = (call);                                                      \
    if (cuda_status_ != cudaSuccess)                                                              \
      throw ::stepcast::Error(std::string(#call) + " failed: " + cudaGetErrorString(cuda_status_)); \
  } while (0)

namespace stepcast::harness {
namespace {

constexpr size_t kBufferBytes = 16u << 20;  // 16 MiB per CUPTI buffer: a 26B step launches ~10^5 kernels
constexpr size_t kBufferAlign = 8;          // CUPTI requires 8-byte aligned activity buffers

std::mutex g_mutex;
std::vector<ActivityRecord> g_records;  // filled by CUPTI's buffer-completed callback (any thread)

std::string demangle(const char* name) {
  if (name == nullptr) return "<unnamed>";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;  // C names (cuDNN, cuBLAS "nvjet_...") are not mangled
  std::string s(out);
  std::free(out);
  return s;
}

const char* memcpy_name(uint8_t copy_kind) {  // as Kineto names them
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "Memcpy HtoD (Host -> Device)";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "Memcpy DtoH (Device -> Host)";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "Memcpy DtoD (Device -> Device)";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "Memcpy PtoP (Device -> Device)";
    default: return "Memcpy (other)";
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  std::vector<ActivityRecord> batch;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      batch.push_back({"kernel", demangle(k->name), static_cast<int64_t>(k->start), static_cast<int64_t>(k->end)});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      batch.push_back({"memcpy", memcpy_name(m->copyKind), static_cast<int64_t>(m->start), static_cast<int64_t>(m->end)});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      batch.push_back({"memset", "Memset (Device)", static_cast<int64_t>(m->start), static_cast<int64_t>(m->end)});
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_records.insert(g_records.end(), batch.begin(), batch.end());
}

class CuptiSource : public ActivitySource {
 public:
  void start() override {
    static std::once_flag registered;
    std::call_once(registered, [] { CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)); });
    CUDA_CHECK(cudaDeviceSynchronize());
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_records.clear();
    }
    CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  }

  std::vector<ActivityRecord> stop() override {
    CUDA_CHECK(cudaDeviceSynchronize());
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    CUPTI_CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CUPTI_CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY));
    CUPTI_CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET));
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::lock_guard<std::mutex> lock(g_mutex);
    std::vector<ActivityRecord> out;
    out.swap(g_records);
    return out;
  }
};

}  // namespace

std::unique_ptr<ActivitySource> make_cupti_source() { return std::make_unique<CuptiSource>(); }

}  // namespace stepcast::harness
