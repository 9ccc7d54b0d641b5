// Gloo's all-reduce on this machine's CPUs (harness/distributed.hpp): seconds per all-reduce (sum, float32)
// against the buffer size, for 2 and 4 ranks forked from this process over a FileStore, with the alpha-beta
// fit the planner's model uses (model/parallel.hpp: t = hops x alpha + bytes x bus factor / bus bandwidth).
// Prints a table; not a test. Usage: gloo_bench [repetitions=9]
#include <sys/wait.h>
#include <unistd.h>

#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/distributed.hpp"
#include "model/parallel.hpp"

namespace h = stepcast::harness;

namespace {

const std::vector<int64_t> kSizes{4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};

// Rank 0 writes one median time per size to `out`.
void rank_main(int rank, int world, const std::string& store, const std::string& out, int repetitions) {
  torch::set_num_threads(1);
  h::ProcessGroupHandle group({rank, world, store, "gloo"});
  std::ofstream times;
  if (rank == 0) times.open(out);
  for (int64_t bytes : kSizes) {
    const double t = h::time_all_reduce(group, bytes, repetitions);
    if (rank == 0) times << bytes << " " << t << "\n";
  }
}

std::vector<std::pair<int64_t, double>> measure(int world, int repetitions) {
  const std::string store = "/tmp/stepcast-gloo-bench-" + std::to_string(::getpid()) + "-" + std::to_string(world);
  const std::string out = store + ".times";
  std::filesystem::remove(store);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      rank_main(r, world, store, out, repetitions);
      std::_Exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  std::vector<std::pair<int64_t, double>> rows;
  std::ifstream in(out);
  int64_t bytes = 0;
  double t = 0;
  while (in >> bytes >> t) rows.emplace_back(bytes, t);
  std::filesystem::remove(store);
  std::filesystem::remove(out);
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 9;
  std::printf("Gloo all-reduce (sum, float32) on the CPU, median of %d after a warm-up; bus GB/s = bytes x 2(n-1)/n / t\n",
              repetitions);
  std::printf("%6s %12s %12s %12s\n", "ranks", "bytes", "ms", "bus GB/s");
  for (int world : {2, 4}) {
    const auto rows = measure(world, repetitions);
    for (const auto& [bytes, t] : rows) {
      const double bus = static_cast<double>(bytes) *
                         stepcast::model::bus_factor(stepcast::model::Collective::all_reduce, world) / t / 1e9;
      std::printf("%6d %12lld %12.3f %12.3f\n", world, static_cast<long long>(bytes), t * 1e3, bus);
    }
    // Alpha-beta through the smallest and the largest size: latency per hop and bus bandwidth.
    if (rows.size() >= 2) {
      const double hops = static_cast<double>(stepcast::model::ring_hops(stepcast::model::Collective::all_reduce, world));
      const double factor = stepcast::model::bus_factor(stepcast::model::Collective::all_reduce, world);
      const auto& [b0, t0] = rows.front();
      const auto& [b1, t1] = rows.back();
      const double per_byte = (t1 - t0) / static_cast<double>(b1 - b0);
      const double alpha = (t0 - per_byte * static_cast<double>(b0)) / hops;
      std::printf("  fit (%d ranks): alpha %.1f us per hop, bus bandwidth %.2f GB/s\n", world, alpha * 1e6,
                  factor / per_byte / 1e9);
    }
  }
  return 0;
}
