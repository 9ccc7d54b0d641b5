#pragma once
// Kernels a fresh machine compiles while it trains (docs/host.md, "Which micro-batches compile kernels").
//
// cuDNN's SDPA kernels are compiled at run time, once per class of micro-batch and attention head size, and kept
// in the driver's kernel cache, so a machine pays each class once, whatever the process or the model. A class is:
//   padded rows (an explicit padding mask): the largest of 128, 64, 8, 4, 2, 1 that divides the width (the mask
//                                           row's alignment);
//   unpadded rows (is_causal, no mask):     whether 64 divides the width.
// Replayed over 25 machines' campaign records (tools/jit_classes.py), the rule names 134 of 135 steps that
// compiled, and predicts 4 that did not. Packed micro-batches reach attention without a padding mask on another
// path whose compiles were never recorded: they count none.
#include <cstdint>
#include <utility>
#include <vector>

#include "model/batch.hpp"
#include "model/shape.hpp"
#include "model/tiers.hpp"
#include "model/transfer.hpp"

namespace stepcast::model {

// Seconds one compile costs: the median of 42 probe first steps that compiled, minus their steady step (10-90 %:
// 2.32-4.75 s), on H200 and H100 machines, transformers 5.17 + peft 0.21 (tools/jit_classes.py).
inline constexpr double kKernelCompileS = 3.18;

// The micro-batch's compile class, 1..8; 0 for packed rows (none charged).
int kernel_compile_class(const MicroBatch& batch);

// The distinct attention head sizes (q/k head_dim, value head_dim) of the layers whose padded micro-batches run
// cuDNN's SDPA under the tier on a GPU of compute capability `sm` (model/tiers.hpp, choose_backend): each compiles
// its own kernels. Layers on flash, efficient or math compile none (prebuilt kernels): Gemma-4's 512-wide global
// layers, every layer on an sm80 card.
std::vector<std::pair<int64_t, int64_t>> kernel_compile_heads(const ModelShape& shape, const TierRules& tier, int sm);
// The same under a prediction's transfer: its coefficients' tier on the GPU it predicts.
std::vector<std::pair<int64_t, int64_t>> kernel_compile_heads(const ModelShape& shape, const Transfer& transfer);

// A fresh machine's kernel cache: what each new class costs the run (kKernelCompileS x head sizes).
struct ColdKernelCache {
  double seconds_per_class = kKernelCompileS;
};

// The classes a run has met so far (a bit each) and the seconds the next micro-batch pays for its own.
class CompileClasses {
 public:
  explicit CompileClasses(const ColdKernelCache& cache) : cache_(cache) {}
  // Seconds the micro-batch pays for compiling: seconds_per_class when its class is new, else 0.
  double charge(const MicroBatch& batch);
  int64_t compiled() const { return compiled_; }

 private:
  ColdKernelCache cache_;
  uint32_t seen_ = 0;
  int64_t compiled_ = 0;
};

}  // namespace stepcast::model
