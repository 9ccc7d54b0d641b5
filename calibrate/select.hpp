#pragma once
// Forward model selection over a term table (docs/method.md, "Fitting and model selection"): core terms are
// fitted wherever the records exercise them, optional terms are tried one at a time and kept only if their
// estimate clears the t-ratio, the BIC improves, the design is not collinear and a degree of freedom is left.
// Each term's outcome is data (TermState); the reason printed in coefficient files is derived from it.
#include <Eigen/Dense>

#include <span>
#include <string>
#include <vector>

#include "calibrate/solve.hpp"
#include "model/features.hpp"

namespace stepcast::calibrate {

enum class TermStatus {
  untested,             // neither core nor optional (not reached)
  prior,                // fitted with a prior, whatever the data
  core,                 // the shape's own work, always fitted
  unexercised,          // its feature is 0 in every record
  too_few_points,       // core, but no point left for it
  collinear_with_core,  // core, but collinear with the core terms already in
  no_degree_of_freedom, // optional, but the points leave none to test it
  collinear,            // optional, collinear with the selected terms
  insignificant,        // optional, estimate within min_t_ratio standard errors of 0
  no_bic_gain,          // optional, BIC does not improve
  candidate,            // optional, passed every test this round (transient)
  beaten,               // a candidate, but a better term was chosen first
  unchosen,             // a candidate left at the end
  selected,             // optional, selected
  at_bound,             // selected or core, but the estimate sits at its lower bound
};

struct TermState {
  TermStatus status = TermStatus::untested;
  bool active = false;
  double estimate = 0, std_error = 0;  // insignificant, selected: the tested estimate
  double bic_before = 0, bic_after = 0;  // no_bic_gain, selected
  int terms = 0;                       // no_degree_of_freedom: the terms the test would need
  double rms = 0;                      // no_degree_of_freedom: RMS residual of the fit without it
};

// Solves one active set (the caller's data, start and priors).
class TermSolver {
 public:
  virtual ~TermSolver() = default;
  virtual Solved solve(const std::vector<bool>& active) const = 0;
};

struct SelectionInput {
  std::span<const model::TermSpec> terms;
  std::vector<bool> exercised;  // feature non-zero somewhere (and, for a term, informative)
  std::vector<double> prior;    // per term; > 0: a prior pulls it (always fitted, identifiable through the prior)
  Eigen::MatrixXd design;       // points x terms (scaled like the residuals), for collinearity
  int points = 0;
  double min_t_ratio = 2.0;
  std::string residual_unit;    // of the residuals, for reasons
};

struct Selection {
  std::vector<TermState> state;
  Solved solved;
  std::vector<bool> active() const;
  int active_count() const;
};

Selection select_terms(const SelectionInput& in, const TermSolver& solver);

// Why a term is in or out, as written to coefficient files.
std::string reason(const TermState& s, const SelectionInput& in, size_t term);

}  // namespace stepcast::calibrate
