// Kernel-name classification, table-driven over real names (the sm_120 study's sm_120 table, Hopper libraries).
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
      // The sm_120 study's table (sm_120 card).
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

// The golden table of real kernel names per library. "trace:" names are copied from the public traces
// of docs/kernels.md (Kineto's ResNet-50 samples, Holistic Trace Analysis test data, PARAM inputs), with
// their argument lists as Kineto wrote them; "source:" names are how the demangler prints a kernel declared
// in the library's source (DeepGEMM, FlashAttention 3, composable_kernel, DeepEP, NVSHMEM, NCCL >= 2.19),
// for libraries no public trace was found for.
struct LibraryCase {
  std::string name, category, library, arch, collective;
};

TEST_CASE("golden table: real kernel names per library", "[kernels][classify][golden]") {
  const auto c = GENERATE(values<LibraryCase>({
      // cuBLAS (trace: V100, A100, RTX 2080 Ti)
      {"volta_sgemm_128x64_nt", "gemm", "cuBLAS", "sm70", ""},
      {"ampere_sgemm_128x64_nn", "gemm", "cuBLAS", "sm80", ""},
      {"void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float> >(cublasGemmSmallNParams<"
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float>, float>)",
       "gemm", "cuBLAS", "", ""},
      {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParams<"
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParams<cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>, float, float)",
       "gemm", "cuBLAS", "", ""},
      {"void dot_kernel<float, 128, 0, cublasDotParams<cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float> > >(cublasDotParams<cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float> >)",
       "gemm", "cuBLAS", "", ""},
      {"void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(cublasSplitKParams<float>, "
       "float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, "
       "float*, int*)",
       "gemm", "cuBLAS", "", ""},
      // cuBLASLt (trace: A100)
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>("
       "cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float "
       "const*, float const*, float*, void*, long, float*, int*)",
       "gemm", "cuBLASLt", "", ""},
      {"void epilogue::impl::globalKernel<float, float, float, true, true>(int, int, long, float*, cublasLtEpilogue_t, "
       "int, float*, long, void*, long, long, long)",
       "gemm", "cuBLASLt", "", ""},
      // CUTLASS 2.x inside cuBLAS (trace: A100, T4/V100 inference)
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_"
       "128x128_32x3_nn_align4::Params)",
       "gemm", "CUTLASS 2.x", "sm80", ""},
      {"void cutlass::Kernel<cutlass_70_wmma_tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8>(cutlass_70_wmma_"
       "tensorop_f16_s161616gemm_f16_32x32_64x2_tn_align8::Params)",
       "gemm", "CUTLASS 2.x", "sm70", ""},
      // cuDNN convolutions (trace: V100 ResNet-50, A100, RTX 2080 Ti)
      {"volta_scudnn_128x64_relu_interior_nn_v1", "convolution", "cuDNN", "sm70", ""},
      {"cudnn_turing_scudnn_128x64_stridedB_splitK_xregs_large_nn_v1", "convolution", "cuDNN", "sm75", ""},
      {"cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "convolution", "cuDNN", "sm80", ""},
      {"volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", "convolution", "cuDNN", "sm70", ""},
      {"void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::"
       "WinogradDataParams<float, float>)",
       "convolution", "cuDNN", "", ""},
      {"void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, float const*, int, float "
       "const*, int, float*, kernel_grad_params, unsigned long long, int, unsigned long long, int, float, int, int, int)",
       "convolution", "cuDNN", "", ""},
      {"void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, int, float const*, int, "
       "float*, float const*, kernel_grad_params, unsigned long long, int, float, int, int, int, int)",
       "convolution", "cuDNN", "", ""},
      {"void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int, int, int, float "
       "const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float "
       "const*, float const*, bool, int, int)",
       "convolution", "cuDNN", "", ""},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_"
       "g1_tensor16x8x8_execute_kernel_cudnn_infer",
       "convolution", "cuDNN", "sm80", ""},
      {"sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage4_warpsize2x2x1_"
       "g1_tensor16x8x8_execute_kernel_cudnn_train",
       "convolution", "cuDNN", "sm80", ""},
      {"void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_32x3_nhwc_align4>("
       "cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_32x3_nhwc_align4::Params)",
       "convolution", "cuDNN", "", ""},
      {"void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*, int, int, int, int, int, int, int, int, int, "
       "cudnn::reduced_divisor, bool, int2, int, int)",
       "convolution", "cuDNN", "", ""},
      {"void cask_cudnn::computeOffsetsKernel<false, false>(cask_cudnn::ComputeOffsetsParams)", "convolution", "cuDNN",
       "", ""},
      {"void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(cudnn::ops::"
       "nchw2nhwc_params_t<float>, float const*, float*)",
       "convolution", "cuDNN", "", ""},
      // cuDNN batch norm: its arguments name cudnn::reduced_divisor; it is a normalisation (trace: V100, A100)
      {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>(cudnnTensorStruct, float const*, "
       "cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, float*, float*, float, "
       "float, cudnn::reduced_divisor, int, cudnn::reduced_divisor, cudnn::detail::bnFwPersistentState*, int, float, "
       "float, float, int, float, float, cudnnStatus_t*, bool)",
       "reduction", "cuDNN", "", ""},
      // FlashAttention 2 (trace: H200, in tests/data/traces) and 3 (source: hopper/flash_fwd_launch_template.h)
      {"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, "
       "2, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_bwd_params)",
       "attention", "FlashAttention", "", ""},
      {"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<flash::CollectiveMainloopBwdSm90"
       "<2, cute::tuple<cute::C<64>, cute::C<128>, cute::C<128> > > > > >(flash::FlashAttnBwdSm90::Params)",
       "attention", "FlashAttention", "sm90", ""},
      // FlexAttention and Inductor kernels (Triton; trace: A100)
      {"triton_tem_fused_flex_attention_0", "attention", "Triton", "", ""},
      {"triton_poi_fused_add_cos_sin_0", "elementwise", "Triton", "", ""},
      // DeepGEMM (source: deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh, JIT-instantiated per shape)
      {"void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 7168u, 4096u, 128u, 160u, 128u, 1u, 1u, 4u, "
       "128u, 128u, 1u, false, 132u, (deep_gemm::GemmType)0, cutlass::bfloat16_t, deep_gemm::EpilogueIdentity>("
       "float*, int*, unsigned int, unsigned int, unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, "
       "CUtensorMap_st)",
       "gemm", "DeepGEMM", "sm90", ""},
      {"void deep_gemm::sm90_fp8_gemm_1d2d_impl<cute::UMMA::Major::K, 0u, 7168u, 4096u, 128u, 160u, 128u, 8u, 1u, 4u, "
       "128u, 128u, 1u, false, 132u, GemmType::MGroupedContiguous, cutlass::bfloat16_t, EpilogueIdentity>(float*, int*)",
       "grouped_gemm", "DeepGEMM", "sm90", ""},
      {"void deep_gemm::sm100_fp8_gemm_1d1d_impl<cute::UMMA::Major::K, cute::UMMA::Major::K, 0u, 4096u, 7168u, 128u, "
       "192u, 128u, 64u, 128u, 128u, 128u, 4u, 128u, 128u, 1u, false, 138u, GemmType::MGroupedMasked, false, "
       "cutlass::bfloat16_t, EpilogueIdentity>(int*, unsigned int, unsigned int, unsigned int)",
       "grouped_gemm", "DeepGEMM", "sm100", ""},
      // DeepGEMM and DeepEP as DeepSeek-V3's training trace names them (trace: deepseek-ai/profile-data train.json,
      // H800): only the m_grouped_* GEMMs are expert GEMMs.
      {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel>(dpsk::grouped_gemm::"
       "cuda::m_grouped_fp8_ptp128c::GemmKernel::Params)",
       "grouped_gemm", "DeepGEMM", "", ""},
      {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_dptp128c_acc::GemmKernel>(dpsk::grouped_gemm::cuda::"
       "fp8_dptp128c_acc::GemmKernel::Params)",
       "gemm", "DeepGEMM", "", ""},
      {"void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*, bool const*, int4 const*)",
       "communication", "DeepEP", "", "all_to_all"},
      {"void dpsk::ep::internode::notify_dispatch<false, 8>(int const*, long*, int, int const*, int*, int const*)",
       "communication", "DeepEP", "", "all_to_all"},
      {"void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2, cute::tuple<cute::C<1>, "
       "cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<128>, cute::C<192> > > > >(flash::FlashAttnBwd::Params)",
       "attention", "FlashAttention", "", ""},
      // Tensile / hipBLASLt (trace: MI250, ROCm 6.2), rocBLAS's Tensile (source: Tensile's kernel naming)
      {"Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_"
       "GRVWA1_GRVWB1_GSUAMB_ISA90a_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW1_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_"
       "NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS0_"
       "ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG16_16_1",
       "gemm", "hipBLASLt", "gfx90a", ""},
      {"Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB1_APM1_ABV0_ACED0_AF0EM8_AF1EM1_AMAS3_ASE_ASGT_ASLT_ASAE01_"
       "ASCE01_ASEM8_AAC0_BL1_BS1_DTL0_DTVA0_DTVB0_DVO0_ETSP_EPS1_FL0_GRPM1_GRVW8_GSU1_GSUASB_GLS0_ISA942_IU1_K1_KLA",
       "gemm", "Tensile", "gfx942", ""},
      // composable_kernel (source: ck/tensor_operation/gpu/grid/gridwise_gemm_xdl_cshuffle_v3.hpp, ck_tile fmha)
      {"void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor, "
       "ck::tensor_layout::gemm::ColumnMajor, ck::tensor_layout::gemm::RowMajor, ck::half_t, ck::half_t, float, "
       "ck::half_t>, true, (ck::InMemoryDataOperationEnum)0, 1, (ck::TailNumber)2>(ck::GridwiseGemm_xdl_cshuffle_v3<"
       "ck::tensor_layout::gemm::RowMajor>::Argument)",
       "gemm", "composable_kernel", "", ""},
      {"void ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<ck_tile::"
       "BlockFmhaPipelineProblem<ck_tile::bf16_t> >, ck_tile::Default2DEpilogue<float> > >(ck_tile::FmhaFwdKernel::Kargs)",
       "attention", "composable_kernel", "", ""},
      // NCCL (trace: V100 DDP, A100 DDP, DLRM), NCCL >= 2.19 and RCCL (source: src/device/generate.py)
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "communication", "NCCL", "", "all_reduce"},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "communication", "NCCL", "",
       "send_recv"},
      {"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "communication", "NCCL", "",
       "broadcast"},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication", "NCCL", "", "all_gather"},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication", "NCCL", "",
       "reduce_scatter"},
      {"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "communication", "NCCL", "", ""},
      // Gloo's collectives in a CPU trace (torch.profiler's names for c10d's Gloo work)
      {"gloo:all_reduce", "communication", "Gloo", "", "all_reduce"},
      {"gloo:all_gather", "communication", "Gloo", "", "all_gather"},
      // DeepEP and NVSHMEM (source: csrc/kernels/intranode.cu, internode_ll.cu; NVSHMEM's device barrier)
      {"void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int4 const*)",
       "communication", "DeepEP", "", "all_to_all"},
      {"void deep_ep::internode_ll::combine<false, 7168>(void*, void*, int*, void*, void const*, long const*)",
       "communication", "DeepEP", "", "all_to_all"},
      {"void nvshmemi_transfer_rma_kernel<(nvshmemi_op_t)0>(void*, void*, unsigned long, int)", "communication",
       "NVSHMEM", "", ""},
      // FBGEMM embedding tables (trace: DLRM) and ATen (trace: A100)
      {"void split_embedding_codegen_forward_unweighted_kernel<float, float, float, false, long, 1ul, 8ul>("
       "at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>)",
       "elementwise", "FBGEMM", "", ""},
      {"void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>(float const*, long const*, int, "
       "long, long, long, int, int, int, int, int, int, int, int, int, int, float*)",
       "reduction", "ATen", "", ""},
  }));
  INFO(c.name);
  const auto k = classify_kernel(c.name);
  CHECK(k.category == c.category);
  CHECK(k.library == c.library);
  CHECK(k.arch == c.arch);
  CHECK(k.collective == c.collective);
}

