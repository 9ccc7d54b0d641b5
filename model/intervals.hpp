#pragma once
// The 90 % step interval of each kind of prediction, from that kind's own measured held-out errors
// (docs/method.md, "Intervals"). An interval is [t / (1 + h), t x (1 + h)], symmetric in the ratio measured /
// predicted, so a point is inside exactly when its ratio error max(m/t, t/m) - 1 is at most h. h is the
// split-conformal quantile of the held-out ratio errors: the ceil(0.9 (n + 1))-th smallest of n, which covers
// a new point of the same kind at least 90 % of the time when the points are exchangeable. Padded micro-batches
// (rows shorter than the width: explicit masks, padded tokens through every kernel) err more than unpadded ones,
// so each kind has a half-width for each.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/run_memory.hpp"

namespace stepcast::model {

// Relative half-widths of the 90 % step interval; 0 = no measured error.
struct HalfWidth {
  double unpadded = 0;
  double padded = 0;
  double at(bool padded_batch) const { return padded_batch ? padded : unpadded; }
  HalfWidth& operator+=(const HalfWidth& o) {
    unpadded += o.unpadded;
    padded += o.padded;
    return *this;
  }
};

// max(measured / predicted, predicted / measured) - 1: the h whose interval just holds `measured`.
double ratio_error(double measured, double predicted);

// The split-conformal 90 % half-width of held-out ratio errors: the ceil(coverage (n + 1))-th smallest, or the
// largest when n is below 1 / (1 - coverage) - 1 (too few points to claim more); 0 for none.
double conformal_half_width(std::vector<double> ratio_errors, double coverage = 0.9);

// The measured error of a stack's host side over a predictor's device side (model/stacks.hpp): the 90 % half-width
// of steps the host bounds and of steps the device bounds, on the stack's own records. A calibrated prediction
// on a stack its coefficients were not fitted with takes the larger of the file's held-out error and this.
struct StackError {
  bool known = false;
  double host_bound = 0;
  double device_bound = 0;
};

// The kinds of prediction that are not calibrated for what is asked, each with its measured held-out error. (A
// GPU transfer's is the band of the two GPUs' distance on published points: model/gpu_efficiency.hpp.)
enum IntervalKind : int {
  kModelTransfer = 0,        // another model, the host side priced by its own launches
  kModelTransferNoLaunches,  // another model, the coefficients' model has no config to count launches
  kTierTransfer,             // another attention backend
  kExpertsTransfer,          // another expert implementation (loop <-> grouped)
  kExtrapolatedShape,        // a shape outside the fitted domain (added to the kind's own)
  kModelTransferRun,         // a whole run of another model: its device-bound part (Transfer::run_half_width)
  kIntervalKinds
};

struct IntervalSpec {
  std::string_view name;
  HalfWidth half_width;
  int64_t points_unpadded = 0;  // held-out points behind each half-width
  int64_t points_padded = 0;
  std::string_view source;      // what was held out, and the command that measures it
};

// One row per kind, in IntervalKind order (tests/predict/intervals_test.cpp recomputes the model-transfer row
// from the committed records, so a recalibrated default predictor cannot keep a stale interval).
extern const std::array<IntervalSpec, kIntervalKinds> kIntervalTable;

inline const HalfWidth& held_out_error(IntervalKind kind) { return kIntervalTable[kind].half_width; }

// The run peak's interval (measured / predicted) of a model outside the pooled default's families: the run peaks
// of every family left out of the default's recipe or never fitted (model/intervals.cpp says which runs). A
// transferred model's peak interval is the union of this and the file's own.
const PeakInterval& transferred_model_peak_interval();

}  // namespace stepcast::model
