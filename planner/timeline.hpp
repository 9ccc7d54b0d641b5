#pragma once
// The cost of a run micro-batch by micro-batch, in run order: one rule that both the planner's
// simulate() (planner/simulate.hpp) and a recorded run's check (`stepcast validate --run`) use.
//
//   micro-batch i pays   step_s(batch_i)
//                      + first_seen_s(batch_i)   for the graphs of its shape (rows x width) not met before in the
//                                                run (model/batch.hpp, first_seen_graphs: cuDNN's SDPA builds one
//                                                per shape and signature; a shape whose attention runs no cuDNN
//                                                layer pays none)
//                      + run_start_s()           if i = 0 (the fresh process's first micro-batch)
//                      + compile seconds         on a cold machine (RunSpec::cold_cache), if its kernel class is
//                                                new to the run (model/kernel_compiles.hpp)
//                      + optimizer_step_s        if it closes an accumulation window ((i + 1) % accumulation
//                                                == 0) or is the last micro-batch of a run that ends mid-window
//
// Process caches (kernel plans, cuBLAS heuristics, allocator segments) survive an epoch, so a later
// epoch meets no new shape. The optimizer step's seconds come from the scenario or a flag when given,
// else from the predictor's calibrated optimizer_step_s().
#include <cstdint>
#include <optional>
#include <vector>

#include "model/batch.hpp"
#include "model/kernel_compiles.hpp"

namespace stepcast::planner {

// The shapes met so far: a flat open-addressing hash set of rows x width (no allocation per insert,
// so a million micro-batches stay far inside the time of sorting their lengths).
class ShapeSet {
 public:
  // True when `key` was not in the set (and is now).
  bool insert(model::ShapeKey key);
  int64_t size() const { return size_; }

 private:
  void grow();
  std::vector<uint64_t> slots_;
  int64_t size_ = 0;
};

// What one micro-batch costs, seconds.
struct BatchCharge {
  double step_s = 0;
  double first_seen_s = 0;  // 0 unless one of the shape's graphs is new to the run
  double run_start_s = 0;   // 0 unless it is the run's first micro-batch
  double compile_s = 0;     // 0 unless the machine is cold and the micro-batch's kernel class is new
  bool new_shape = false;
  bool host_bound = false;  // the predictor says the host, not the device, bounds the step
};

// The per-micro-batch rule above, minus the optimizer step; call next() for every micro-batch in run order.
class RunCharger {
 public:
  // `cold`: a fresh machine's kernel cache, whose compiles the run pays; absent: a warm machine.
  explicit RunCharger(const model::StepPredictor& predictor,
                      const std::optional<model::ColdKernelCache>& cold = std::nullopt)
      : predictor_(predictor) {
    if (cold) compiles_.emplace(*cold);
  }
  BatchCharge next(const model::MicroBatch& batch);
  int64_t distinct_shapes() const { return shapes_.size(); }
  int64_t compiled_classes() const { return compiles_ ? compiles_->compiled() : 0; }

 private:
  const model::StepPredictor& predictor_;
  ShapeSet shapes_;
  ShapeSet graphs_;  // (rows, width, graph signature) built so far
  std::optional<model::CompileClasses> compiles_;
  bool started_ = false;
};

// Where the optimizer step's seconds came from.
enum class OptimizerSource { given, predictor };

struct OptimizerStep {
  double step_s = 0;
  OptimizerSource source = OptimizerSource::predictor;
};

// `given` when set (scenario / flag), else the predictor's calibrated value.
OptimizerStep resolve_optimizer_step(std::optional<double> given, const model::StepPredictor& predictor);

// Optimizer steps of a run of `micro_batches`: ceil(micro_batches / accumulation).
inline int64_t optimizer_steps(int64_t micro_batches, int64_t accumulation) {
  return (micro_batches + accumulation - 1) / accumulation;
}

struct TimelineEntry {
  int64_t rows = 0;
  int64_t width = 0;
  double step_s = 0;
  double first_seen_s = 0;  // 0 if the shape was met before
  double run_start_s = 0;   // index 0 only
  double optimizer_s = 0;   // on the micro-batch closing a window, and on the last one
  double elapsed_s = 0;     // since the run began, after this micro-batch and its optimizer step
  bool first_seen = false;
  bool host_bound = false;
  int64_t optimizer_step = 0;  // 0-based window it belongs to
};

struct Timeline {
  std::vector<TimelineEntry> batches;
  double compute_s = 0;     // sum of step_s
  double first_seen_s = 0;  // sum over distinct shapes
  double run_start_s = 0;
  double optimizer_s = 0;
  double wall_clock_s = 0;  // the sum of the four above (= the last elapsed_s)
  int64_t distinct_shapes = 0;
  int64_t host_bound = 0;   // micro-batches the host bounds
  int64_t steps = 0;        // optimizer steps
  OptimizerStep optimizer;
};

// The timeline of micro-batches given in run order (a recorded run's, or a schedule's). Throws
// std::invalid_argument when accumulation < 1.
Timeline predict_timeline(const std::vector<model::MicroBatch>& batches, int64_t accumulation,
                          const model::StepPredictor& predictor, std::optional<double> optimizer_step_s);

}  // namespace stepcast::planner
