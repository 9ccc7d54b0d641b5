#include "kernels/classify.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace stepcast::kernels {
namespace {

bool has(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

bool starts(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Demangled names start with the return type ("void ") and may be prefixed by a namespace path;
// the library's own kernel names (cuBLAS, cuDNN) have neither.
std::string_view strip_void(std::string_view name) {
  if (starts(name, "void ")) name.remove_prefix(5);
  return name;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The first "sm<digits>" in the name: lower-case "sm80"/"sm_90a" must not be glued to a preceding
// lower-case letter (so "dsm100" or "transform80" do not count); CamelCase "Sm90" (cutlass::arch::Sm80,
// FlashAttnFwdSm90) counts anywhere. Two or three digits: sm70 ... sm120.
std::string arch_in_name(std::string_view name) {
  for (size_t i = 0; i + 3 < name.size(); ++i) {
    const char c0 = name[i];
    if (!((c0 == 's' || c0 == 'S') && name[i + 1] == 'm')) continue;
    if (c0 == 's' && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1]))) continue;
    size_t j = i + 2;
    if (j < name.size() && name[j] == '_') ++j;
    size_t k = j;
    while (k < name.size() && std::isdigit(static_cast<unsigned char>(name[k]))) ++k;
    const size_t digits = k - j;
    if (digits == 2 || digits == 3) return "sm" + std::string(name.substr(j, digits));
  }
  // CUTLASS 2.x kernels inside cuBLAS say their arch as "cutlass_80_..."; legacy cuBLAS kernels by codename.
  static const std::array<std::pair<std::string_view, std::string_view>, 5> prefixes{
      {{"cutlass_", ""}, {"ampere_", "sm80"}, {"turing_", "sm75"}, {"volta_", "sm70"}, {"hopper_", "sm90"}}};
  for (const auto& [prefix, arch] : prefixes) {
    const size_t at = name.find(prefix);
    if (at == std::string_view::npos) continue;
    if (!arch.empty()) return std::string(arch);
    const std::string_view rest = name.substr(at + prefix.size());
    if (rest.size() >= 3 && std::isdigit(static_cast<unsigned char>(rest[0])) &&
        std::isdigit(static_cast<unsigned char>(rest[1])) && rest[2] == '_')
      return "sm" + std::string(rest.substr(0, 2));
  }
  return "";
}

std::string library_of(std::string_view name, const std::string& low) {
  const std::string_view n = strip_void(name);
  if (has(low, "cudnn")) return "cuDNN";
  if (has(low, "flash_fwd") || has(low, "flash_bwd") || has(n, "flash::") || has(low, "flashattn") ||
      has(n, "pytorch_flash"))
    return "FlashAttention";
  if (starts(n, "triton_") || starts(n, "triton::")) return "Triton";
  if (starts(n, "nvjet") || has(low, "xmma") || has(low, "cublas") || starts(n, "ampere_") || starts(n, "turing_") ||
      starts(n, "volta_") || has(low, "gemv") || has(n, "splitKreduce") || has(n, "gemmSN") || has(n, "gemmk1"))
    return "cuBLAS";
  // "cutlass13device_kernel", "4cute": the same in a mangled name that did not demangle (CUPTI cuts long names).
  if (has(n, "cutlass3x") || has(n, "cutlass::device_kernel") || has(n, "cutlass13device_kernel") || has(n, "4cute5") || has(n, "GemmUniversal<cutlass::gemm::GroupProblemShape") ||
      has(n, "cute::"))
    return "CUTLASS 3.x";
  if (has(low, "cutlass") || starts(n, "fmha_")) return "CUTLASS 2.x";
  if (starts(n, "nccl") || has(n, "ncclDevKernel") || has(n, "ncclKernel")) return "NCCL";
  if (starts(n, "cub::") || has(n, "cub::")) return "CUB";
  if (has(n, "at::") || has(n, "c10::") || has(n, "indexing_backward_kernel") || has(n, "fused_dropout") ||
      has(n, "cunn_") || has(n, "(anonymous namespace)::"))
    return "ATen";
  return "unknown";
}

std::string attention_direction(std::string_view name, const std::string& low) {
  if (has(low, "dot_do_o") || has(low, "convert_dq")) return "backward";
  if (has(name, "cutlassB") || has(low, "bwd") || has(low, "bprop") || has(low, "backward") || has(low, "dq_dk_dv"))
    return "backward";
  if (has(name, "cutlassF") || has(low, "fwd") || has(low, "fprop") || has(low, "forward")) return "forward";
  return "";
}

bool is_attention(std::string_view name, const std::string& low) {
  // cuDNN SDPA and FlashAttention backward helpers: dO·O row sums and the dQ accumulator conversion
  // (cudnn::fusion::compute_dot_do_o_specialized, cudnn::fusion::convert_dq_to_16bits, seen on an H200).
  if (has(low, "dot_do_o") || has(low, "convert_dq")) return true;
  return starts(strip_void(name), "fmha") || has(low, "fmha_") || has(low, "_sdpa") || has(low, "sdpa_") ||
         has(low, "flash_fwd") || has(low, "flash_bwd") || has(low, "flashattn") || has(low, "flash_attn") ||
         has(low, "flex_attention") || has(low, "attention") || has(low, "_mha_") || has(low, "cudnn_mha");
}

bool is_grouped_gemm(std::string_view name, const std::string& low) {
  return has(name, "GroupProblemShape") || has(low, "grouped_gemm") || has(low, "grouped_mm") ||
         has(low, "groupedgemm") || has(low, "_grouped_") || has(low, "moe_gemm") || has(low, "moegemm") ||
         (has(low, "ptr_array") && has(low, "gemm"));
}

bool is_gemm(std::string_view name, const std::string& low) {
  const std::string_view n = strip_void(name);
  return has(low, "gemm") || starts(n, "nvjet") || has(low, "gemv") || has(n, "splitKreduce") ||
         has(low, "matmul") || (starts(n, "triton_tem") && (has(low, "mm") || has(low, "bmm"))) ||
         has(low, "_bmm_") || has(low, "tensorop") || has(n, "cublasLt");
}

bool is_copy(std::string_view name, const std::string& low) {
  return starts(name, "Memcpy") || starts(name, "Memset") || has(low, "copy_kernel") ||
         has(low, "catarraybatchedcopy") || has(low, "memcpy") || has(low, "memset");
}

bool is_reduction(std::string_view name, const std::string& low) {
  const std::string_view n = strip_void(name);
  return has(low, "reduce") || has(low, "softmax") || has(low, "norm") || has(low, "cross_entropy") ||
         has(low, "nll_loss") || starts(n, "triton_red") || starts(n, "triton_per") || has(low, "momentscuda") ||
         has(low, "welford") || has(low, "argmax") || has(low, "scan") || has(low, "cumsum") || has(low, "topk");
}

bool is_elementwise(std::string_view name, const std::string& low) {
  const std::string_view n = strip_void(name);
  return has(low, "elementwise") || starts(n, "triton_poi") || has(low, "dropout") || has(low, "fill") ||
         has(low, "gather") || has(low, "scatter") || has(low, "index") || has(low, "multi_tensor_apply") ||
         has(low, "pointwise") || has(low, "rotary") || has(low, "rope") || has(low, "where") ||
         has(low, "masked") || has(low, "clamp") || has(low, "activation") || has(low, "silu") || has(low, "gelu") ||
         has(low, "triu_tril");
}

// ATen's own elementwise / reduction templates say what they are in their first word; their template
// arguments (functor names) may contain words like "norm" or "reduce" that must not decide.
bool is_aten_elementwise_template(std::string_view name) {
  const std::string_view n = strip_void(name);
  return starts(n, "at::native::elementwise_kernel") || starts(n, "at::native::vectorized_elementwise_kernel") ||
         starts(n, "at::native::unrolled_elementwise_kernel") || starts(n, "at::native::index_elementwise_kernel");
}

std::string category_of(std::string_view name, const std::string& low) {
  // Collectives (NCCL AllReduce...) are communication, not a reduction kernel of the model.
  if (starts(strip_void(name), "nccl")) return "other";
  if (is_attention(name, low)) return "attention";
  if (is_grouped_gemm(name, low)) return "grouped_gemm";
  if (is_gemm(name, low)) return "gemm";
  if (is_copy(name, low)) return "copy";
  if (is_aten_elementwise_template(name)) return "elementwise";
  if (starts(strip_void(name), "at::native::reduce_kernel")) return "reduction";
  // The kernel's own name (before its template and call arguments) decides before words inside them:
  // indexFuncLargeIndex<..., ReduceAdd> is an index_add, not a reduction.
  const std::string_view n = strip_void(name);
  const std::string_view head = n.substr(0, std::min(n.find('<'), n.find('(')));
  const std::string low_head = lower(head);
  if (is_reduction(head, low_head)) return "reduction";
  if (is_elementwise(head, low_head)) return "elementwise";
  if (is_reduction(name, low)) return "reduction";
  if (is_elementwise(name, low)) return "elementwise";
  return "other";
}

}  // namespace

