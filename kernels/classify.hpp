#pragma once
// Kernel-name classification: which category of work a device kernel does, which library built it
// and for which GPU architecture. Names are what CUPTI and torch.profiler report (demangled C++ or
// the library's own kernel names), e.g.
//   fmha_cutlassB_bf16_aligned_128x64_k65536_sm80      -> attention / backward / CUTLASS 2.x / sm80
//   cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_...  -> attention / forward / cuDNN / sm90
//   nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT         -> gemm / cuBLAS (no arch in the name)
// Shared with the harness (issue 5), which classifies its CUPTI tables with the same function.
// Pure standard library: no CUDA, no JSON.
#include <string>
#include <string_view>
#include <vector>

namespace stepcast::kernels {

// The fixed category names of the JSON output (issue 6), in report order.
inline constexpr const char* kCategoryNames[] = {"attention",   "gemm", "grouped_gemm", "elementwise",
                                                 "reduction",   "copy", "other"};

struct KernelClass {
  std::string category = "other";  // one of kCategoryNames
  std::string direction;           // attention only: "forward", "backward", or "" when the name does not say
  std::string library = "unknown"; // "cuDNN", "CUTLASS 2.x", "CUTLASS 3.x", "cuBLAS", "FlashAttention",
                                   // "Triton", "ATen", "CUB", "NCCL", "CUDA" (memcpy/memset), "unknown"
  std::string arch;                // "sm80", "sm90", "sm120"...; "" when the name does not say
  std::string tier;                // a named fallback tier, e.g. "gmem" (CUTLASS attention forward that
                                   // streams K/V from global memory instead of shared memory); "" if none
};

// Classifies one kernel name (demangled first when mangled). Never throws; unknown names give category "other", library "unknown".
KernelClass classify_kernel(std::string_view name);

// Itanium-mangled names (CUPTI reports some kernels as "_ZN7cutlass13device_kernel...") demangled as
// Kineto does (abi::__cxa_demangle); any other name, or one that does not demangle, is returned as it is.
std::string demangle(std::string_view name);

// Memcpy / memset activity records (CUPTI kinds, or Chrome-trace cat "gpu_memcpy"/"gpu_memset") are always
// category "copy" whatever their name says.
KernelClass classify_copy(std::string_view name);

// "sm80" -> 80, "sm120" -> 120, "" or anything else -> 0.
int arch_number(std::string_view arch);

// Compute capability -> arch label: (9, 0) -> "sm90", (12, 0) -> "sm120"; (0, 0) -> "".
std::string arch_label(int compute_major, int compute_minor);

}  // namespace stepcast::kernels
