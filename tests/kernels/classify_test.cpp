// Kernel-name classification, table-driven over real names (the seed's sm_120 table, Hopper libraries).
#include "catch.hpp"
#include "kernels/classify.hpp"

using stepcast::kernels::classify_kernel;

namespace {
struct Case {
  std::string name, category, direction, library, arch, tier;
};
}  // namespace

TEST_CASE("real kernel names get their category, direction, library, arch and tier", "[kernels][classify]") {
  const auto c = GENERATE(values<Case>({
      // The seed's table (sm_120 card).
      {"fmha_cutlassB_bf16_aligned_128x64_k65536_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, "
       "cutlass::bfloat16_t, true, false, false, 128, 64, 65536, false>::Params)",
       "attention", "backward", "CUTLASS 2.x", "sm80", ""},
      {"fmha_cutlassF_bf16_aligned_32x128_gmem_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
       "cutlass::arch::Sm80, true, 32, 128, 65536, true, true>::Params)",
       "attention", "forward", "CUTLASS 2.x", "sm80", "gmem"},
      {"fmha_cutlassF_bf16_aligned_64x128_rf_sm80", "attention", "forward", "CUTLASS 2.x", "sm80", ""},
      {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
       "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
       "gemm", "", "CUTLASS 2.x", "sm80", ""},
      {"void cutlass::Kernel2<cutlass_80_simt_sgemm_64x128_8x5_nn_align1>(cutlass_80_simt_sgemm_64x128_8x5_nn_align1::Params)",
       "gemm", "", "CUTLASS 2.x", "sm80", ""},
      {"cutlass_80_simt_sgemm_64x128_8x5_nn_align1", "gemm", "", "CUTLASS 2.x", "sm80", ""},
      {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, "
       "float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&)::{lambda(int)#1}>(int)",
       "elementwise", "", "ATen", "", ""},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >"
       "(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
       "elementwise", "", "ATen", "", ""},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::norm_two_reduce_step>(int)",
       "elementwise", "", "ATen", "", ""},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
       "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, "
       "float, 4>)",
       "reduction", "", "ATen", "", ""},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
       "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
       "reduction", "", "ATen", "", ""},
      {"void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)",
       "elementwise", "", "ATen", "", ""},
      {"void (anonymous namespace)::indexing_backward_kernel<c10::BFloat16, 4>(long const*, long const*)",
       "elementwise", "", "ATen", "", ""},
      {"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>()",
       "elementwise", "", "ATen", "", ""},
      {"Memcpy DtoD (Device -> Device)", "copy", "", "CUDA", "", ""},
      {"Memset (Device)", "copy", "", "CUDA", "", ""},
      // Hopper: cuDNN SDPA, FlashAttention, cuBLAS, CUTLASS 3.x, the grouped GEMM of at::_grouped_mm, Triton.
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", "attention",
       "forward", "cuDNN", "sm90", ""},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3_64x128x128_4x1x1_kernel0_0", "attention",
       "backward", "cuDNN", "sm90", ""},
      {"flash_fwd_kernel", "attention", "forward", "FlashAttention", "", ""},
      {"flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "attention", "backward", "FlashAttention", "", ""},
      {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
       "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>"
       "(pytorch_flash::Flash_fwd_params)",
       "attention", "forward", "FlashAttention", "", ""},
      {"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, "
       "false, cutlass::bfloat16_t> >(pytorch_flash::Flash_bwd_params)",
       "attention", "backward", "FlashAttention", "", ""},
      {"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90"
       "<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> > > > > >(flash::FlashAttnFwdSm90::Params)",
       "attention", "forward", "FlashAttention", "sm90", ""},
      {"nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT", "gemm", "", "cuBLAS", "", ""},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
       "gemm", "", "cuBLAS", "sm90", ""},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", "gemm", "", "cuBLAS", "sm80", ""},
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float>(cublasLt::cublasSplitKParams<float>)",
       "gemm", "", "cuBLASLt", "", ""},
      {"cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x1x1_0_tnn_align8_warpspecialized_cooperative_epi_tma",
       "gemm", "", "CUTLASS 3.x", "sm90", ""},
      {"void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm::kernel::GemmUniversal<"
       "cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<"
       "cutlass::gemm::MainloopSm90ArrayTmaGmmaWarpSpecializedCooperative<4> > > > >(Params)",
       "grouped_gemm", "", "CUTLASS 3.x", "sm90", ""},
      {"triton_poi_fused_add_mul_0", "elementwise", "", "Triton", "", ""},
      {"triton_red_fused__to_copy_mean_pow_1", "reduction", "", "Triton", "", ""},
      {"triton_per_fused_native_layer_norm_3", "reduction", "", "Triton", "", ""},
      {"triton_tem_fused_mm_4", "gemm", "", "Triton", "", ""},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float)",
       "reduction", "", "ATen", "", ""},
      {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda"
       "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(c10::BFloat16)#1}> >(int)",
       "copy", "", "ATen", "", ""},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication", "", "NCCL", "", ""},
      {"my_custom_kernel", "other", "", "unknown", "", ""},
  }));
  INFO(c.name);
  const auto k = classify_kernel(c.name);
  CHECK(k.category == c.category);
  CHECK(k.direction == c.direction);
  CHECK(k.library == c.library);
  CHECK(k.arch == c.arch);
  CHECK(k.tier == c.tier);
}

