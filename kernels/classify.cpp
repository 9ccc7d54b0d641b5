#include "kernels/classify.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace stepcast::kernels {
namespace {

// ---------------------------------------------------------------------------------------------------
// The rules, as data. Each table is read top to bottom and the first rule that matches decides.
// `base` is the kernel's own name without template arguments ("cutlass::Kernel", "nccl...", "cudnn::
// bn_fw_tr_1C11_kernel_NCHW"); `signature` keeps the template arguments ("cutlass::Kernel<cutlass_80_
// tensorop_s1688gemm_...>"), for kernels whose identity is a template argument (CUTLASS, FlashAttention 3,
// ATen's elementwise functors). Neither holds the argument list. docs/kernels.md lists where every rule's
// names come from; tests/kernels/classify_test.cpp holds real names per library.
// ---------------------------------------------------------------------------------------------------
enum class Scope { base, signature };
enum class How { prefix, contains, icontains };  // icontains: case-insensitive

struct Rule {
  Scope scope;
  How how;
  std::string_view text;
  std::string_view result;
};

constexpr Scope B = Scope::base;
constexpr Scope S = Scope::signature;
constexpr How P = How::prefix;
constexpr How C = How::contains;
constexpr How I = How::icontains;

constexpr Rule kCategoryRules[] = {
    // Communication first: NCCL's "AllReduce ... Sum" and DeepEP's "combine" are not reductions or GEMMs
    // of the model. RCCL keeps NCCL's kernel names (ncclDevKernel_Generic_4 on ROCm too).
    {B, P, "nccl", "communication"},
    {B, C, "deep_ep::", "communication"},
    {B, C, "dpsk::ep::", "communication"},  // DeepEP as DeepSeek's own training trace names it
    {B, I, "nvshmem", "communication"},
    {B, C, "symmetric_memory::", "communication"},
    // Gloo's collectives as the profiler names them in a CPU trace ("gloo:all_reduce", "gloo:all_gather").
    {B, P, "gloo:", "communication"},
    // Attention: PyTorch's mem-efficient (fmha_cutlass*), cuDNN SDPA, FlashAttention 2/3, FlexAttention,
    // composable_kernel / aiter (fmha_fwd...). The cuDNN / FlashAttention backward helpers (dO·O row sums,
    // the dQ accumulator conversion) are attention too.
    {B, I, "dot_do_o", "attention"},
    {B, I, "convert_dq", "attention"},
    {B, I, "fmha", "attention"},
    {S, I, "fmha", "attention"},  // composable_kernel: ck_tile::kentry<..., ck_tile::FmhaFwdKernel<...>>
    {B, I, "sdpa", "attention"},
    {B, I, "flash_fwd", "attention"},
    {B, I, "flash_bwd", "attention"},
    {B, I, "flashattn", "attention"},
    {B, I, "flash_attn", "attention"},
    {S, C, "flash::", "attention"},  // FlashAttention 3: cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>
    {B, I, "flex_attention", "attention"},
    {B, I, "attention", "attention"},
    {B, I, "_mha_", "attention"},
    {B, I, "cudnn_mha", "attention"},
    // Grouped GEMMs (experts): CUTLASS grouped problem shapes, torch._grouped_mm, DeepGEMM's m-grouped
    // kernels (the template argument GemmType::MGroupedContiguous / MGroupedMasked; DeepGEMM's plain GEMMs
    // are GemmType::Normal), MoE GEMMs of other libraries.
    {S, C, "GroupProblemShape", "grouped_gemm"},
    {S, C, "GemmType::MGrouped", "grouped_gemm"},
    {S, C, "GemmType::Grouped", "grouped_gemm"},
    {S, I, "m_grouped", "grouped_gemm"},  // DeepGEMM m_grouped_*, dpsk::grouped_gemm::cuda::m_grouped_fp8_...
    {B, I, "grouped_gemm", "grouped_gemm"},
    {B, I, "grouped_mm", "grouped_gemm"},
    {B, I, "groupedgemm", "grouped_gemm"},
    {B, I, "_grouped_", "grouped_gemm"},
    {B, I, "moe_gemm", "grouped_gemm"},
    {B, I, "moegemm", "grouped_gemm"},
    {S, C, "KernelPtrArray", "grouped_gemm"},
    // Convolutions, before GEMM: cuDNN's implicit-GEMM convolutions say "gemm" in their names.
    {B, I, "scudnn", "convolution"},  // volta_scudnn_128x64_relu_..., cudnn_infer_ampere_scudnn_...
    {B, I, "convolve", "convolution"},  // implicit_convolve_sgemm, explicit_convolve_sgemm
    {B, I, "convolution", "convolution"},
    {S, C, "ImplicitGemmConvolution", "convolution"},
    {B, I, "conv1d", "convolution"},
    {B, I, "conv2d", "convolution"},
    {B, I, "conv3d", "convolution"},
    {B, I, "depthwise", "convolution"},
    {B, I, "winograd", "convolution"},
    {B, I, "fprop", "convolution"},  // sm80_xmma_fprop_implicit_gemm_..., cutlass_tensorop_s1688fprop_...
    {B, I, "dgrad", "convolution"},
    {B, I, "wgrad", "convolution"},
    {S, I, "s1688fprop", "convolution"},
    {S, I, "s1688dgrad", "convolution"},
    {S, I, "s1688wgrad", "convolution"},
    {B, C, "cutlass_cudnn", "convolution"},  // cuDNN's own CUTLASS (conv kernels, their split-K reduction)
    {B, C, "cask_cudnn", "convolution"},     // cuDNN's offset tables for its convolution kernels
    {B, C, "cudnn::cnn::", "convolution"},
    {B, I, "im2col", "convolution"},
    {B, I, "col2im", "convolution"},
    {B, P, "fft2d_", "convolution"},   // cuDNN's FFT convolution (fft2d_r2c_32x32, fft2d_c2r_32x32)
    {B, I, "nchwtonhwc", "convolution"},  // cuDNN's layout changes around its NHWC convolution kernels
    {B, I, "nhwctonchw", "convolution"},
    // Dense GEMMs: cuBLAS / cuBLASLt (nvjet, xmma, sgemm, gemv, splitKreduce, dot), CUTLASS, Tensile /
    // hipBLASLt (Cijk_...), composable_kernel, DeepGEMM's normal GEMMs, Triton's mm templates.
    {B, I, "gemm", "gemm"},
    {S, I, "gemm", "gemm"},  // cutlass::Kernel<cutlass_80_tensorop_s1688gemm_...>
    {B, P, "nvjet", "gemm"},
    {B, I, "gemv", "gemm"},
    {B, I, "splitkreduce", "gemm"},
    {B, I, "matmul", "gemm"},
    {B, P, "triton_tem", "gemm"},  // Inductor templates: mm, addmm, bmm (its convolution templates say so)
    {B, I, "tensorop", "gemm"},
    {S, C, "cublas", "gemm"},  // cuBLAS dot / reduce kernels carry cublasGemv... template arguments
    {B, P, "Cijk_", "gemm"},
    {B, P, "Custom_Cijk_", "gemm"},
    {B, I, "_bmm", "gemm"},
    {B, C, "epilogue::impl::", "gemm"},  // cuBLASLt's separate epilogue (its arguments name cublasLtEpilogue_t)
    // Inductor's kernel kinds lead their names (triton_red_fused__to_copy_mean_... is a reduction).
    {B, P, "triton_red", "reduction"},
    {B, P, "triton_per", "reduction"},
    {B, P, "triton_poi", "elementwise"},
    // Copies: memcpy / memset, ATen's copy functors inside its elementwise templates, concatenation.
    {B, P, "Memcpy", "copy"},
    {B, P, "Memset", "copy"},
    {S, I, "copy_kernel", "copy"},
    {S, I, "copy_device_to_device", "copy"},
    {B, I, "catarraybatchedcopy", "copy"},
    {B, I, "memcpy", "copy"},
    {B, I, "memset", "copy"},
    {B, I, "copy", "copy"},
    // ATen's elementwise templates say what they are in their own name; their functors may say "norm"
    // or "reduce" (norm_two_reduce_step) without being reductions.
    {B, C, "elementwise_kernel", "elementwise"},
    // Reductions and normalisations (batch / layer / RMS norm, softmax, losses, scans, top-k).
    {B, I, "reduce", "reduction"},
    {B, I, "softmax", "reduction"},
    {B, I, "norm", "reduction"},
    {B, C, "bn_fw", "reduction"},  // cuDNN batch norm: cudnn::bn_fw_tr_1C11_kernel_NCHW
    {B, C, "bn_bw", "reduction"},
    {B, I, "cross_entropy", "reduction"},
    {B, I, "nll_loss", "reduction"},
    {B, I, "nllcriterion", "reduction"},
    {B, I, "momentscuda", "reduction"},
    {B, I, "welford", "reduction"},
    {B, I, "argmax", "reduction"},
    {B, I, "argmin", "reduction"},
    {B, I, "scan", "reduction"},
    {B, I, "cumsum", "reduction"},
    {B, I, "topk", "reduction"},
    {B, I, "max_pool", "reduction"},  // pooling: a max / mean over each window
    {B, I, "avg_pool", "reduction"},
    {B, I, "average_pool", "reduction"},
    {B, I, "gammabeta", "reduction"},  // layer norm backward: GammaBetaBackwardCUDAKernel
    // Elementwise and memory-bound indexing: gathers / scatters, embedding-table lookups (FBGEMM's
    // split_embedding_*: gathers of rows, and their sparse optimizer updates), fills, activations.
    {B, I, "elementwise", "elementwise"},
    {B, I, "dropout", "elementwise"},
    {B, I, "fill", "elementwise"},
    {B, I, "gather", "elementwise"},
    {B, I, "scatter", "elementwise"},
    {B, I, "index", "elementwise"},
    {B, I, "embedding", "elementwise"},
    {B, I, "embs", "elementwise"},
    {B, I, "multi_tensor_apply", "elementwise"},
    {B, I, "pointwise", "elementwise"},
    {B, I, "rotary", "elementwise"},
    {B, I, "rope", "elementwise"},
    {B, I, "where", "elementwise"},
    {B, I, "masked", "elementwise"},
    {B, I, "clamp", "elementwise"},
    {B, I, "activation", "elementwise"},
    {B, I, "silu", "elementwise"},
    {B, I, "gelu", "elementwise"},
    {B, I, "triu_tril", "elementwise"},
    {B, I, "bucketize", "elementwise"},
    {B, I, "bounds_check", "elementwise"},
    {B, I, "permute", "elementwise"},
    {B, I, "scal", "elementwise"},  // cuBLAS scal_kernel, cuDNN scalePackedTensor_kernel
    {B, I, "offsets_range", "elementwise"},
    {B, I, "to_dense", "elementwise"},
    {B, I, "cast", "elementwise"},    // fp8 quantisation casts (per_token_cast_to_fp8, cast_back)
    {B, I, "swiglu", "elementwise"},
    {B, I, "transpose", "copy"},      // a layout change: data movement only
};

constexpr Rule kLibraryRules[] = {
    {B, I, "cudnn", "cuDNN"},  // cudnn::, cask_cudnn, cutlass_cudnn_train, volta_scudnn_..., ..._cudnn_infer
    {B, P, "wgrad_alg", "cuDNN"},
    {B, C, "dgrad_engine", "cuDNN"},
    {B, I, "convolve_sgemm", "cuDNN"},
    {B, P, "fft2d_", "cuDNN"},
    {B, P, "nchwToNhwc", "cuDNN"},
    {B, P, "nhwcToNchw", "cuDNN"},
    {B, I, "flash_fwd", "FlashAttention"},
    {B, I, "flash_bwd", "FlashAttention"},
    {S, C, "flash::", "FlashAttention"},
    {B, I, "flashattn", "FlashAttention"},
    {B, C, "pytorch_flash", "FlashAttention"},
    {B, P, "triton_", "Triton"},
    {B, P, "triton::", "Triton"},
    {B, C, "deep_gemm::", "DeepGEMM"},
    {S, C, "dpsk::grouped_gemm::", "DeepGEMM"},  // DeepSeek's trace: DeepGEMM inside cutlass::device_kernel
    {B, C, "deep_ep::", "DeepEP"},
    {B, C, "dpsk::ep::", "DeepEP"},
    {B, I, "nvshmem", "NVSHMEM"},
    {B, P, "nccl", "NCCL"},
    {B, P, "gloo:", "Gloo"},
    {B, C, "symmetric_memory::", "c10d SymmetricMemory"},
    {S, C, "cublasLt", "cuBLASLt"},
    {B, C, "epilogue::impl::", "cuBLASLt"},
    {B, P, "nvjet", "cuBLAS"},
    {B, I, "xmma", "cuBLAS"},
    {S, C, "cublas", "cuBLAS"},
    {B, P, "ampere_", "cuBLAS"},
    {B, P, "turing_", "cuBLAS"},
    {B, P, "volta_", "cuBLAS"},
    {B, P, "hopper_", "cuBLAS"},
    {B, I, "gemv", "cuBLAS"},
    {B, I, "splitkreduce", "cuBLAS"},
    {B, P, "gemmSN", "cuBLAS"},
    {B, P, "gemmk1", "cuBLAS"},
    {B, P, "magma_", "cuBLAS"},
    {B, P, "sgemm_largek", "cuBLAS"},
    {B, P, "scal_kernel", "cuBLAS"},
    {B, C, "_UserArgs", "hipBLASLt"},  // hipBLASLt's Tensile kernels take user arguments; rocBLAS's do not
    {B, P, "Custom_Cijk_", "hipBLASLt"},
    {B, P, "Cijk_", "Tensile"},
    {B, P, "ck::", "composable_kernel"},
    {B, P, "ck_tile::", "composable_kernel"},
    {S, C, "cutlass3x", "CUTLASS 3.x"},
    {B, C, "cutlass::device_kernel", "CUTLASS 3.x"},
    {B, C, "cutlass13device_kernel", "CUTLASS 3.x"},  // a mangled name CUPTI cut, so it did not demangle
    {B, C, "4cute5", "CUTLASS 3.x"},
    {S, C, "GemmUniversal<cutlass::gemm::GroupProblemShape", "CUTLASS 3.x"},
    {S, C, "cute::", "CUTLASS 3.x"},
    {S, I, "cutlass", "CUTLASS 2.x"},
    {B, P, "fmha_", "CUTLASS 2.x"},
    {B, C, "cub::", "CUB"},
    {B, C, "fbgemm_gpu::", "FBGEMM"},
    {B, P, "split_embedding", "FBGEMM"},
    {B, P, "dense_embedding", "FBGEMM"},
    {B, P, "permute_pooled_embs", "FBGEMM"},
    {B, P, "bounds_check_indices", "FBGEMM"},
    {B, P, "linearize_index", "FBGEMM"},
    {B, P, "recat_copy_async", "FBGEMM"},
    {B, C, "at::", "ATen"},
    {B, C, "c10::", "ATen"},
    {B, C, "indexing_backward_kernel", "ATen"},
    {B, C, "fused_dropout", "ATen"},
    {B, C, "cunn_", "ATen"},
    {B, C, "(anonymous namespace)::", "ATen"},
    {B, C, "multi_tensor_apply", "ATen"},
};

// Attention direction, from the name.
constexpr Rule kDirectionRules[] = {
    {B, I, "dot_do_o", "backward"}, {B, I, "convert_dq", "backward"}, {B, C, "cutlassB", "backward"},
    {S, I, "bwd", "backward"},      {B, I, "bprop", "backward"},      {B, I, "backward", "backward"},
    {B, I, "dq_dk_dv", "backward"}, {B, C, "cutlassF", "forward"},    {S, I, "fwd", "forward"},
    {B, I, "fprop", "forward"},     {B, I, "forward", "forward"},
};

// The collective of a communication kernel, from its name: NCCL's ncclKernel_AllReduce_RING_LL_Sum_float /
// ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL, DeepEP's dispatch / combine (an all-to-all of tokens).
// NCCL ≥ 2.19's ncclDevKernel_Generic runs any collective and says none.
constexpr Rule kCollectiveRules[] = {
    {B, I, "allreduce", "all_reduce"},         {B, I, "all_reduce", "all_reduce"},
    {B, I, "allgather", "all_gather"},         {B, I, "all_gather", "all_gather"},
    {B, I, "reducescatter", "reduce_scatter"}, {B, I, "reduce_scatter", "reduce_scatter"},
    {B, I, "alltoall", "all_to_all"},          {B, I, "all_to_all", "all_to_all"},
    {B, C, "deep_ep::", "all_to_all"},         {B, C, "dpsk::ep::", "all_to_all"},         {B, I, "sendrecv", "send_recv"},
    {B, I, "send_recv", "send_recv"},          {B, I, "broadcast", "broadcast"},
    {B, I, "_reduce_", "reduce"},
};

// ---------------------------------------------------------------------------------------------------

bool has(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

bool starts(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A kernel name in the two scopes the rules read, with lower-case copies for the case-insensitive ones.
struct Names {
  std::string signature, base, signature_low, base_low;
};

bool matches(const Rule& r, const Names& n) {
  const bool sig = r.scope == Scope::signature;
  switch (r.how) {
    case How::prefix: return starts(sig ? n.signature : n.base, r.text);
    case How::contains: return has(sig ? n.signature : n.base, r.text);
    case How::icontains: return has(sig ? n.signature_low : n.base_low, lower(r.text));
  }
  return false;
}

template <size_t N>
std::string first_match(const Rule (&rules)[N], const Names& n, std::string_view otherwise) {
  for (const Rule& r : rules)
    if (matches(r, n)) return std::string(r.result);
  return std::string(otherwise);
}

bool opens(char c) { return c == '<' || c == '(' || c == '[' || c == '{'; }
bool closes(char c) { return c == '>' || c == ')' || c == ']' || c == '}'; }

// Where the argument list starts: the first '(' outside template arguments that is not part of the
// qualified name itself ("(anonymous namespace)::", "operator()").
size_t argument_list_start(std::string_view s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' && depth == 0) {
      if (starts(s.substr(i), "(anonymous namespace)")) {
        i += std::string_view("(anonymous namespace)").size() - 1;
        continue;
      }
      if (i >= 8 && s.substr(i - 8, 8) == "operator" && i + 1 < s.size() && s[i + 1] == ')') {
        ++i;
        continue;
      }
      return i;
    }
    if (opens(c)) ++depth;
    else if (closes(c) && depth > 0 && !(c == '>' && i > 0 && s[i - 1] == '-')) --depth;
  }
  return s.size();
}

// The qualified name after the return type: the text after the last space outside any brackets, when
// what precedes it is a type ("void", "std::enable_if<...>::type"); "Memcpy DtoD" keeps its words.
std::string_view without_return_type(std::string_view s) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (opens(c)) ++depth;
    else if (closes(c) && depth > 0) --depth;
    else if (c == ' ' && depth == 0) start = i + 1;
  }
  if (start == 0) return s;
  const std::string_view type = s.substr(0, start - 1);
  const bool is_type = type == "void" || has(type, "::") || has(type, "<");
  return is_type ? s.substr(start) : s;
}

