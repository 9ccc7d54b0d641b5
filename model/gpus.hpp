#pragma once
// GPUs as data. The table is scenarios/gpus.yaml: checked by io/gpu_table.cpp when the project is built and
// compiled into this library (the cost model does no I/O), so every front end knows the same devices.
// Lookup is by the exact name the driver prints, or one of its aliases; no substring matching ("NVIDIA H200"
// and "NVIDIA GH200 480GB" are different devices). docs/families.md says how to add one.
#include <string>
#include <vector>

namespace stepcast::model {

// Vendor figures a step-model efficiency divides by (docs/method.md, "Transfer"); 0 = not published.
struct GpuPeaks {
  double bf16_tflops = 0;     // dense tensor-core BF16, FP32 accumulate, TFLOP/s
  double fp32_tflops = 0;     // non-tensor FP32, TFLOP/s
  double memory_gbs = 0;      // device memory bandwidth, GB/s (10^9 bytes)
  double memory_gb = 0;       // device memory as the datasheet prints it
  int sms = 0;                // streaming multiprocessors (AMD: compute units)
  double l2_mb = 0;           // last-level on-die cache, MB
};

// What the device is, as far as kernel choice, memory capacity and peak rates go.
struct GpuInfo {
  std::string name;           // the table's name for it (an alias resolves to this)
  std::string vendor;         // "nvidia", "amd"
  int sm = 0;                 // CUDA compute capability x10 (90 = Hopper, 120 = workstation Blackwell); 0 = none
  std::string arch;           // "sm90", "sm120", "gfx942": a name in the table's archs (ArchSpec)
  double capacity_gib = 0;    // device memory the allocator can use; 0 = unknown
  GpuPeaks peaks;
};

// How the cards of one host talk to each other (several GPUs: model/parallel.hpp); 0 = unknown or none.
struct Interconnect {
  int nvlink_generation = 0;
  double nvlink_gbps = 0;     // NVLink bandwidth per direction, GB/s (10^9 bytes): half the datasheet's total
  int pcie_generation = 0;
  double pcie_gbps = 0;       // PCIe x16 bandwidth per direction, GB/s
};

// One entry of scenarios/gpus.yaml.
struct GpuSpec {
  std::string name;                  // nvidia-smi's / torch.cuda.get_device_name's spelling
  std::vector<std::string> aliases;  // other spellings of the same device
  std::string vendor;
  int sm = 0;
  double capacity_gib = 0;
  GpuPeaks peaks;
  Interconnect interconnect;
  // The GPU's default per-category predictor: a coefficient file relative to scenarios/ (what plan, predict, drift
  // and validate use for a model when no --coefficients is given, predict/predictor.hpp); empty: none.
  std::string default_coefficients;
  std::string arch;                  // "sm" + compute capability digits for NVIDIA, the gfx name for AMD
};

// The kernel family a step category runs on an arch and the tensor-core instruction path it issues
// (scenarios/gpus.yaml, archs; docs/gpus.md). Paths: "mma" (mma.sync, sm80-style), "wgmma" (sm90), "tcgen05"
// (sm100), "mfma" (AMD CDNA); memory-bound families have none ("").
struct KernelChoice {
  std::string family;  // "blas", "flash2", "cudnn", "cutlass_efficient", "ck", "copy", ...
  std::string path;
};

// Categories an arch declares a kernel for, in the order of ArchSpec::kernels.
enum class KernelCategory { gemm, attention, attention_efficient, memory };
constexpr int kKernelCategories = 4;
// "gemm", "attention", "attention_efficient", "memory". Inline (like find_arch): the build-time reader of
// scenarios/gpus.yaml uses them before this library exists.
inline const char* kernel_category_name(KernelCategory c) {
  constexpr const char* kNames[kKernelCategories] = {"gemm", "attention", "attention_efficient", "memory"};
  return kNames[static_cast<int>(c)];
}

// One entry of scenarios/gpus.yaml's archs.
struct ArchSpec {
  std::string name;         // "sm90"
  std::string vendor;
  std::string native_path;  // the path the datasheet's peak is quoted for
  KernelChoice kernels[kKernelCategories];
  // FP32 lanes of one SM (CUDA cores; the architecture whitepapers): a card's peak FP32 over 2 x this is its SMs x
  // clock, the rate at which it issues the non-DRAM part of memory-bound kernels (docs/gpus.md, "Memory-bound
  // kernels are not all DRAM"); 0 = not declared.
  int fp32_lanes_per_sm = 0;
  const KernelChoice& kernel(KernelCategory c) const { return kernels[static_cast<int>(c)]; }
};

// The shipped table, in file order.
const std::vector<GpuSpec>& known_gpus();

// The shipped archs, in file order; every GPU's arch is one of them (the reader checks).
const std::vector<ArchSpec>& known_archs();

// The arch called `name`; nullptr for none.
inline const ArchSpec* find_arch(const std::vector<ArchSpec>& archs, const std::string& name) {
  for (const ArchSpec& a : archs)
    if (a.name == name) return &a;
  return nullptr;
}

// The entry whose name or alias is exactly `name`; nullptr for none.
const GpuSpec* find_gpu(const std::vector<GpuSpec>& table, const std::string& name);

// The shipped device called `name`. Throws stepcast::InputError listing every known name for any other.
GpuInfo gpu_info(const std::string& name);

}  // namespace stepcast::model
