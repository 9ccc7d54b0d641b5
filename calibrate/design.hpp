#pragma once
// Probe advice: what a set of step records cannot tell apart, and which shape would (docs/method.md,
// "Probe advice"). Looks only at the shapes (rows, width, padding), not at the times, so it holds for any tier.
#include <string>
#include <vector>

#include "calibrate/records.hpp"

namespace stepcast::calibrate {

// One sentence per gap of the design, each naming the shape that closes it; empty when the records vary
// rows, width and padding. Only records with a step time count (OOM records constrain the peak only).
std::vector<std::string> design_advice(const std::vector<Record>& records);

}  // namespace stepcast::calibrate

namespace stepcast::calibrate {

// A probe design for the wall clock (docs/method.md, "Probe advice"): the step model's linear device terms are
// fitted by least squares on relative residuals, so a record is the row x_i / t_i (features over its step
// time) and the coefficients' covariance is proportional to (sum of rows' outer products)^-1. A run's wall
// clock is c . coefficients with c the sum of its micro-batches' features, so its variance is proportional to
// c' M^-1 c: the c-optimal design. suggest_probes adds, one at a time, the candidate that lowers c' M^-1 c
// most (greedy, each candidate at most once), M starting from the records'.
struct ProbeRow {
  std::vector<double> x;  // features of the step model's linear terms, divided by the predicted step seconds
};
struct Suggestion {
  std::vector<size_t> picks;     // candidate indices, in the order added
  std::vector<double> variance;  // c' M^-1 c / (c' c) after each pick (relative, unit noise); [0] = before
};
// Columns are scaled to unit norm over records and candidates, and M gets a ridge of 1e-9 on its diagonal, so that
// a term no row exercises stays finite (its variance is large until a row does).
Suggestion suggest_probes(const std::vector<ProbeRow>& records, const std::vector<ProbeRow>& candidates,
                          const std::vector<double>& target, size_t n);

}  // namespace stepcast::calibrate