std::string without_template_arguments(std::string_view s) {
  std::string out;
  int depth = 0;
  for (const char c : s) {
    if (c == '<') ++depth;
    else if (c == '>' && depth > 0) --depth;
    else if (depth == 0) out.push_back(c);
  }
  return out;
}

Names names_of(std::string_view raw) {
  Names n;
  n.signature = kernel_signature(raw);
  n.base = without_template_arguments(n.signature);
  n.signature_low = lower(n.signature);
  n.base_low = lower(n.base);
  return n;
}

// The first "sm<digits>" in the name: lower-case "sm80"/"sm_90a" must not be glued to a preceding
// lower-case letter (so "dsm100" or "transform80" do not count); CamelCase "Sm90" (cutlass::arch::Sm80,
// FlashAttnFwdSm90) counts anywhere. Two or three digits: sm70 ... sm120.
std::string sm_in_name(std::string_view name) {
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
  return "";
}

// Tensile / hipBLASLt kernels name the AMD ISA they were built for: "..._ISA90a_..." -> "gfx90a".
std::string gfx_in_name(std::string_view name) {
  const size_t at = name.find("_ISA");
  if (at == std::string_view::npos) return "";
  size_t end = at + 4;
  while (end < name.size() && std::isalnum(static_cast<unsigned char>(name[end]))) ++end;
  if (end == at + 4) return "";
  return "gfx" + std::string(name.substr(at + 4, end - at - 4));
}