std::string demangle(std::string_view name) {
  if (name.substr(0, 2) != "_Z") return std::string(name);
  int status = 0;
  const std::string mangled(name);
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || out == nullptr) return mangled;
  return out.get();  // as Kineto demangles: "void " in front for templates only
}

KernelClass classify_kernel(std::string_view raw_name) {
  const std::string demangled = demangle(raw_name);
  const std::string_view name = demangled;
  const std::string low = lower(name);
  KernelClass k;
  k.category = category_of(name, low);
  k.library = library_of(name, low);
  k.arch = arch_in_name(name);
  if (k.category == "attention") {
    k.direction = attention_direction(name, low);
    // CUTLASS mem-efficient attention names its tier: "_gmem_" keeps K/V in global memory (the fallback
    // when the head dim or alignment does not fit the shared-memory tiles).
    if (has(low, "_gmem")) k.tier = "gmem";
  }
  if (k.category == "copy" && (starts(name, "Memcpy") || starts(name, "Memset"))) k.library = "CUDA";
  return k;
}

KernelClass classify_copy(std::string_view name) {
  KernelClass k;
  k.category = "copy";
  k.library = "CUDA";
  k.arch = arch_in_name(name);
  return k;
}

int arch_number(std::string_view arch) {
  if (arch.size() < 4 || arch.substr(0, 2) != "sm") return 0;
  int n = 0;
  for (const char c : arch.substr(2)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string arch_label(int compute_major, int compute_minor) {
  if (compute_major <= 0) return "";
  return "sm" + std::to_string(compute_major * 10 + compute_minor);
}

}  // namespace stepcast::kernels
