#include "calibrate/solve.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <sstream>

namespace stepcast::calibrate {

namespace {

// A Gaussian prior on the term `index` of the parameter vector, in units of its sigma.
class PriorCost final : public ceres::CostFunction {
 public:
  PriorCost(int size, int index, double prior, double sigma) : index_(index), prior_(prior), sigma_(sigma) {
    set_num_residuals(1);
    mutable_parameter_block_sizes()->push_back(size);
  }
  bool Evaluate(double const* const* c, double* residual, double** jacobians) const override {
    residual[0] = (c[0][index_] - prior_) / sigma_;
    if (jacobians != nullptr && jacobians[0] != nullptr) {
      std::fill(jacobians[0], jacobians[0] + parameter_block_sizes()[0], 0.0);
      jacobians[0][index_] = 1.0 / sigma_;
    }
    return true;
  }

 private:
  int index_;
  double prior_, sigma_;
};

int count_active(const std::vector<bool>& active) {
  return static_cast<int>(std::count(active.begin(), active.end(), true));
}

// Holds the inactive terms at their value: the whole vector when none is active, else a manifold over the rest.
void hold_inactive(ceres::Problem& problem, double* c, const std::vector<bool>& active) {
  std::vector<int> held;
  for (size_t i = 0; i < active.size(); ++i)
    if (!active[i]) held.push_back(static_cast<int>(i));
  if (held.size() == active.size())
    problem.SetParameterBlockConstant(c);
  else if (!held.empty())
    problem.SetManifold(c, new ceres::SubsetManifold(static_cast<int>(active.size()), held));
}

int add_priors(ceres::Problem& problem, double* c, const SolveSetup& setup, const std::vector<bool>& active) {
  int priors = 0;
  const int n = static_cast<int>(active.size());
  for (int i = 0; i < n; ++i)
    if (active[i] && !setup.prior.empty() && setup.prior[i] > 0) {
      const double sigma = setup.prior_rel_sigma * setup.prior[i] / setup.noise;
      problem.AddResidualBlock(new PriorCost(n, i, setup.prior[i], sigma), nullptr, c);
      ++priors;
    }
  return priors;
}

void run_solver(ceres::Problem& problem) {
  ceres::Solver::Options options;
  options.linear_solver_type = ceres::DENSE_QR;
  options.max_num_iterations = 200;
  options.function_tolerance = 1e-14;
  options.parameter_tolerance = 1e-14;
  options.gradient_tolerance = 1e-16;
  options.logging_type = ceres::SILENT;
  options.num_threads = 1;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
}

// Standard errors of the active terms. Ceres assumes unit-variance residuals: scale by the residual variance
// (RSS / dof), or with priors by the noise they are weighed against (one prior sigma = one noise of residual).
void standard_errors(ceres::Problem& problem, const double* c, const std::vector<bool>& active, double sigma2,
                     Solved& s) {
  ceres::Covariance::Options co;
  co.algorithm_type = ceres::DENSE_SVD;
  co.null_space_rank = -1;
  ceres::Covariance covariance(co);
  const std::vector<std::pair<const double*, const double*>> blocks = {{c, c}};
  if (!covariance.Compute(blocks, &problem)) return;
  const size_t n = active.size();
  std::vector<double> cov(n * n, 0.0);
  covariance.GetCovarianceBlock(c, c, cov.data());
  for (size_t i = 0; i < n; ++i)
    if (active[i]) s.se[i] = std::sqrt(std::max(0.0, cov[i * n + i]) * sigma2);
  s.se_known = true;
}

}  // namespace

Solved solve(const SolveSetup& setup, std::vector<double> init, const std::vector<bool>& active,
             const LeastSquaresData& data) {
  const size_t n = init.size();
  std::vector<double> c = std::move(init);
  for (size_t i = 0; i < n; ++i)
    if (!active[i]) c[i] = 0.0;
  ceres::Problem problem;
  const int points = data.add_residuals(problem, c.data());
  hold_inactive(problem, c.data(), active);
  for (size_t i = 0; i < n; ++i)
    if (active[i]) problem.SetParameterLowerBound(c.data(), static_cast<int>(i), setup.terms[i].lower_bound);
  const int priors = add_priors(problem, c.data(), setup, active);
  run_solver(problem);

  Solved s;
  s.value = c;
  s.se.assign(n, 0.0);
  s.rss = data.rss(c);
  const int k = count_active(active);
  s.dof = points + priors - k;
  if (s.dof < 1 || k == 0) return s;
  const double sigma2 = priors > 0 ? setup.noise * setup.noise : s.rss / std::max(1, points - k);
  standard_errors(problem, c.data(), active, sigma2, s);
  return s;
}

ceres::LossFunction* make_loss(const std::string& loss, double scale) {
  if (loss == "huber") return new ceres::HuberLoss(scale);
  if (loss == "cauchy") return new ceres::CauchyLoss(scale);
  return nullptr;
}

double bic(double rss, int points, int k) {
  const double n = std::max(1, points);
  return n * std::log(std::max(rss, 1e-30) / n) + k * std::log(n);
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

}  // namespace stepcast::calibrate