TEST_CASE("the kernel's own name: no return type, no argument list", "[kernels][classify]") {
  using stepcast::kernels::kernel_signature;
  CHECK(kernel_signature("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, 512>(cudnnTensorStruct, cudnn::reduced_divisor)") ==
        "cudnn::bn_fw_tr_1C11_kernel_NCHW<float, 512>");
  CHECK(kernel_signature("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, int)") ==
        "at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>");
  CHECK(kernel_signature("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, float>(float)") ==
        "internal::gemvx::kernel<int, float>");
  CHECK(kernel_signature("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)") == "ncclKernel_AllReduce_RING_LL_Sum_float");
  CHECK(kernel_signature("Memcpy DtoD (Device -> Device)") == "Memcpy DtoD");
  CHECK(kernel_signature("volta_sgemm_128x64_nt") == "volta_sgemm_128x64_nt");
  // A template argument with a lambda's parameter list stays inside the signature.
  CHECK(kernel_signature("void at::native::vectorized_elementwise_kernel<4, at::native::launch_clamp_scalar("
                         "at::TensorIteratorBase&)::{lambda()#1}>(int)") ==
        "at::native::vectorized_elementwise_kernel<4, at::native::launch_clamp_scalar(at::TensorIteratorBase&)::{lambda()#1}>");
}

TEST_CASE("Kineto's Collective name argument names the collective", "[kernels][classify]") {
  using stepcast::kernels::collective_from_arg;
  CHECK(collective_from_arg("allreduce") == "all_reduce");
  CHECK(collective_from_arg("_allgather_base") == "all_gather");
  CHECK(collective_from_arg("all_gather_into_tensor_coalesced") == "all_gather");
  CHECK(collective_from_arg("_reduce_scatter_base") == "reduce_scatter");
  CHECK(collective_from_arg("all_to_allv") == "all_to_all");
  CHECK(collective_from_arg("send") == "send_recv");
  CHECK(collective_from_arg("broadcast") == "broadcast");
  CHECK(collective_from_arg("barrier").empty());
}
