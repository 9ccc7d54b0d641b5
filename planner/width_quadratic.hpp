#pragma once
// The sm_120 study's step-time form as a StepPredictor, for scenarios without calibrated coefficients:
//   step_s   = (a * R * W + b * A + c) * (f if the batch takes the explicit-mask path, else 1)
//   peak_gib = m0 + m1 * R * W
// with A = R * W^2 for right-padded rows (the kernel computes every row at the padded width) and for packed
// rows under a block mask or none, and A = sum of document length^2 for packed rows under varlen (the
// kernel skips cross-document blocks); the path is model::attention_path's.
// The sm_120 study (sm_120, 2 rows) fitted t(W) = 6.872e-4 W + 8.851e-8 W^2 s, i.e. per row
// a = 3.436e-4 s/token and b = 4.4255e-8 s/token^2, c = 0; f = 1.094 (a half-padded 2 x 16,384 batch
// ran 9.4 % slower than an unpadded one, seed section B).
#include "model/batch.hpp"

namespace stepcast::planner {

struct WidthQuadratic {
  double step_s_per_token = 0;        // a, seconds per processed token (rows * width)
  double step_s_per_token_width = 0;  // b, seconds per token^2 of attention work
  double step_s_fixed = 0;            // c, seconds per micro-batch
  double masked_step_factor = 1.0;    // f, for padded or block-masked batches (explicit 4D mask, no is_causal)
  double peak_gib_fixed = 0;          // m0, GiB (2^30 bytes)
  double peak_gib_per_token = 0;      // m1, GiB per processed token
};

class WidthQuadraticPredictor : public model::StepPredictor {
 public:
  explicit WidthQuadraticPredictor(WidthQuadratic c) : c_(c) {}
  double step_s(const model::MicroBatch& batch) const override;
  double peak_gib(const model::MicroBatch& batch) const override;

 private:
  WidthQuadratic c_;
};

}  // namespace stepcast::planner
