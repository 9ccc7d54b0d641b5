#pragma once
// Kernel-name classification: which category of work a device kernel does, which library built it
// and for which GPU architecture. Names are what CUPTI, roctracer and torch.profiler report (demangled
// C++ or the library's own kernel names), e.g.
//   fmha_cutlassB_bf16_aligned_128x64_k65536_sm80      -> attention / backward / CUTLASS 2.x / sm80
//   cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_...  -> attention / forward / cuDNN / sm90
//   nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT         -> gemm / cuBLAS (no arch in the name)
//   ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)     -> communication / all_reduce / NCCL
// The rules are data, in one table in kernels/classify.cpp (docs/kernels.md lists them). They match the
// kernel's own name: demangled, without its return type and argument list (the argument list names
// helper types such as cudnn::reduced_divisor that say nothing about the work).
// Shared with the harness, which classifies its CUPTI tables with the same function.
// Pure standard library: no CUDA, no JSON.
#include <string>
#include <string_view>
#include <vector>

namespace stepcast::kernels {

// The fixed category names of the JSON output, in report order.
inline constexpr const char* kCategoryNames[] = {"attention",   "gemm",      "grouped_gemm", "convolution",
                                                 "communication", "elementwise", "reduction", "copy",
                                                 "other"};

// The collective a communication kernel runs, when its name (or the trace) says.
inline constexpr const char* kCollectiveNames[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                                   "send_recv",  "broadcast",  "reduce"};

struct KernelClass {
  std::string category = "other";  // one of kCategoryNames
  std::string direction;           // attention only: "forward", "backward", or "" when the name does not say
  std::string library = "unknown"; // "cuDNN", "cuBLAS", "cuBLASLt", "CUTLASS 2.x", "CUTLASS 3.x", "FlashAttention",
                                   // "Triton", "DeepGEMM", "Tensile", "hipBLASLt", "composable_kernel", "NCCL", "Gloo",
                                   // "DeepEP", "NVSHMEM", "FBGEMM", "ATen", "CUB", "CUDA" (memcpy/memset), "unknown"
  std::string arch;                // "sm80", "sm90", "sm120", "gfx90a"...; "" when the name does not say
  std::string tier;                // a named fallback tier, e.g. "gmem" (CUTLASS attention forward that
                                   // streams K/V from global memory instead of shared memory); "" if none
  std::string collective;          // communication only: one of kCollectiveNames, "" when the name does not say
};

// Classifies one kernel name (demangled first when mangled). Never throws; unknown names give category "other", library "unknown".
KernelClass classify_kernel(std::string_view name);

// Itanium-mangled names (CUPTI reports some kernels as "_ZN7cutlass13device_kernel...") demangled as
// Kineto does (abi::__cxa_demangle); any other name, or one that does not demangle, is returned as it is.
std::string demangle(std::string_view name);

// The kernel's own name: demangled, without the return type ("void ", "std::enable_if<...>::type ") and
// without the argument list; template arguments kept. "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, 512>(
// cudnnTensorStruct, cudnn::reduced_divisor)" -> "cudnn::bn_fw_tr_1C11_kernel_NCHW<float, 512>".
std::string kernel_signature(std::string_view name);

// Memcpy / memset activity records (CUPTI kinds, or Chrome-trace cat "gpu_memcpy"/"gpu_memset") are always
// category "copy" whatever their name says.
KernelClass classify_copy(std::string_view name);

// The collective named by Kineto's "Collective name" argument of a NCCL kernel ("allreduce",
// "all_to_allv", "_reduce_scatter_base", ...): one of kCollectiveNames, or "" when it is none of them.
std::string collective_from_arg(std::string_view collective_name);

// "sm80" -> 80, "sm120" -> 120, "" or anything else (gfx names too) -> 0.
int arch_number(std::string_view arch);

// Compute capability -> arch label: (9, 0) -> "sm90", (12, 0) -> "sm120"; (0, 0) -> "".
std::string arch_label(int compute_major, int compute_minor);

}  // namespace stepcast::kernels
