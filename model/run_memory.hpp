#pragma once
// The memory of a whole run, as opposed to one repeated micro-batch (docs/method.md, "Memory of a run"):
// what the run keeps alive between its micro-batches, what each micro-batch adds, and how the caching
// allocator and the CUDA context turn that into what the card must give. The planner's timeline
// (planner/memory_timeline.hpp) adds these up micro-batch by micro-batch; the fit (calibrate/) prices the
// run-only terms from recorded runs. Plain structs: no I/O, no predictor.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stepcast::model {

// PyTorch's CUDA caching allocator mode (PYTORCH_CUDA_ALLOC_CONF): the default caching allocator, or
// expandable_segments:True (model/allocator.hpp says how each reserves).
enum class Allocator : uint8_t { caching, expandable_segments };
std::string allocator_name(Allocator a);  // "default", "expandable-segments"
// "default", "expandable-segments" (also the PYTORCH_CUDA_ALLOC_CONF spelling "expandable_segments").
std::optional<Allocator> parse_allocator(std::string_view name);

// Where a micro-batch sits in a run: which state is alive at its peak and which run-only terms apply.
struct RunPosition {
  bool in_run = false;                // false: a probe step (the steady state the probe fits were made in)
  bool after_optimizer_step = false;  // an optimizer step ran before it: AdamW's states exist
  bool first_seen = false;            // its rows x width is new to the process
};

// What one micro-batch adds to the state alive before it, GiB (allocated, torch.cuda.max_memory_allocated).
struct MemoryParts {
  double step_gib = 0;        // a repeated step at this shape: activations, logits, masks, scores (calibrated)
  double run_gib = 0;         // what a run's micro-batch holds beyond a repeated probe step (run_token_kib)
  double first_seen_gib = 0;  // what a shape new to the process holds on top (first_seen_token_kib)
};

// A 90 % interval on a run's allocated peak, as ratios measured / predicted of held-out run micro-batches
// (docs/method.md, "An interval on the peak"). Absent: the predictor has no measured whole-run error.
struct PeakInterval {
  double low = 1.0;   // the 5th percentile of measured / predicted
  double high = 1.0;  // the 95th
  int64_t points = 0;  // held-out micro-batches the ratios came from
  int64_t runs = 0;    // recorded runs they belong to
  double coverage = -1;  // share of held-out runs' micro-batches inside the interval made without their run; < 0: unknown
  std::string source;  // how it was measured, in words
};

// What a run holds besides its micro-batches, GiB, for one allocator mode.
struct RunMemory {
  bool itemised = false;          // false: the predictor gives one peak per micro-batch (MemoryParts::step_gib)
  double weights_gib = 0;         // every parameter in its dtype (full fine-tuning: the trained weights too)
  double trainable_gib = 0;       // LoRA adapters' fp32 parameters (0 under full fine-tuning: in the weights)
  double gradients_gib = 0;       // one copy of the trained parameters' gradients (from a window's first backward
                                  // to zero_grad(set_to_none=True) at its optimizer step)
  double optimizer_state_gib = 0;  // AdamW's two moments, from the first optimizer step on
  double fixed_gib = 0;           // calibrated: allocator slack and workspaces alive through the run
  double optimizer_transient_gib = 0;  // calibrated: clip + AdamW temporaries at the optimizer step's peak
  // A trained embedding's backward floor beyond the state (model/features.hpp FeatureMaker::embedding_backward_gib,
  // with an earlier gradient alive, as the state counts): a micro-batch peaks at least this far above it.
  double embedding_backward_gib = 0;
  bool optimizer_transient_known = false;
  // Segments the allocator reserves for the persistent tensors beyond their allocated blocks (model/allocator.hpp).
  double persistent_rounding_gib = 0;
  double fragmentation_share = 0;  // calibrated, for this allocator: reserved = largest working set + this share of
                                   // the largest one before it (planner/memory_timeline.hpp)
  bool fragmentation_known = false;
  double context_gib = 0;          // calibrated: CUDA context and libraries outside the allocator
  bool context_known = false;
  std::optional<PeakInterval> interval;
  Allocator allocator = Allocator::caching;

  // The state alive at a micro-batch's peak: weights, adapters, gradients (a conservative count on a window's
  // first micro-batch, whose gradients appear during its backward) and, after the first step, AdamW's states.
  double state_gib(bool after_optimizer_step) const {
    return weights_gib + trainable_gib + gradients_gib + (after_optimizer_step ? optimizer_state_gib : 0.0) + fixed_gib;
  }
  // A micro-batch's allocated peak in a run.
  double micro_batch_gib(const MemoryParts& p, const RunPosition& at) const {
    return state_gib(at.after_optimizer_step) + working_set_gib(p, at);
  }
  // What the micro-batch adds to the state at its peak: its step's bytes, or the end of its backward with the
  // embedding's floor. (A window's first micro-batch starts without its gradients, zero_grad(set_to_none=True):
  // counted anyway, conservatively, as in state_gib; measured up to 7.4 GiB under a full fine-tune's count,
  // docs/method.md "Fitting a run's memory".)
  double working_set_gib(const MemoryParts& p, const RunPosition& at) const {
    return std::max(step_bytes_gib(p, at), embedding_backward_gib);
  }
  // The micro-batch's own bytes at its peak: its step's, the run's extra and, on a shape's first meeting, its
  // first-seen bytes.
  static double step_bytes_gib(const MemoryParts& p, const RunPosition& at) {
    return p.step_gib + p.run_gib + (at.first_seen ? p.first_seen_gib : 0.0);
  }
  // The optimizer step's allocated peak: every state, AdamW's included (created by the first step), and its
  // temporaries.
  // `transient_share`: the share of the temporaries a rank allocates (a sharded optimizer: model/parallel.hpp).
  double optimizer_step_gib(double transient_share = 1.0) const {
    return state_gib(true) + transient_share * optimizer_transient_gib;
  }
};

}  // namespace stepcast::model
