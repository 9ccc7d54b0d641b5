// Writes libtorch_cpu.json: a real Chrome trace from Debian's LibTorch 1.13 (CPU only; the legacy
// profiler's RecordProfile) of a tiny MLP forward + backward. Run once; the output is committed.
//   g++ -std=c++17 -O1 make_libtorch_trace.cpp -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 \
//       -o /tmp/make_libtorch_trace && /tmp/make_libtorch_trace libtorch_cpu.json
#include <torch/torch.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: make_libtorch_trace OUT.json\n";
    return 2;
  }
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(64, 128), torch::nn::GELU(), torch::nn::Linear(128, 64));
  const auto x = torch::randn({32, 64});
  {
    torch::autograd::profiler::RecordProfile guard(argv[1]);
    for (int step = 0; step < 2; ++step) {
      auto loss = mlp->forward(x).pow(2).mean();
      loss.backward();
    }
  }
  return 0;
}