// CUTLASS 2.x kernels inside cuBLAS say their arch as "cutlass_80_..."; legacy cuBLAS / cuDNN kernels by
// codename (cudnn_infer_volta_scudnn_..., ampere_sgemm_...).
std::string arch_in_name(std::string_view name) {
  if (std::string sm = sm_in_name(name); !sm.empty()) return sm;
  if (std::string gfx = gfx_in_name(name); !gfx.empty()) return gfx;
  static constexpr std::pair<std::string_view, std::string_view> kCodenames[] = {
      {"cutlass_", ""}, {"ampere_", "sm80"}, {"turing_", "sm75"}, {"volta_", "sm70"}, {"hopper_", "sm90"}};
  for (const auto& [prefix, arch] : kCodenames) {
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

}  // namespace

std::string demangle(std::string_view name) {
  if (name.substr(0, 2) != "_Z") return std::string(name);
  int status = 0;
  const std::string mangled(name);
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || out == nullptr) return mangled;
  return out.get();  // as Kineto demangles: "void " in front for templates only
}

std::string kernel_signature(std::string_view raw) {
  const std::string demangled = demangle(raw);
  std::string_view s = demangled;
  if (starts(s, "_Z")) return demangled;  // did not demangle: no structure to read
  s = s.substr(0, argument_list_start(s));
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(without_return_type(s));
}

