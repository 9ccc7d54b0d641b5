#!/usr/bin/env python3
"""Writes a realistic torch.profiler-style Chrome trace of about SIZE_MB megabytes (default 60) for the
kernels reader benchmark. Not committed output: write it under /tmp.

Usage: bench/kernels_bench_trace.py OUT.json [SIZE_MB]

Per launch the layout is Kineto's: a python_function and a cpu_op on the CPU thread, a cuda_runtime
cudaLaunchKernel, the kernel on the GPU stream (with Kineto's args), and the ac2g flow pair; names
are the H200 ones of a MoE LoRA step (cuDNN SDPA, CUTLASS fmha sm80, nvjet, grouped GEMM, Triton, ATen).
"""
import json
import random
import sys

NAMES = [
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", 300.0, 1),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3_64x128x128_4x1x1_kernel0_0", 700.0, 1),
    ("fmha_cutlassB_bf16_aligned_128x64_k65536_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::"
     "Sm80, cutlass::bfloat16_t, true, false, true, 128, 64, 65536, false>::Params)", 2500.0, 1),
    ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
     "cutlass::arch::Sm80, true, 64, 128, 512, true, true>::Params)", 900.0, 1),
    ("nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT", 80.0, 12),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
     "cublas", 50.0, 4),
    ("void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm::kernel::GemmUniversal<"
     "cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::"
     "gemm::MainloopSm90ArrayTmaGmmaWarpSpecializedCooperative<4> > > > >(Params)", 120.0, 4),
    ("triton_poi_fused_add_mul_0", 8.0, 8),
    ("triton_red_fused__to_copy_mean_pow_1", 12.0, 5),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array"
     "<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)", 6.0, 20),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
     "float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
     "unsigned int, float, 4>)", 40.0, 3),
]


def main():
    out = sys.argv[1]
    size = float(sys.argv[2]) * 1e6 if len(sys.argv) > 2 else 60e6
    rng = random.Random(7)
    weighted = [n for n in NAMES for _ in range(n[2])]
    written = 0
    ts = 1733146000000.0
    corr = 0
    with open(out, "w") as f:
        head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
                "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "numSms": 132}]}
        f.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        first = True
        while written < size:
            name, dur, _ = rng.choice(weighted)
            dur = round(dur * rng.uniform(0.8, 1.2), 3)
            corr += 1
            evs = [
                {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1750): _call_impl", "pid": 4242,
                 "tid": 4242, "ts": ts - 60.0, "dur": 55.0, "args": {"Python parent id": corr, "Python id": corr + 1,
                                                                     "Python thread": 0}},
                {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242, "ts": ts - 40.0, "dur": 12.5,
                 "args": {"External id": corr, "Record function id": 0, "Ev Idx": corr, "Sequence number": corr,
                          "Fwd thread id": 0, "Input Dims": [[4096, 2816], [2816, 704]],
                          "Input type": ["c10::BFloat16", "c10::BFloat16"], "Concrete Inputs": ["", ""]}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "ts": ts - 30.0,
                 "dur": 4.25, "args": {"External id": corr, "cbid": 211, "correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                 "args": {"External id": corr, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": corr,
                          "registers per thread": 168, "shared memory": 0, "blocks per SM": 2.5, "warps per SM": 10.0,
                          "grid": [64, 16, 2], "block": [128, 1, 1], "est. achieved occupancy %": 13}},
                {"ph": "s", "id": corr, "pid": 4242, "tid": 4242, "ts": ts - 30.0, "cat": "ac2g", "name": "ac2g"},
                {"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": ts, "cat": "ac2g", "name": "ac2g", "bp": "e"},
            ]
            for e in evs:
                text = ("" if first else ",\n") + json.dumps(e)
                first = False
                f.write(text)
                written += len(text)
            ts += dur + 1.5
        f.write('\n], "traceName": "kernels_bench_trace.py", "displayTimeUnit": "ms"}\n')


if __name__ == "__main__":
    main()
