// The fitted kernel efficiencies of measurements/public/ (model/gpu_efficiency.hpp, docs/gpus.md): every
// family's curve at each level, every non-native path's factor, what each GPU of the table achieves per
// category, and the held-out checks with their error band per distance. `--pairs` lists every pair.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "model/gpu_efficiency.hpp"

using namespace stepcast::model;

int main(int argc, char** argv) {
  const bool list_pairs = argc > 1 && std::strcmp(argv[1], "--pairs") == 0;
  const EfficiencyModel& m = shipped_efficiency();
  std::printf("public points: %zu\n\n| family | level | key | E | h | points |\n| --- | --- | --- | --- | --- | --- |\n",
              public_points().size());
  for (const auto& f : m.families()) {
    const Curve* all = m.curve(f, "family", "");
    std::printf("| %s | family | all | %.3f | %.0f | %d |\n", f.c_str(), std::exp(all->log_e), all->half_x, all->points);
    for (const auto& a : known_archs())
      if (const Curve* c = m.curve(f, "arch", a.name))
        std::printf("| %s | arch | %s | %.3f | | %d |\n", f.c_str(), a.name.c_str(), std::exp(c->log_e), c->points);
    for (const auto& g : known_gpus())
      if (const Curve* c = m.curve(f, "gpu", g.name))
        std::printf("| %s | gpu | %s | %.3f | | %d |\n", f.c_str(), g.name.c_str(), std::exp(c->log_e), c->points);
  }
  std::printf("\n| arch | path | factor | how | points |\n| --- | --- | --- | --- | --- |\n");
  for (const auto& a : known_archs())
    for (const char* path : {"mma", "wgmma", "tcgen05", "mfma"}) {
      const PathFactor f = m.path_factor(a.name, path);
      if (f.how != "native" && f.how != "unmeasured")
        std::printf("| %s | %s | %.3f | %s | %d |\n", a.name.c_str(), path, f.value, f.how.c_str(), f.points);
    }
  std::printf("\n| GPU | gemm (4096) | attention (4096) | attention_efficient (4096) | memory (256 MiB) |\n| --- | --- | --- | --- | --- |\n");
  for (const auto& g : known_gpus()) {
    if (!(g.peaks.bf16_tflops > 0 && g.peaks.memory_gbs > 0)) continue;
    const GpuInfo info{g.name, g.vendor, g.sm, g.arch, g.capacity_gib, g.peaks};
    std::printf("| %s |", g.name.c_str());
    const double xs[] = {4096, 4096, 4096, 268435456.0};
    for (int c = 0; c < kKernelCategories; ++c) {
      const Achieved a = m.achieved(info, static_cast<KernelCategory>(c), xs[c]);
      std::printf(" %.0f (%s/%s, %s) |", a.rate, a.family.c_str(), a.path.c_str(), a.level.c_str());
    }
    std::printf("\n");
  }
  const auto pairs = held_out_pairs(public_points(), known_gpus(), known_archs());
  std::printf("\n| distance | pairs | GPUs predicted | 90 %% band |\n| --- | --- | --- | --- |\n");
  for (Distance d : {Distance::same_arch, Distance::another_arch, Distance::another_vendor}) {
    const ErrorBand b = error_band(pairs, d);
    std::printf("| %s | %d | %d | %.1f %% |\n", distance_name(d), b.pairs, b.gpus, 100 * b.half_width);
  }
  if (list_pairs)
    for (const auto& p : pairs)
      std::printf("%s:%d %s <- %s (%s) %s: measured %.1f predicted %.1f (%+.1f %%)\n", p.target.file.c_str(),
                  p.target.line, p.target.gpu.c_str(), p.source.gpu.c_str(), distance_name(p.distance),
                  p.target.family.c_str(), p.target.value, p.predicted, 100 * p.error());
  return 0;
}
