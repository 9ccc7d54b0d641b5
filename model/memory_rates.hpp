#pragma once
// In its own header so that model/features.hpp, which model/memory.hpp includes, can keep one.

namespace stepcast::model {

// The memory model reduced to rates (model/memory.hpp architecture_rates), computed once per (shape, setup) so that
// a micro-batch costs a few multiplications (the planner evaluates millions): bytes for the run, bytes per processed
// token, bytes per element of each explicit mask.
struct ArchitectureMemoryRates {
  double weight_bytes = 0;           // every parameter in the config's dtype
  double trainable_bytes = 0;        // LoRA fp32 state, or full fine-tuning's gradients and AdamW states
  double trainable_param_bytes = 0;  // of which: LoRA's fp32 adapters (0 under full fine-tuning)
  double gradient_bytes = 0;         //           one copy of the trained parameters' gradients
  double optimizer_state_bytes = 0;  //           AdamW's two moments
  bool full = false;
  double saved_bytes_per_token = 0;  // every layer's saved input (without recompute: all it saved)
  double logits_bytes_per_token = 0;
  double working_set_bytes_per_token = 0;
  double mask_bytes = 0;             // per element of each explicit R x W x W mask
  // Eager attention's materialised scores (docs/families.md, "Eager attention"), bytes per element of R x W x (W + 1):
  // in the recomputed layer's working set (`eager_peak_bytes`), or without recompute kept by every eager layer until
  // its backward (`eager_saved_bytes`). 0 for a family on SDPA.
  double eager_peak_bytes = 0;
  double eager_saved_bytes = 0;
  // Bytes per token alive beside the eager scores at their peak, inside the attention's backward: the attention
  // half of the recomputed layer (the MLP's backward has freed the rest).
  double eager_attention_bytes_per_token = 0;
  double run_bytes() const { return weight_bytes + trainable_bytes; }
  // One layer's recompute working set for `tokens` tokens and `scores` elements of R x W x (W + 1): the whole
  // layer's, or with eager scores the larger of it and the attention half's beside the scores.
  double layer_working_bytes(double tokens, double scores) const;
  // A step's activations: the saved inputs (and kept scores), plus the larger of the logits path and the layer's
  // working set.
  double step_bytes(double tokens, double scores) const;
};

}  // namespace stepcast::model
