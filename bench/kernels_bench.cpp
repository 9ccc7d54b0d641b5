// Timed main: how fast the streaming reader gets through a Chrome trace (plain or .json.gz).
// Usage: kernels_bench TRACE [REPEATS]. Prints the best wall time of REPEATS reads and MB/s.
// Compare side by side with Python's json.load with bench/kernels_bench.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "kernels/report.hpp"
#include "kernels/trace_reader.hpp"
#include "model/errors.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kernels_bench TRACE [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const double mb = static_cast<double>(std::filesystem::file_size(argv[1])) / 1e6;
  double best_s = 1e30;
  size_t kernels = 0;
  double device_s = 0;
  try {
    for (int i = 0; i < repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto report = stepcast::kernels::analyze(stepcast::kernels::read_kernel_table(argv[1]));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best_s = std::min(best_s, s);
      kernels = report.kernels.size();
      device_s = report.device_time_s;
    }
  } catch (const stepcast::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::printf("%s: %.1f MB on disk, best of %d reads %.3f s (%.0f MB/s), %zu kernel names, %.3f s device time\n",
              argv[1], mb, repeats, best_s, mb / best_s, kernels, device_s);
  return 0;
}
