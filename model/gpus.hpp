#pragma once
// GPUs as data. The table is scenarios/gpus.yaml: checked by io/gpu_table.cpp when the project is built and
// compiled into this library (the cost model does no I/O), so every front end knows the same devices.
// Lookup is by the exact name the driver prints, or one of its aliases; no substring matching ("NVIDIA H200"
// and "NVIDIA GH200 480GB" are different devices). docs/families.md says how to add one.
#include <string>
#include <vector>

namespace stepcast::model {

// What the device is, as far as kernel choice and memory capacity go.
struct GpuInfo {
  std::string name;           // the table's name for it (an alias resolves to this)
  std::string vendor;         // "nvidia", "amd"
  int sm = 0;                 // CUDA compute capability x10 (90 = Hopper, 120 = workstation Blackwell); 0 = none
  double capacity_gib = 0;    // device memory the allocator can use; 0 = unknown
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
  Interconnect interconnect;
};

// The shipped table, in file order.
const std::vector<GpuSpec>& known_gpus();

// The entry whose name or alias is exactly `name`; nullptr for none.
const GpuSpec* find_gpu(const std::vector<GpuSpec>& table, const std::string& name);

// The shipped device called `name`. Throws stepcast::InputError listing every known name for any other.
GpuInfo gpu_info(const std::string& name);

}  // namespace stepcast::model