TEST_CASE("arch labels and numbers", "[kernels][classify]") {
  using namespace stepcast::kernels;
  CHECK(arch_label(12, 0) == "sm120");
  CHECK(arch_label(9, 0) == "sm90");
  CHECK(arch_label(8, 6) == "sm86");
  CHECK(arch_label(0, 0).empty());
  CHECK(arch_number("sm80") == 80);
  CHECK(arch_number("sm120") == 120);
  CHECK(arch_number("") == 0);
  CHECK(arch_number("smXY") == 0);
  // "sm" glued to a lower-case word is not an arch (dsm100, transform80); "Sm" in CamelCase is.
  CHECK(classify_kernel("my_dsm100_kernel").arch.empty());
  CHECK(classify_kernel("foo_smem80_kernel").arch.empty());
  CHECK(classify_kernel("Kernel<cutlass::arch::Sm89>").arch == "sm89");
  CHECK(classify_kernel("kernel_sm_90a_thing").arch == "sm90");
}

TEST_CASE("kernels seen on a real H200 (the harness's CUPTI tables)", "[kernels][classify]") {
  using namespace stepcast::kernels;
  // CUPTI reported the grouped GEMM of at::_grouped_mm mangled and cut (1335 bytes, no longer demangles):
  const std::string cut =
      "_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernel13GemmUniversalINS5_"
      "17GroupProblemShapeIN4cute5tupleIJiiiEEEEENS5_10collective13CollectiveMmaINS5_39MainloopSm90ArrayTmaGmmaWarp"
      "SpecializedILi4ENSA_IJNS9_1CILi2EEENSG_ILi1EEESI_EEENS5_43KernelPtrArrayTmaWarpSpecializedCooperativeEEENSA_";
  CHECK(demangle(cut) == cut);
  const auto g = classify_kernel(cut);
  CHECK(g.category == "grouped_gemm");
  CHECK(g.library == "CUTLASS 3.x");
  CHECK(g.arch == "sm90");
  CHECK(demangle("_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xIiEEEEvNT_6ParamsE") ==
        "void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<int> >"
        "(at::cuda::detail::enable_3x_kernel_for_sm9x<int>::Params)");
  CHECK(classify_kernel("_ZN7cutlass13device_kernelIiEEvT_").library == "CUTLASS 3.x");
  CHECK(demangle("not_mangled") == "not_mangled");
  CHECK(demangle("_Zgarbage") == "_Zgarbage");
  // cuDNN SDPA backward helpers belong to the attention backward.
  for (const char* n : {"void cudnn::fusion::compute_dot_do_o_specialized<true, 256>(void const*, void const*, void*)",
                        "void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*, unsigned int)"}) {
    INFO(n);
    const auto k = classify_kernel(n);
    CHECK(k.category == "attention");
    CHECK(k.direction == "backward");
    CHECK(k.library == "cuDNN");
  }
  CHECK(classify_kernel("void at::native::indexFuncLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true, "
                        "at::native::(anonymous namespace)::ReduceAdd>(at::cuda::detail::TensorInfo<c10::BFloat16, "
                        "unsigned int>)")
            .category == "elementwise");
  CHECK(classify_kernel("nvjet_sm90_tst_192x192_64x3_1x2_h_bz_coopB_NNN").arch == "sm90");
  CHECK(classify_kernel("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
                        "alignc4_execute_kernel__5x_cublas")
            .arch == "sm80");
  CHECK(classify_kernel("void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 7, "
                        "false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int)")
            .category == "reduction");
  CHECK(classify_kernel("void at::native::sbtopk::gatherTopK<c10::BFloat16, unsigned int, 2, false>()").category ==
        "reduction");
}
