#pragma once
// Wall clock, padding and memory of a whole run, simulated micro-batch by micro-batch through the
// model::StepPredictor interface (the calibrated StepModel, or any other predictor).
//
// wall_clock_s = startup_s
//              + epochs * sum over the epoch's micro-batches of step_s(batch)
//              + first_seen_s per graph of each distinct shape (rows x width) (planner/timeline.hpp)
//              + run_start_s
//              + compile seconds of the kernel classes first met       (a cold machine only: RunSpec::cold_cache)
//              + steps * optimizer_step_s                       (steps = ceil(micro-batches / accumulation))
//              + floor(steps / checkpoint_every_steps) * checkpoint_save_s
//              + floor(steps / eval_every_steps) * eval_s
// Every epoch runs the same micro-batches (a reshuffle changes their order, not their costs) and meets
// no new shape. The per-micro-batch rule is planner/timeline.hpp's, shared with predict_timeline().
#include <cstdint>
#include <optional>
#include <vector>

#include "model/batch.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"
#include "planner/memory_timeline.hpp"
#include "planner/timeline.hpp"

namespace stepcast::planner {

struct RunSpec {
  int64_t accumulation = 1;            // micro-batches per optimizer step
  int64_t epochs = 1;
  // Seconds per optimizer step (all-reduce, AdamW update, zero_grad); unset: the predictor's calibrated value.
  std::optional<double> optimizer_step_s;
  int64_t checkpoint_every_steps = 0;  // 0: no checkpoints
  double checkpoint_save_s = 0;
  int64_t eval_every_steps = 0;        // 0: no evaluation
  double eval_s = 0;
  double startup_s = 0;                // model load, compile, data loader start
  // A fresh machine (scenario run.cold_start, plan --cold-start): its kernel compiles are charged micro-batch by
  // micro-batch (model/kernel_compiles.hpp); absent: a warm machine.
  std::optional<model::ColdKernelCache> cold_cache;
  double gpu_memory_gib = 0;           // the device's capacity (GiB, 2^30 bytes)
  double memory_cap_gib = 0;           // a tighter cap the user asks for; 0: none
  double window_hours = 0;             // the booked window; 0: none
  // PYTORCH_CUDA_ALLOC_CONF of the run: the default caching allocator or expandable_segments:True (scenario
  // run.allocator, plan --allocator); it changes the reserved memory (planner/memory_timeline.hpp).
  model::Allocator allocator = model::Allocator::caching;

  double memory_limit_gib() const {
    return memory_cap_gib > 0 && memory_cap_gib < gpu_memory_gib ? memory_cap_gib : gpu_memory_gib;
  }
};

// One micro-batch as a chart sees it.
struct BatchPoint {
  int64_t rows = 0;
  int64_t width = 0;
  int64_t real_tokens = 0;
  double step_s = 0;
  double peak_gib = 0;
};

// The predictor's verdict on every micro-batch of one epoch, and the run's memory timeline over it.
struct BatchCosts {
  double compute_s = 0;        // sum of step_s over one epoch
  double first_seen_s = 0;     // sum of first_seen_s over the epoch's distinct shapes (paid once per run)
  double run_start_s = 0;      // paid once per run
  double compile_s = 0;        // a cold machine's kernel compiles (paid once per run)
  int64_t compile_classes = 0; // kernel classes the run compiles (cold machine)
  int64_t distinct_shapes = 0;
  int64_t host_bound = 0;      // micro-batches of the epoch the host bounds (predictors with a host side)
  double peak_gib = 0;         // the run's allocated peak (memory timeline: micro-batches and optimizer steps)
  int64_t peak_batch = -1;
  int64_t first_oom_batch = -1;  // first micro-batch (0-based, run order) whose need passes what the card gives
  double first_oom_peak_gib = 0;
  MemoryPeak memory_peak;        // where the peak is and what is live then
  double reserved_peak_gib = 0;
  int64_t cache_releases = 0;
  model::RunMemory run_memory;   // what the predictor says the run holds (for the verdict)
  std::vector<BatchPoint> points;  // an evenly strided sample, when asked for
};

// Charges every micro-batch of one pass in run order (RunCharger) and adds up its memory (MemoryTimeline) under
// the run's accumulation, epochs, allocator and memory limit.
BatchCosts evaluate(const Schedule& schedule, const model::StepPredictor& predictor, const RunSpec& run,
                    int64_t max_points = 0);

struct OutOfMemory {
  int64_t micro_batch = 0;  // 1-based, in run order
  int64_t step = 0;         // 1-based optimizer step it belongs to
  int64_t rows = 0;
  int64_t width = 0;
  double peak_gib = 0;
  double limit_gib = 0;
};

struct PlanResult {
  BatchingSpec batching;
  int64_t accumulation = 1;
  int64_t epochs = 1;
  int64_t samples = 0;
  int64_t micro_batches = 0;  // whole run
  int64_t steps = 0;          // optimizer steps, whole run
  int64_t tokens_per_step = 0;  // real tokens per optimizer step, mean over the run (rounded)
  int64_t real_tokens = 0;      // one epoch, after truncation
  int64_t processed_tokens = 0; // one epoch, rows * width
  int64_t kept_tokens = 0;      // one epoch, after truncation (0 when unknown)
  double padding_fraction = 0;
  Truncation truncated;
  double compute_s = 0;
  double first_seen_s = 0;      // one-off seconds of the shapes first met in the run
  double run_start_s = 0;       // one-off seconds of the fresh process's first micro-batch
  double compile_s = 0;         // a cold machine's kernel compiles (RunSpec::cold_cache); 0 on a warm one
  int64_t compile_classes = 0;  // kernel classes compiled (cold machine)
  int64_t distinct_shapes = 0;  // rows x width shapes the run meets
  int64_t host_bound_micro_batches = 0;  // whole run: micro-batches the host, not the device, bounds
  // The share of the run's micro-batches the host bounds: what the wall-clock interval weights the stack's host
  // error by (predict::Predictor::wall_clock_half_width).
  double host_bound_share() const {
    return micro_batches > 0 ? static_cast<double>(host_bound_micro_batches) / static_cast<double>(micro_batches) : 0.0;
  }
  OptimizerStep optimizer;      // seconds per optimizer step and where they came from
  double optimizer_s = 0;
  double checkpoint_s = 0;
  double eval_s = 0;
  double startup_s = 0;
  double wall_clock_s = 0;
  double peak_gib = 0;          // the run's allocated peak (memory_peak.allocated_gib)
  double memory_limit_gib = 0;
  MemoryPeak memory_peak;
  double reserved_peak_gib = 0;
  int64_t cache_releases = 0;   // times the reserved memory would pass what the card gives
  model::Allocator allocator = model::Allocator::caching;
  MemoryJudgement memory;       // verdict, usable memory, interval, margin, risks
  bool fits_memory = true;      // memory.verdict == fits (at the interval's upper bound)
  bool fits_window = true;
  std::optional<OutOfMemory> oom;
  double roots_per_window = -1;  // mean distinct roots per accumulation window; -1 when roots unknown
};

// Distinct roots per accumulation window (consecutive `accumulation` micro-batches), mean over the epoch.
double roots_per_window(const Corpus& corpus, const Schedule& schedule, int64_t accumulation);

PlanResult assemble(const Corpus& corpus, const Schedule& schedule, const BatchingSpec& batching,
                    const BatchCosts& costs, const RunSpec& run, const OptimizerStep& optimizer);

PlanResult simulate(const Corpus& corpus, const BatchingSpec& batching, const RunSpec& run,
                    const model::StepPredictor& predictor);

}  // namespace stepcast::planner
