#pragma once
// A run's memory micro-batch by micro-batch (docs/method.md, "Memory of a run"), in run order:
//
//   micro-batch i   allocated = weights + adapters + gradients + fixed           (RunMemory::state_gib)
//                             + AdamW's states                                   once an optimizer step has run
//                             + its step bytes (activations, logits, masks)      (MemoryParts, calibrated)
//                             + the run-only bytes, and the first-seen bytes when its shape is new
//   optimizer step  allocated = every state + the step's temporaries             (after a window's last micro-batch)
//
//   reserved (default caching allocator): the persistent segments (state + the allocator's rounding of the
//   persistent tensors) + the largest working set so far, and when a micro-batch's working set is the largest
//   yet, the share f of the previous largest one that stays cached where the new, larger blocks do not fit
//   (calibrated per allocator: fragmentation_share, expandable_fragmentation_share). Past what the card gives,
//   the allocator frees its cache and retries (a release, not yet an OOM).
//
// Later epochs meet no new shape and have AdamW's states from their first micro-batch: the peak of a run of
// several epochs is the larger of the first pass's and those micro-batches' peaks. Each call is O(1) with no
// allocation (the planner adds up millions of micro-batches); the items live at the peak are built on request.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/batch.hpp"
#include "model/memory.hpp"
#include "model/run_memory.hpp"

namespace stepcast::planner {

// Where a run's allocated peak happens and what is live then ({name, bytes, lifetime} rows).
struct MemoryPeak {
  double allocated_gib = 0;
  bool at_optimizer_step = false;  // the optimizer step's temporaries, not a micro-batch
  bool later_epoch = false;        // a later epoch's pass: AdamW's states alive from its first micro-batch
  int64_t micro_batch = -1;        // 0-based, run order; at an optimizer step: the micro-batch closing the window
  int64_t step = 0;                // 0-based optimizer step
  int64_t rows = 0;
  int64_t width = 0;
  std::vector<model::MemoryItem> live;
};

class MemoryTimeline {
 public:
  // usable_gib: what the allocator can reserve (the card's limit less the CUDA context): past it, it releases.
  MemoryTimeline(const model::RunMemory& run, int64_t accumulation, int64_t epochs, double usable_gib);

  // The next micro-batch of the first pass, in run order; `extra_gib` is a per-rank change (several GPUs:
  // model/parallel.hpp). Returns its allocated peak. Call optimizer_step() after the micro-batch that closes a
  // window and after the run's last one.
  double add(const model::MicroBatch& batch, const model::MemoryParts& parts, bool first_seen, double extra_gib = 0);
  // `extra_gib`: the parallel strategy's change of the rank's memory at the step (RankMemory::step_delta_gib);
  // `transient_share`: the share of the optimizer temporaries the rank allocates (RankMemory).
  double optimizer_step(double extra_gib = 0, double transient_share = 1.0);

  MemoryPeak peak() const;              // with the live items
  double peak_gib() const;              // the same peak, without building them
  double reserved_peak_gib() const { return reserved_peak_; }
  int64_t cache_releases() const { return releases_; }  // reserved would pass usable_gib: the allocator frees and retries
  int64_t micro_batches() const { return index_; }
  const model::RunMemory& run() const { return run_; }

 private:
  struct Candidate {
    bool set = false;
    double allocated_gib = 0;  // may be below 0: a tiny predictor with a strategy that takes memory away
    bool at_optimizer_step = false;
    bool later_epoch = false;
    bool after_optimizer_step = false;
    bool first_seen = false;
    int64_t micro_batch = -1;
    int64_t rows = 0, width = 0;
    model::MemoryParts parts;
    double extra_gib = 0;
    double transient_share = 1.0;  // the share of the optimizer temporaries (at_optimizer_step)
  };
  void consider(const Candidate& c, Candidate& best) const;
  void reserve(double state_gib, double working_set_gib);

  model::RunMemory run_;
  int64_t accumulation_ = 1;
  int64_t epochs_ = 1;
  double usable_gib_ = 0;
  int64_t index_ = 0;
  int64_t steps_ = 0;
  Candidate first_pass_, later_pass_;
  double largest_working_set_ = 0;
  double reserved_ = 0, reserved_peak_ = 0;
  int64_t releases_ = 0;
};

// The verdict on a plan's memory (docs/planner.md, "Memory"): OOM when the point estimate does not fit what the
// card gives, at risk when only the point estimate fits (or when the interval or the CUDA context is not measured,
// or the reserved peak would make the allocator release its cache), fits otherwise.
enum class MemoryVerdict { fits, at_risk, out_of_memory };
std::string verdict_name(MemoryVerdict v);  // "fits", "at_risk", "out_of_memory"

struct MemoryJudgement {
  MemoryVerdict verdict = MemoryVerdict::fits;
  double limit_gib = 0;       // the card's memory (or the cap)
  double usable_gib = 0;      // limit less the measured CUDA context
  double need_gib = 0;        // allocated peak + the segments the allocator reserves beyond the persistent tensors
  std::optional<double> peak_low_gib, peak_high_gib;  // the 90 % interval on the allocated peak
  double need_high_gib = 0;   // need at the interval's high end (the point estimate without an interval)
  double margin_gib = 0;      // usable - need_high
  std::vector<std::string> risks;  // why not "fits", in words
  bool itemised = false;           // the predictor itemises the run's state (reserved and the live items are known)
  bool fragmentation_known = false;  // the reserved peak includes a calibrated fragmentation share
  bool context_known = false;
};

// `peak_gib` is the run's allocated peak, `reserved_peak_gib` the timeline's reserved one.
MemoryJudgement judge_memory(double peak_gib, double reserved_peak_gib, int64_t cache_releases,
                             const model::RunMemory& run, double limit_gib);

}  // namespace stepcast::planner
