#!/usr/bin/env python3
"""Writes the small hand-made Chrome traces the kernels tests read (run once; the outputs are committed).

Kernel names are real ones: the sm_120 trace uses the seed's kernel table (seed/000_e7081c6ebb8d422e.txt,
section D), the H200 pair the Hopper names of cuDNN SDPA, CUTLASS mem-efficient attention (sm80),
cuBLAS nvjet / xmma, the CUTLASS 3.x grouped GEMM behind at::_grouped_mm, Triton and ATen. Counts and
durations are chosen by hand so the tests can check shares against an independent count.
The layout follows what torch.profiler (Kineto) exports: schemaVersion, deviceProperties, traceEvents
with cpu_op / cuda_runtime / kernel / gpu_memcpy / gpu_memset / gpu_user_annotation / ac2g flow events.
"""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

SEED_KERNELS = [  # (name, cat, count, dur_us)
    ("fmha_cutlassB_bf16_aligned_128x64_k65536_sm80(PyTorchMemEffAttention::AttentionBackwardKernel"
     "<cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, false, 128, 64, 65536, false>::Params)",
     "kernel", 2, 4000.0),
    ("fmha_cutlassF_bf16_aligned_32x128_gmem_sm80(PyTorchMemEffAttention::AttentionKernel"
     "<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 32, 128, 65536, true, true>::Params)",
     "kernel", 2, 1500.0),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
     "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)", "kernel", 3, 400.0),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x128_8x5_nn_align1>(cutlass_80_simt_sgemm_64x128_8x5_nn_align1::Params)",
     "kernel", 1, 300.0),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor"
     "<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >"
     "(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
     "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
     "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor"
     "<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > const&)"
     "::{lambda(int)#1})", "kernel", 4, 100.0),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
     "kernel", 10, 5.0),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
     "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
     "unsigned int, float, 4>)", "kernel", 2, 150.0),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)", "kernel", 1, 250.0),
    ("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)",
     "kernel", 1, 200.0),
    ("void (anonymous namespace)::indexing_backward_kernel<c10::BFloat16, 4>(long const*, long const*, "
     "c10::BFloat16 const*, c10::BFloat16*, long, long, long, long, bool)", "kernel", 1, 100.0),
    ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>"
     "(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, "
     "unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)",
     "kernel", 1, 100.0),
    ("my_custom_kernel", "kernel", 1, 100.0),
    ("Memcpy DtoD (Device -> Device)", "gpu_memcpy", 2, 50.0),
]

CUDNN_F = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0"
CUDNN_B = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3_64x128x128_4x1x1_kernel0_0"
FMHA_F = ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
          "cutlass::arch::Sm80, true, 64, 128, 512, true, true>::Params)")
FMHA_B = ("fmha_cutlassB_bf16_aligned_128x64_k65536_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
          "cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, true, 128, 64, 65536, false>::Params)")
NVJET = "nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT"
XMMA = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
        "_kernel__5x_cublas")
GROUPED = ("void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm::kernel::"
           "GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::"
           "CollectiveMma<cutlass::gemm::MainloopSm90ArrayTmaGmmaWarpSpecializedCooperative<4, "
           "cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>"
           "> > > >(cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> > "
           ">::Params)")
TRITON_POI = "triton_poi_fused_add_mul_0"
TRITON_RED = "triton_red_fused__to_copy_mean_pow_1"
VEC = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)")
MASKED = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
          "(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::"
          "operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}> >(int, ...)")

H200_UNPADDED = [
    (CUDNN_F, "kernel", 25, 300.0), (CUDNN_B, "kernel", 25, 700.0),
    (FMHA_F, "kernel", 5, 900.0), (FMHA_B, "kernel", 5, 2500.0),
    (NVJET, "kernel", 300, 80.0), (XMMA, "kernel", 100, 50.0), (GROUPED, "kernel", 90, 120.0),
    (TRITON_POI, "kernel", 200, 8.0), (TRITON_RED, "kernel", 120, 12.0), (VEC, "kernel", 500, 6.0),
    ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 4, 20.0), ("Memset (Device)", "gpu_memset", 10, 2.0),
]
H200_PADDED = [
    (CUDNN_F, "kernel", 25, 330.0), (CUDNN_B, "kernel", 25, 900.0),
    (FMHA_F, "kernel", 5, 1000.0), (FMHA_B, "kernel", 5, 4000.0),
    (NVJET, "kernel", 300, 80.0), (XMMA, "kernel", 100, 50.0), (GROUPED, "kernel", 90, 125.0),
    (TRITON_POI, "kernel", 200, 8.0), (TRITON_RED, "kernel", 120, 12.0), (VEC, "kernel", 500, 6.0),
    (MASKED, "kernel", 30, 40.0),
    ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 4, 20.0), ("Memset (Device)", "gpu_memset", 10, 2.0),
]


