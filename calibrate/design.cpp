#include "calibrate/design.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <Eigen/Dense>

namespace stepcast::calibrate {

std::vector<std::string> design_advice(const std::vector<Record>& records) {
  std::set<size_t> rows;
  std::set<int64_t> widths;
  int64_t padded = 0, unpadded = 0, widest = 0, most_rows = 0;
  for (const auto& r : records) {
    if (!r.step_s || r.oom) continue;
    rows.insert(r.rows.size());
    widths.insert(r.width);
    (r.has_padding() ? padded : unpadded) += 1;
    widest = std::max(widest, r.width);
    most_rows = std::max<int64_t>(most_rows, static_cast<int64_t>(r.rows.size()));
  }
  std::vector<std::string> advice;
  if (rows.empty()) return advice;
  const std::string w = std::to_string(*widths.begin());
  if (rows.size() == 1) {
    const int64_t r = most_rows;
    advice.push_back("every record has " + std::to_string(r) + " row" + (r == 1 ? "" : "s") +
                     ": a cost per row cannot be told from a cost per token, so other row counts are extrapolated; "
                     "measure 1 x " + w + " and " + std::to_string(std::max<int64_t>(4, 2 * r)) + " x " + w);
  }
  if (widths.size() == 1)
    advice.push_back("every record is " + w + " wide: GEMM work (linear in width) cannot be told from attention "
                     "work (quadratic) or a fixed cost; measure " + std::to_string(most_rows) + " x " +
                     std::to_string(2 * widest) + " and " + std::to_string(most_rows) + " x " +
                     std::to_string(std::max<int64_t>(128, widest / 2)));
  if (padded == 0)
    advice.push_back("no record is padded: the mask-path cost of padded batches is left to the plan alone; measure " +
                     std::to_string(std::max<int64_t>(2, most_rows)) + " x " + std::to_string(widest) +
                     " with one row at half the width");
  else if (unpadded == 0)
    advice.push_back("every record is padded: the mask-path cost cannot be told from attention; measure " +
                     std::to_string(most_rows) + " x " + std::to_string(widest) + " unpadded");
  return advice;
}

}  // namespace stepcast::calibrate

namespace stepcast::calibrate {

namespace {
constexpr double kRidge = 1e-9;

double target_variance(const Eigen::MatrixXd& m, const Eigen::VectorXd& c) {
  return c.dot(m.ldlt().solve(c));
}
}  // namespace

Suggestion suggest_probes(const std::vector<ProbeRow>& records, const std::vector<ProbeRow>& candidates,
                          const std::vector<double>& target, size_t n) {
  const Eigen::Index k = static_cast<Eigen::Index>(target.size());
  Eigen::VectorXd scale = Eigen::VectorXd::Zero(k);
  for (const auto* rows : {&records, &candidates})
    for (const ProbeRow& r : *rows)
      for (Eigen::Index j = 0; j < k; ++j) scale[j] += r.x[static_cast<size_t>(j)] * r.x[static_cast<size_t>(j)];
  for (Eigen::Index j = 0; j < k; ++j) scale[j] = scale[j] > 0 ? 1.0 / std::sqrt(scale[j]) : 1.0;
  const auto row = [&](const ProbeRow& r) {
    Eigen::VectorXd v(k);
    for (Eigen::Index j = 0; j < k; ++j) v[j] = r.x[static_cast<size_t>(j)] * scale[j];
    return v;
  };
  Eigen::VectorXd c(k);
  for (Eigen::Index j = 0; j < k; ++j) c[j] = target[static_cast<size_t>(j)] / scale[j];  // c . beta is unchanged
  const double norm = c.squaredNorm() > 0 ? c.squaredNorm() : 1.0;
  Eigen::MatrixXd m = kRidge * Eigen::MatrixXd::Identity(k, k);
  for (const ProbeRow& r : records) {
    const Eigen::VectorXd v = row(r);
    m += v * v.transpose();
  }
  Suggestion s;
  s.variance.push_back(target_variance(m, c) / norm);
  std::vector<bool> taken(candidates.size(), false);
  for (size_t step = 0; step < n && step < candidates.size(); ++step) {
    size_t best = 0;
    double best_variance = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (taken[i]) continue;
      const Eigen::VectorXd v = row(candidates[i]);
      const double variance = target_variance(m + v * v.transpose(), c);
      if (variance < best_variance) best_variance = variance, best = i;
    }
    const Eigen::VectorXd v = row(candidates[best]);
    m += v * v.transpose();
    taken[best] = true;
    s.picks.push_back(best);
    s.variance.push_back(best_variance / norm);
  }
  return s;
}

}  // namespace stepcast::calibrate