KernelClass classify_kernel(std::string_view raw_name) {
  const Names n = names_of(raw_name);
  KernelClass k;
  k.category = first_match(kCategoryRules, n, "other");
  k.library = first_match(kLibraryRules, n, "unknown");
  k.arch = arch_in_name(n.signature);
  if (k.category == "attention") {
    k.direction = first_match(kDirectionRules, n, "");
    // CUTLASS mem-efficient attention names its tier: "_gmem" keeps K/V in global memory (the fallback
    // when the head dim or alignment does not fit the shared-memory tiles).
    if (has(n.base_low, "_gmem")) k.tier = "gmem";
  }
  if (k.category == "communication") k.collective = first_match(kCollectiveRules, n, "");
  if (k.category == "copy" && (starts(n.base, "Memcpy") || starts(n.base, "Memset"))) k.library = "CUDA";
  return k;
}

KernelClass classify_copy(std::string_view name) {
  KernelClass k;
  k.category = "copy";
  k.library = "CUDA";
  k.arch = arch_in_name(name);
  return k;
}

std::string collective_from_arg(std::string_view collective_name) {
  // PyTorch's names (record_param_comms): allreduce, allgather, all_gather_into_tensor_coalesced,
  // _allgather_base, reduce_scatter_tensor_coalesced, _reduce_scatter_base, all_to_all, all_to_allv,
  // alltoall_base, send, recv, broadcast, reduce.
  std::string low = lower(collective_name);
  low.erase(std::remove(low.begin(), low.end(), '_'), low.end());
  if (has(low, "allreduce")) return "all_reduce";
  if (has(low, "allgather")) return "all_gather";
  if (has(low, "reducescatter")) return "reduce_scatter";
  if (has(low, "alltoall")) return "all_to_all";
  if (has(low, "send") || has(low, "recv")) return "send_recv";
  if (has(low, "broadcast")) return "broadcast";
  if (has(low, "reduce")) return "reduce";
  return "";
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
