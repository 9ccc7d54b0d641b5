#include "model/gpus.hpp"

#include <algorithm>

#include "model/errors.hpp"

namespace stepcast::model {

const std::vector<GpuSpec>& known_gpus() {
  // Generated from scenarios/gpus.yaml by stepcast_gpu_table (io/gpu_table_main.cpp) at build time.
  static const std::vector<GpuSpec> table{
#include "gpu_table.inc"
  };
  return table;
}

const std::vector<ArchSpec>& known_archs() {
  // Generated from scenarios/gpus.yaml's archs by stepcast_gpu_table at build time.
  static const std::vector<ArchSpec> archs{
#include "arch_table.inc"
  };
  return archs;
}

const GpuSpec* find_gpu(const std::vector<GpuSpec>& table, const std::string& name) {
  for (const GpuSpec& g : table)
    if (g.name == name || std::find(g.aliases.begin(), g.aliases.end(), name) != g.aliases.end()) return &g;
  return nullptr;
}

GpuInfo gpu_info(const std::string& name) {
  const GpuSpec* g = find_gpu(known_gpus(), name);
  if (g == nullptr) {
    std::string names;
    for (const GpuSpec& k : known_gpus()) {
      names += (names.empty() ? "'" : ", '") + k.name + "'";
      for (const auto& a : k.aliases) names += ", '" + a + "'";
    }
    throw InputError("GPU '" + name + "' is not in scenarios/gpus.yaml. Violated constraint: one of " + names +
                     " (exact names; add a device to scenarios/gpus.yaml, docs/families.md)");
  }
  return GpuInfo{g->name, g->vendor, g->sm, g->arch, g->capacity_gib, g->peaks};
}

}  // namespace stepcast::model
