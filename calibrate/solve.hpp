#pragma once
// One Ceres solve over a term table: one parameter vector of N terms, the terms left out of the active set held
// at 0 through ceres::SubsetManifold, the others bounded below by their table row's bound, optional Gaussian
// priors, and standard errors from ceres::Covariance (docs/method.md, "Fitting and model selection").
#include <ceres/ceres.h>

#include <span>
#include <string>
#include <vector>

#include "model/features.hpp"

namespace stepcast::calibrate {

struct Solved {
  std::vector<double> value;
  std::vector<double> se;  // 0 = unknown
  double rss = 0;          // data residuals only (priors excluded)
  int dof = 0;
  bool se_known = false;
};

// The data side of a fit: adds one residual block per record over the parameter vector `c` (of the table's
// size) and evaluates the data residuals' sum of squares at a solution.
class LeastSquaresData {
 public:
  virtual ~LeastSquaresData() = default;
  virtual int add_residuals(ceres::Problem& problem, double* c) const = 0;  // returns the data points
  virtual double rss(const std::vector<double>& c) const = 0;
};

struct SolveSetup {
  std::span<const model::TermSpec> terms;
  std::vector<double> prior;     // per term; > 0: a Gaussian prior pulls the term toward it; empty = none
  double prior_rel_sigma = 0.5;  // of the prior's value
  double noise = 1;              // the data residuals' noise, in their unit: one prior sigma weighs as much
};

// Solves for the active terms from `init` (inactive terms are 0 and stay there).
Solved solve(const SolveSetup& setup, std::vector<double> init, const std::vector<bool>& active,
             const LeastSquaresData& data);

ceres::LossFunction* make_loss(const std::string& loss, double scale);  // nullptr for "none"

double bic(double rss, int points, int k);
std::string fmt(double v);  // 4 significant digits, for reasons and notes

}  // namespace stepcast::calibrate
