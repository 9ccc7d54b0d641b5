#pragma once
// Calibrated coefficients of one (model, GPU, tier), with provenance and the fit's own account of
// itself (standard errors, which terms were chosen and why). Read and written by cli/coefficients_io.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/features.hpp"
#include "model/intervals.hpp"
#include "model/run_memory.hpp"

namespace stepcast::model {

struct Term {
  double value = 0;        // in the unit of the term's name; 0 when not selected
  double std_error = 0;    // from ceres::Covariance; 0 when unknown
  bool selected = false;   // false: held at 0
  std::string reason;      // why it was chosen or dropped
};

// One-off costs of a run, calibrated from first-seen probes and recorded runs (calibrate/run_costs.hpp).
enum RunTerm : int { kFirstSeen = 0, kRunStart, kOptimizerStep, kRunTerms };
const std::array<std::string, kRunTerms>& run_term_names();  // "first_seen_s", "run_start_s", "optimizer_step_s"

// The micro-batch shapes the step fit used (docs/method.md, "Transfer"): a prediction outside them is marked
// extrapolated-shape. tokens = rows x width, the padded tokens of one micro-batch.
struct ShapeDomain {
  bool known = false;  // false: a file written before calibrate recorded it (no claim either way)
  int64_t rows_min = 0, rows_max = 0;
  int64_t width_min = 0, width_max = 0;
  int64_t tokens_min = 0, tokens_max = 0;
};

// The `model` of coefficients fitted over several models at once: each record priced with its own model's work,
// one rate per unit of work for all (calibrate --pooled; docs/method.md, "The default predictor").
inline constexpr const char* kPooledModel = "pooled";
// The step fit's own held-out errors: each record predicted by a fit of the others (calibrate/held_out.hpp), the
// calibrated interval's half-widths (model/intervals.hpp). Unknown in a file written before calibrate recorded
// them: its calibrated interval comes from the fit's residual RMS and standard errors instead.
struct HeldOut {
  bool known = false;
  std::string scheme;               // "leave-one-out" or "10-fold"
  int64_t points_unpadded = 0;      // held-out records behind each half-width; 0: that half-width is the
  int64_t points_padded = 0;        // conformal quantile of all the records (no record of its own kind)
  HalfWidth half_width;
};

struct Coefficients {
  // Provenance.
  std::string model;            // the model fitted; kPooledModel for a fit over several models
  std::vector<std::string> models;  // a pooled fit's models (docs/method.md, "The default predictor"); else empty
  std::string model_at;         // "file:line:col" of the file's `model` key, for messages (empty: not read from a file)
  std::string gpu;
  std::string tier;
  int64_t points = 0;          // records the step fit used
  int64_t peak_points = 0;     // records the peak fit used
  std::string tool_version;
  std::string date;            // ISO 8601, UTC
  std::string loss = "none";   // robust loss of the fit: none, huber, cauchy
  int64_t lora_rank = 16;
  // What lora_gemm_s_per_tflop's work is: "roofline" (FLOPs + kappa x bytes, docs/method.md "LoRA by rank"), or
  // "per-flop" in files written before it, which the reader converts at the file's rank (io/coefficients_io.cpp).
  std::string lora_work = "roofline";
  // What expert_gemm_s_per_tflop's work is: "roofline" (FLOPs + the streamed weights' and routed tokens' bytes,
  // docs/method.md "Experts by tokens per expert"), or "per-flop" in files written before it, read as they were.
  std::string expert_work = "roofline";
  // What memory_s_per_gb's work is: "weighted" (an eager norm's passes and LoRA's elementwise bytes counted,
  // docs/method.md "Memory-bound work"), or "plain" in files written before it, read as they were.
  std::string memory_work = "weighted";
  std::string prior;           // the coefficient file the fit was regularised toward; empty = none
  std::string fitted_records;  // fingerprints of the records fitted (io/fit_input.hpp); empty = not recorded
  ShapeDomain domain;          // the step fit's shapes
  HeldOut held_out;            // the step fit's held-out errors
  // The fit.
  std::array<Term, kStepTerms> step{};
  std::array<Term, kMemoryTerms> memory{};
  // The host side (model/features.hpp): kernel launches of one step of this tier (0 = unknown, the host
  // term is off), and the overlap exponent p of step = (D^p + H^p)^(1/p).
  double launches_per_step = 0;
  double overlap_exponent = 4;
  // One-off costs of a real run (model/batch.hpp StepPredictor), seconds; not selected = 0 (unknown).
  std::array<Term, kRunTerms> run{};
  double step_rms_rel = 0;     // root mean square of the relative step residuals
  double peak_rms_gib = 0;
  // The 90 % interval on a run's allocated peak from held-out recorded runs (calibrate/fit_run_memory.cpp); absent:
  // the file has no measured whole-run peak error.
  std::optional<PeakInterval> peak_interval;
};

}  // namespace stepcast::model
