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
};

// The shipped table, in file order.
const std::vector<GpuSpec>& known_gpus();

// The entry whose name or alias is exactly `name`; nullptr for none.
const GpuSpec* find_gpu(const std::vector<GpuSpec>& table, const std::string& name);

// The shipped device called `name`. Throws stepcast::InputError listing every known name for any other.
GpuInfo gpu_info(const std::string& name);

}  // namespace stepcast::model