def device(name, major, minor, sms, mem):
    return {"id": 0, "name": name, "totalGlobalMem": mem, "computeMajor": major, "computeMinor": minor,
            "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
            "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": sms, "sharedMemPerBlockOptin": 232448}


def trace(kernels, dev, steps=1):
    """Kernels run back to back on stream 7, interleaved round-robin like a real step; a CPU op and a
    cudaLaunchKernel per kernel; ProfilerStep markers on CPU and GPU."""
    events = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
    ]
    t0 = 1733146000000.0
    pending = [[name, cat, count, dur] for name, cat, count, dur in kernels]
    ts = t0 + 100.0
    corr = 1000
    step_start = ts
    while any(p[2] > 0 for p in pending):
        for p in pending:
            if p[2] == 0:
                continue
            p[2] -= 1
            name, cat, _, dur = p
            corr += 1
            cpu_name = "aten::mm" if "gemm" in name or "nvjet" in name else "aten::op"
            events.append({"ph": "X", "cat": "cpu_op", "name": cpu_name, "pid": 4242, "tid": 4242,
                           "ts": ts - 40.0, "dur": 12.5, "args": {"External id": corr, "Record function id": 0,
                                                                   "Ev Idx": corr, "Sequence number": corr,
                                                                   "Fwd thread id": 0}})
            launch = "cudaMemcpyAsync" if cat == "gpu_memcpy" else "cudaMemsetAsync" if cat == "gpu_memset" \
                else "cudaLaunchKernel"
            events.append({"ph": "X", "cat": "cuda_runtime", "name": launch, "pid": 4242, "tid": 4242,
                           "ts": ts - 30.0, "dur": 4.25, "args": {"External id": corr, "cbid": 211,
                                                                   "correlation": corr}})
            args = {"External id": corr, "device": 0, "context": 1, "stream": 7, "correlation": corr}
            if cat == "kernel":
                args.update({"queued": 0, "registers per thread": 168, "shared memory": 0, "blocks per SM": 2.5,
                             "warps per SM": 10.0, "grid": [64, 16, 2], "block": [128, 1, 1],
                             "est. achieved occupancy %": 13})
            else:
                args.update({"bytes": 1048576, "memory bandwidth (GB/s)": 1500.25})
            events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                           "args": args})
            events.append({"ph": "s", "id": corr, "pid": 4242, "tid": 4242, "ts": ts - 30.0, "cat": "ac2g",
                           "name": "ac2g"})
            events.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": ts, "cat": "ac2g", "name": "ac2g",
                           "bp": "e"})
            ts += dur + 1.5  # 1.5 µs gap between kernels
    span = ts - step_start
    for s in range(steps):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 3}", "pid": 4242,
                       "tid": 4242, "ts": step_start - 50.0, "dur": span + 60.0, "args": {"External id": 1}})
        # The GPU-side copy of the step annotation spans many kernels: it must not count as device time.
        events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{s + 3}", "pid": 0,
                       "tid": 7, "ts": step_start, "dur": span, "args": {"External id": 1}})
    events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 4242, "tid": 4242,
                   "ts": step_start, "s": "t", "args": {"Total Reserved": 2097152, "Device Id": 0,
                                                        "Note": "escaped \"quote\" and \\u00b5 \u00b5s"}})
    return {"schemaVersion": 1, "deviceProperties": [dev],
            "cupti_version": 24, "cuda_runtime_version": 12080, "cuda_driver_version": 13000,
            "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
            "trace_id": "8F1C7A2D", "traceEvents": events, "traceName": "hand-made by make_traces.py",
            "displayTimeUnit": "ms", "baseTimeNanoseconds": 1733100000000000000}


def main():
    seed = trace(SEED_KERNELS, device("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 12, 0, 188, 102641958912))
    with open(os.path.join(HERE, "seed_sm120.json"), "w") as f:
        json.dump(seed, f, indent=1)
    h200 = device("NVIDIA H200", 9, 0, 132, 150109880320)
    for name, kernels in (("h200_unpadded", H200_UNPADDED), ("h200_padded", H200_PADDED)):
        with gzip.GzipFile(os.path.join(HERE, name + ".json.gz"), "wb", mtime=0) as f:
            f.write(json.dumps(trace(kernels, h200)).encode())


if __name__ == "__main__":
    main()
