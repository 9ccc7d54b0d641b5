// What model/parallel.hpp predicts for the NCCL messages of the multi-GPU measurement (docs/planner.md, "Several GPUs"): seconds and bus GB/s of each
// collective at N = 2, 4, 8 on a GPU of scenarios/gpus.yaml (default the H200), as JSON Lines, so the
// prediction is committed before the measurement (measurements/predictions/multi_gpu.md). Not a test.
// Usage: parallel_predict ["NVIDIA H200"]
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "model/gpus.hpp"
#include "model/parallel.hpp"

using namespace stepcast::model;

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "NVIDIA H200";
  const GpuSpec* gpu = find_gpu(known_gpus(), name);
  if (gpu == nullptr) {
    std::fprintf(stderr, "parallel_predict: '%s' is not in scenarios/gpus.yaml\n", name.c_str());
    return 2;
  }
  const Link link = link_for(gpu->interconnect);
  constexpr double kMiB = 1024.0 * 1024.0;
  // nccl_bus.py's cases, in its order: the strategies' messages, then the all-reduce size sweep.
  std::vector<std::pair<Collective, double>> cases{{Collective::all_reduce, 25 * kMiB},
                                                   {Collective::all_gather, static_cast<double>(static_cast<long long>(48.2 * 1024 * kMiB / 30))},
                                                   {Collective::reduce_scatter, 25 * kMiB},
                                                   {Collective::all_to_all, 4096.0 * 8 * 2816 * 2}};
  for (double mib : {1.0, 4.0, 16.0, 64.0, 256.0, 1024.0}) cases.emplace_back(Collective::all_reduce, mib * kMiB);
  const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  for (int64_t n : {2, 4, 8})
    for (const auto& [c, bytes] : cases) {
      const double t = collective_s(c, bytes, n, link);
      std::printf("{\"op\": \"%s\", \"ranks\": %lld, \"bytes\": %.0f, \"predicted_s\": %.6g, \"predicted_bus_gbps\": %.4g, "
                  "\"gpu\": \"%s\"}\n",
                  names[static_cast<int>(c)], static_cast<long long>(n), bytes, t, bytes * bus_factor(c, n) / t / 1e9,
                  gpu->name.c_str());
    }
  return 0;
}
