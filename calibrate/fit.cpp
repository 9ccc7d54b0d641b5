#include "calibrate/fit.hpp"

#include <ceres/ceres.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <limits>
#include <sstream>

#include "calibrate/run_costs.hpp"
#include "model/errors.hpp"
#include "model/features.hpp"
#include "model/tiers.hpp"

namespace stepcast::calibrate {

namespace {

using model::kStepTerms;
using model::kMemoryTerms;

// Measurement noise the priors are weighed against: repeated steps on the H200 vary by ~1 % (the
// seed's repeated 2 x 16384 points: 35.017 / 35.244 / 35.329 s), peaks by well under 0.5 GiB.
constexpr double kStepNoiseRel = 0.01;
constexpr double kPeakNoiseGib = 0.5;

// ---- residual functors (one per fit), as in Ceres' robust_curve_fitting.cc ----

// Relative step-time error: the bar is a MAPE, so every record weighs the same whatever its size.
// (With absolute residuals, `scale_s` is 1 s and the fit is the seed's plain least squares in seconds.)
struct StepCost {
  StepCost(const model::StepFeatures& f, double measured_s, double scale_s, double overlap)
      : f_(f), measured_s_(measured_s), scale_s_(scale_s), overlap_(overlap) {}
  template <typename T>
  bool operator()(const T* const c0, const T* const c1, const T* const c2, const T* const c3, const T* const c4,
                  const T* const c5, const T* const c6, T* residual) const {
    const T* const c[kStepTerms] = {c0, c1, c2, c3, c4, c5, c6};
    residual[0] = (model::step_seconds(c, f_, overlap_) - T(measured_s_)) / T(scale_s_);
    return true;
  }
  model::StepFeatures f_;
  double measured_s_;
  double scale_s_;
  double overlap_;
};

// Peak error in GiB; an OOM record is a one-sided constraint: the peak must reach the capacity there.
struct PeakCost {
  PeakCost(const model::MemoryFeatures& y, double target_gib, bool oom) : y_(y), target_gib_(target_gib), oom_(oom) {}
  template <typename T>
  bool operator()(const T* const m0, const T* const m1, const T* const m2, const T* const m3, T* residual) const {
    const T peak = T(y_.base_gib) + *m0 * y_.y[0] + *m1 * y_.y[1] + *m2 * y_.y[2] + *m3 * y_.y[3];
    const T gap = peak - T(target_gib_);
    residual[0] = (oom_ && gap > T(0)) ? T(0) : gap;
    return true;
  }
  model::MemoryFeatures y_;
  double target_gib_;
  bool oom_;
};

// A Gaussian prior on one coefficient, in units of its relative sigma.
struct PriorCost {
  PriorCost(double prior, double sigma) : prior_(prior), sigma_(sigma) {}
  template <typename T>
  bool operator()(const T* const c, T* residual) const {
    residual[0] = (*c - T(prior_)) / T(sigma_);
    return true;
  }
  double prior_, sigma_;
};

// ---- one solve of a given active set ----

struct Solved {
  std::vector<double> value;
  std::vector<double> se;     // 0 = unknown
  double rss = 0;             // data residuals only (priors excluded)
  int dof = 0;
  bool se_known = false;
};

ceres::LossFunction* make_loss(const FitOptions& o, double scale) {
  if (o.loss == "huber") return new ceres::HuberLoss(scale);
  if (o.loss == "cauchy") return new ceres::CauchyLoss(scale);
  return nullptr;
}

// The generic part: bounds, constants, solve, covariance. `add_residuals` adds the data residuals
// (returning how many data points they represent) and `data_rss` evaluates them at the solution.
Solved solve(std::vector<double> init, const std::vector<bool>& active, const std::vector<double>& prior,
             double prior_rel_sigma, double noise,
             const std::function<int(ceres::Problem&, std::vector<double>&)>& add_residuals,
             const std::function<double(const std::vector<double>&)>& data_rss) {
  const size_t n = init.size();
  std::vector<double> c = std::move(init);
  for (size_t i = 0; i < n; ++i)
    if (!active[i]) c[i] = 0.0;
  ceres::Problem problem;
  const int points = add_residuals(problem, c);
  int priors = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!active[i]) {
      problem.SetParameterBlockConstant(&c[i]);
      continue;
    }
    problem.SetParameterLowerBound(&c[i], 0, 0.0);
    if (!prior.empty() && prior[i] > 0) {
      problem.AddResidualBlock(new ceres::AutoDiffCostFunction<PriorCost, 1, 1>(
                                   new PriorCost(prior[i], prior_rel_sigma * prior[i] / noise)),
                               nullptr, &c[i]);
      ++priors;
    }
  }
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

  Solved s;
  s.value = c;
  s.se.assign(n, 0.0);
  s.rss = data_rss(c);
  int k = 0;
  for (size_t i = 0; i < n; ++i) k += active[i] ? 1 : 0;
  s.dof = points + priors - k;
  if (s.dof < 1 || k == 0) return s;
  ceres::Covariance::Options co;
  co.algorithm_type = ceres::DENSE_SVD;
  co.null_space_rank = -1;
  ceres::Covariance covariance(co);
  std::vector<std::pair<const double*, const double*>> blocks;
  for (size_t i = 0; i < n; ++i)
    if (active[i]) blocks.emplace_back(&c[i], &c[i]);
  if (!covariance.Compute(blocks, &problem)) return s;
  // Ceres assumes unit-variance residuals; scale by the residual variance (RSS / dof).
  // Priors are weighed against data whose noise is `noise` (one prior sigma = one noise of residual).
  const double sigma2 = priors > 0 ? noise * noise : s.rss / std::max(1, points - k);
  for (size_t i = 0; i < n; ++i) {
    if (!active[i]) continue;
    double v = 0;
    covariance.GetCovarianceBlock(&c[i], &c[i], &v);
    s.se[i] = std::sqrt(std::max(0.0, v) * sigma2);
  }
  s.se_known = true;
  return s;
}

double bic(double rss, int points, int k) {
  const double n = std::max(1, points);
  return n * std::log(std::max(rss, 1e-30) / n) + k * std::log(n);
}

// Rank of the columns `cols` of X after scaling each to unit norm.
int rank_of(const Eigen::MatrixXd& x, const std::vector<int>& cols) {
  if (cols.empty()) return 0;
  Eigen::MatrixXd m(x.rows(), static_cast<Eigen::Index>(cols.size()));
  for (size_t j = 0; j < cols.size(); ++j) {
    Eigen::VectorXd col = x.col(cols[j]);
    const double norm = col.norm();
    m.col(static_cast<Eigen::Index>(j)) = norm > 0 ? Eigen::VectorXd(col / norm) : col;
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(m);
  qr.setThreshold(1e-7);
  return static_cast<int>(qr.rank());
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

// ---- model selection shared by the step and peak fits ----

struct Selection {
  std::vector<bool> active;
  std::vector<std::string> reason;
  Solved solved;
};

struct SelectionInput {
  std::vector<std::string> names;
  std::vector<int> core;        // always fitted (the shape's own work), if exercised
  std::vector<int> optional;    // tested one by one
  std::vector<bool> exercised;  // feature non-zero somewhere
  // Terms that enter the model non-linearly (the host side, through the smooth maximum): a linear rank test
  // says nothing about them (a constant launch count is a multiple of the fixed term's column), so they
  // are judged by BIC and their t-ratio alone.
  std::vector<bool> nonlinear;
  std::vector<double> prior;    // per term; > 0: a prior pulls it (always fitted, identifiable through the prior)
  Eigen::MatrixXd design;       // points x terms (scaled like the residuals), for collinearity
  int points = 0;
  int priors = 0;
  double min_t_ratio = 2.0;
  std::string residual_unit;  // of the residuals, for messages
  std::function<Solved(const std::vector<bool>&)> solve;
};

Selection select_terms(const SelectionInput& in) {
  const size_t n = in.names.size();
  Selection sel;
  sel.active.assign(n, false);
  sel.reason.assign(n, "");
  std::vector<int> cols;
  std::vector<int> core = in.core;
  for (size_t j = 0; j < n; ++j)
    if (!in.prior.empty() && in.prior[j] > 0 && std::find(core.begin(), core.end(), static_cast<int>(j)) == core.end())
      core.push_back(static_cast<int>(j));
  for (int j : core) {
    if (!in.prior.empty() && in.prior[j] > 0) {
      sel.active[j] = true;
      sel.reason[j] = "prior: fitted with a prior at " + fmt(in.prior[j]) +
                      (in.exercised[j] ? "" : " (no record exercises it: the prior's value)");
      if (in.exercised[j]) cols.push_back(j);
      continue;
    }
    if (!in.exercised[j]) {
      sel.reason[j] = "not selected: no record exercises it (its feature is 0 in every record)";
      continue;
    }
    if (static_cast<int>(cols.size()) + 1 > in.points + in.priors) {
      sel.reason[j] = "not selected: too few points (" + std::to_string(in.points) + ") for another term";
      continue;
    }
    std::vector<int> trial = cols;
    trial.push_back(j);
    if (rank_of(in.design, trial) < static_cast<int>(trial.size())) {
      sel.reason[j] = "not selected: collinear with the terms already in these records";
      continue;
    }
    cols = trial;
    sel.active[j] = true;
    sel.reason[j] = "core: the shape's own work, always fitted";
  }
  sel.solved = in.solve(sel.active);
  int k = 0;
  for (size_t j = 0; j < n; ++j) k += sel.active[j] ? 1 : 0;
  double current_bic = bic(sel.solved.rss, in.points, k);
  std::vector<int> remaining;
  for (int j : in.optional) {
    if (sel.active[j]) continue;
    if (!in.exercised[j]) {
      sel.reason[j] = "not selected: no record exercises it (its feature is 0 in every record)";
      continue;
    }
    remaining.push_back(j);
  }
  while (!remaining.empty()) {
    int best = -1;
    double best_bic = current_bic;
    Solved best_solved;
    for (int j : remaining) {
      if (in.points + in.priors - (k + 1) < 1) {
        sel.reason[j] = "not selected: " + std::to_string(in.points) + " points for " + std::to_string(k + 1) +
                        " terms leave no degree of freedom to test it (the " + std::to_string(k) +
                        "-term fit leaves an RMS residual of " +
                        fmt(std::sqrt(sel.solved.rss / std::max(1, in.points))) + " " + in.residual_unit + ")";
        continue;
      }
      const bool linear = in.nonlinear.empty() || !in.nonlinear[j];
      std::vector<int> trial = cols;
      trial.push_back(j);
      if (linear && rank_of(in.design, trial) < static_cast<int>(trial.size())) {
        sel.reason[j] = "not selected: collinear with the selected terms in these records (the data cannot tell them apart)";
        continue;
      }
      std::vector<bool> active = sel.active;
      active[j] = true;
      Solved s = in.solve(active);
      const double v = s.value[j], se = s.se[j];
      const double b = bic(s.rss, in.points, k + 1);
      if (!(v > in.min_t_ratio * se) || v <= 0) {
        sel.reason[j] = "not selected: estimate " + fmt(v) + " ± " + fmt(se) + " is within " + fmt(in.min_t_ratio) +
                        " standard errors of 0";
        continue;
      }
      if (b >= current_bic) {
        sel.reason[j] = "not selected: BIC does not improve (" + fmt(current_bic) + " -> " + fmt(b) + ")";
        continue;
      }
      sel.reason[j] = "candidate";
      if (b < best_bic) {
        best = j;
        best_bic = b;
        best_solved = s;
      }
    }
    if (best < 0) break;
    sel.active[best] = true;
    if (in.nonlinear.empty() || !in.nonlinear[best]) cols.push_back(best);
    ++k;
    sel.reason[best] = "selected: estimate " + fmt(best_solved.value[best]) + " ± " + fmt(best_solved.se[best]) +
                       ", BIC " + fmt(current_bic) + " -> " + fmt(best_bic);
    current_bic = best_bic;
    sel.solved = best_solved;
    remaining.erase(std::remove(remaining.begin(), remaining.end(), best), remaining.end());
    for (int j : remaining)
      if (sel.reason[j] == "candidate") sel.reason[j] = "not selected: a better term was chosen first";
  }
  for (int j : remaining)
    if (sel.reason[j] == "candidate") sel.reason[j] = "not selected";
  for (size_t j = 0; j < n; ++j)
    if (sel.active[j] && sel.solved.value[j] <= 0) {
      sel.active[j] = false;
      sel.reason[j] = "dropped: the estimate sits at the bound 0 (the data want it negative)";
    }
  return sel;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double capacity_of(const Record& r) {
  auto it = r.extra.find("capacity_gib");
  if (it != r.extra.end() && it->is_number()) return it->get<double>();
  return model::gpu_info(r.gpu).capacity_gib;
}

// ---- the step fit ----

constexpr double kDefaultOverlap = 4;
constexpr double kOverlapGrid[] = {1, 1.5, 2, 3, 4, 6, 8, 16};

// Kernel launches of one step as the record's writer counted them (harness CUPTI, torch.profiler).
std::optional<double> launches_of(const Record& r) {
  const auto it = r.extra.find("launches_per_step");
  if (it == r.extra.end() || !it->is_number() || it->get<double>() <= 0) return std::nullopt;
  return it->get<double>();
}

bool has_launch_counts(const std::vector<Record>& records) {
  return std::any_of(records.begin(), records.end(), [](const Record& r) { return launches_of(r).has_value(); });
}

// The median count over the records that have one; 1000 (nominal) when none does.
double typical_launches(const std::vector<Record>& records) {
  std::vector<double> counts;
  for (const Record& r : records)
    if (auto n = launches_of(r)) counts.push_back(*n);
  if (counts.empty()) return 1000.0;
  std::nth_element(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(counts.size() / 2), counts.end());
  return counts[counts.size() / 2];
}

// A steady-state step: not a micro-batch of a recorded run (those pay first-seen and start costs, which
// calibrate/run_costs.hpp fits on top of the steady model).
bool steady_step(const Record& r) {
  const auto it = r.extra.find("probe");
  return it == r.extra.end() || *it != "run";
}

void fit_step(const model::FeatureMaker& maker, const std::vector<Record>& records, const FitOptions& o,
              FitReport& report) {
  std::vector<model::StepFeatures> f;
  std::vector<double> y;
  std::vector<int64_t> lines;
  std::vector<std::string> files;
  const double launches = typical_launches(records);
  for (const Record& r : records)
    if (!r.oom && r.step_s && steady_step(r)) {
      f.push_back(maker.step(to_batch(r)));
      f.back().x[model::kHost] = launches_of(r).value_or(launches) / 1000.0;
      y.push_back(*r.step_s);
      lines.push_back(r.line);
      files.push_back(r.file);
    }
  report.coefficients.launches_per_step = launches;
  if (!has_launch_counts(records))
    report.notes.push_back("host: no record counts its kernel launches (launches_per_step): the host term is "
                           "fitted per nominal 1000 launches, i.e. in seconds per step");
  const int points = static_cast<int>(y.size());
  std::vector<double> scale(y.size(), 1.0);
  if (o.residuals == "relative") scale = y;
  if (points < 2)
    throw InputError("calibrate: " + std::to_string(points) +
                     " step-time record(s). Violated constraint: at least 2 records with step_s (not OOM)");
  SelectionInput in;
  in.names.assign(model::step_term_names().begin(), model::step_term_names().end());
  in.core = {model::kGemm, model::kAttention, model::kAttentionMath};
  in.optional = {model::kFixed, model::kMaskPath, model::kExpertStream, model::kHost};
  in.exercised.assign(kStepTerms, false);
  in.nonlinear.assign(kStepTerms, false);
  in.nonlinear[model::kHost] = true;
  in.design = Eigen::MatrixXd::Zero(points, kStepTerms);
  for (int i = 0; i < points; ++i)
    for (int j = 0; j < kStepTerms; ++j) {
      in.design(i, j) = f[i].x[j] / scale[i];
      if (f[i].x[j] > 0) in.exercised[j] = true;
    }
  // The streaming floor differs from a fixed cost only where fewer than all experts are hit: when every
  // record hits (nearly) every expert, B is the same everywhere and the floor is a fixed cost minus a
  // slope, which a handful of points would happily use to bend the GEMM rate. Test it only where the
  // streamed bytes vary (by more than 2 %) between records.
  double b_min = 1e300, b_max = 0;
  for (const auto& fi : f) {
    b_min = std::min(b_min, fi.x[model::kExpertStream]);
    b_max = std::max(b_max, fi.x[model::kExpertStream]);
  }
  if (b_max <= 0 || b_min > 0.98 * b_max) in.exercised[model::kExpertStream] = false;
  in.points = points;
  in.min_t_ratio = o.min_t_ratio;
  in.residual_unit = o.residuals == "relative" ? "(relative)" : "s";
  std::vector<double> prior;
  if (o.prior) {
    prior.assign(kStepTerms, 0.0);
    for (int j = 0; j < kStepTerms; ++j)
      if (o.prior->step[j].selected) prior[j] = o.prior->step[j].value;
  }
  // A linear least-squares start (clamped to > 0) for the rates; the streaming floor starts where it
  // just bites on the smallest batch.
  auto initial = [&](const std::vector<bool>& active) {
    std::vector<int> cols;
    for (int j = 0; j < kStepTerms; ++j)
      if (active[j] && j != model::kExpertStream && j != model::kHost) cols.push_back(j);
    Eigen::MatrixXd a(points, static_cast<Eigen::Index>(cols.size()));
    for (size_t c = 0; c < cols.size(); ++c) a.col(static_cast<Eigen::Index>(c)) = in.design.col(cols[c]);
    Eigen::VectorXd target(points);
    for (int i = 0; i < points; ++i) target(i) = y[i] / scale[i];
    Eigen::VectorXd sol = a.completeOrthogonalDecomposition().solve(target);
    std::vector<double> init(kStepTerms, 0.0);
    double typical = 0;
    for (size_t c = 0; c < cols.size(); ++c) typical = std::max(typical, std::abs(sol(static_cast<Eigen::Index>(c))));
    for (size_t c = 0; c < cols.size(); ++c)
      init[cols[c]] = std::max(sol(static_cast<Eigen::Index>(c)), 1e-3 * typical + 1e-12);
    for (int j = 0; j < kStepTerms; ++j)
      if (active[j] && !prior.empty() && prior[j] > 0) init[j] = prior[j];
    if (active[model::kExpertStream]) {
      double ratio = 0;
      for (int i = 0; i < points; ++i)
        if (f[i].x[model::kExpertStream] > 0)
          ratio = std::max(ratio, f[i].expert_tflop / f[i].x[model::kExpertStream]);
      init[model::kExpertStream] = 1.5 * init[model::kGemm] * ratio + 1e-9;
    }
    if (active[model::kHost]) {
      // Start the host floor at the fastest measured step: below it the device cannot be the bound.
      double floor = std::numeric_limits<double>::max();
      for (int i = 0; i < points; ++i)
        if (f[i].x[model::kHost] > 0) floor = std::min(floor, y[i] / f[i].x[model::kHost]);
      init[model::kHost] = floor;
    }
    return init;
  };
  double overlap = kDefaultOverlap;
  auto rss_of = [&](const std::vector<double>& c) {
    const double* p[kStepTerms];
    for (int j = 0; j < kStepTerms; ++j) p[j] = &c[j];
    double rss = 0;
    for (int i = 0; i < points; ++i) {
      const double e = (model::step_seconds(p, f[i], overlap) - y[i]) / scale[i];
      rss += e * e;
    }
    return rss;
  };
  in.prior = prior;
  for (double p : prior) in.priors += p > 0 ? 1 : 0;
  in.solve = [&](const std::vector<bool>& active) {
    return solve(
        initial(active), active, prior, o.prior_rel_sigma, kStepNoiseRel,
        [&](ceres::Problem& problem, std::vector<double>& c) {
          for (int i = 0; i < points; ++i)
            problem.AddResidualBlock(
                new ceres::AutoDiffCostFunction<StepCost, 1, 1, 1, 1, 1, 1, 1, 1>(new StepCost(f[i], y[i], scale[i], overlap)),
                make_loss(o, o.loss_scale), &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6]);
          return points;
        },
        rss_of);
  };
  Selection sel = select_terms(in);
  if (sel.active[model::kHost]) {
    // The overlap exponent is not a linear rate: the whole selection is repeated for each exponent of a grid
    // (p = 1: host and device times add; 16: nearly max(D, H)) and the lowest BIC is kept, so that a wrong p
    // cannot make a fixed term look necessary.
    auto bic_of = [&](const Selection& s) {
      int k = 0;
      for (bool a : s.active) k += a ? 1 : 0;
      return bic(s.solved.rss, points, k);
    };
    double best_p = overlap, best_bic = bic_of(sel);
    for (double p : kOverlapGrid) {
      if (p == kDefaultOverlap) continue;
      overlap = p;
      Selection s = select_terms(in);
      const double b = bic_of(s);
      if (s.active[model::kHost] && b < best_bic) {
        best_bic = b;
        best_p = p;
        sel = std::move(s);
      }
    }
    overlap = best_p;
    report.notes.push_back("host: overlap exponent p = " + fmt(best_p) + " (lowest BIC of p in 1, 1.5, 2, 3, 4, 6, 8, "
                           "16; 1 = the host and device times add, 16 = nearly the larger of the two)");
  }
  auto& coeffs = report.coefficients;
  coeffs.overlap_exponent = overlap;
  coeffs.points = points;
  for (int j = 0; j < kStepTerms; ++j) {
    coeffs.step[j].selected = sel.active[j];
    coeffs.step[j].value = sel.active[j] ? sel.solved.value[j] : 0.0;
    coeffs.step[j].std_error = sel.active[j] ? sel.solved.se[j] : 0.0;
    coeffs.step[j].reason = sel.reason[j];
  }
  if (!sel.solved.se_known)
    report.notes.push_back("step: standard errors unknown (" + std::to_string(points) +
                           " points leave no degree of freedom, or the covariance is rank deficient)");
  std::vector<double> c(kStepTerms);
  for (int j = 0; j < kStepTerms; ++j) c[j] = coeffs.step[j].value;
  const double* p[kStepTerms];
  for (int j = 0; j < kStepTerms; ++j) p[j] = &c[j];
  double sum2 = 0;
  for (int i = 0; i < points; ++i) {
    StepResidualRow row{files[i], lines[i], y[i], model::step_seconds(p, f[i], overlap)};
    sum2 += row.error_rel() * row.error_rel();
    report.step_residuals.push_back(row);
  }
  coeffs.step_rms_rel = std::sqrt(sum2 / points);
}

// ---- the peak fit ----

void fit_peak(const model::FeatureMaker& maker, const std::vector<Record>& records, const FitOptions& o,
              FitReport& report) {
  std::vector<model::MemoryFeatures> f;
  std::vector<double> target;
  std::vector<bool> oom;
  std::vector<int64_t> lines;
  std::vector<std::string> files;
  int points = 0;
  for (const Record& r : records) {
    if (r.usable_peak()) {
      f.push_back(maker.memory(to_batch(r)));
      target.push_back(*r.peak_gib);
      oom.push_back(false);
      lines.push_back(r.line);
      files.push_back(r.file);
      ++points;
    } else if (r.oom) {
      const double cap = capacity_of(r);
      if (cap <= 0) {
        report.notes.push_back(r.where() + ": OOM record not used (the capacity of '" + r.gpu +
                               "' is unknown; add \"capacity_gib\" to the record)");
        continue;
      }
      f.push_back(maker.memory(to_batch(r)));
      target.push_back(cap);
      oom.push_back(true);
      lines.push_back(r.line);
      files.push_back(r.file);
    }
  }
  auto& coeffs = report.coefficients;
  coeffs.peak_points = points;
  if (points < 1) {
    for (int j = 0; j < kMemoryTerms; ++j)
      coeffs.memory[j] = {0, 0, false, "not selected: no record has a usable peak_gib"};
    report.notes.push_back("peak: no usable peak_gib; predicted peaks are the weights and adapters only");
    return;
  }
  const int rows = static_cast<int>(f.size());
  SelectionInput in;
  in.names.assign(model::memory_term_names().begin(), model::memory_term_names().end());
  in.core = {model::kMemFixed, model::kMemToken};
  in.optional = {model::kMemMask, model::kMemScore};
  in.exercised.assign(kMemoryTerms, false);
  in.design = Eigen::MatrixXd::Zero(points, kMemoryTerms);
  for (int i = 0, p = 0; i < rows; ++i) {
    if (oom[i]) continue;
    for (int j = 0; j < kMemoryTerms; ++j) {
      in.design(p, j) = f[i].y[j];
      if (f[i].y[j] > 0) in.exercised[j] = true;
    }
    ++p;
  }
  in.points = points;
  in.min_t_ratio = o.min_t_ratio;
  in.residual_unit = "GiB";
  std::vector<double> prior;
  if (o.prior) {
    prior.assign(kMemoryTerms, 0.0);
    for (int j = 0; j < kMemoryTerms; ++j)
      if (o.prior->memory[j].selected) prior[j] = o.prior->memory[j].value;
  }
  auto predict = [&](const std::vector<double>& m, int i) {
    double peak = f[i].base_gib;
    for (int j = 0; j < kMemoryTerms; ++j) peak += m[j] * f[i].y[j];
    return peak;
  };
  auto rss_of = [&](const std::vector<double>& m) {
    double rss = 0;
    for (int i = 0; i < rows; ++i) {
      double e = predict(m, i) - target[i];
      if (oom[i] && e > 0) e = 0;
      rss += e * e;
    }
    return rss;
  };
  in.prior = prior;
  for (double p : prior) in.priors += p > 0 ? 1 : 0;
  in.solve = [&](const std::vector<bool>& active) {
    std::vector<double> init(kMemoryTerms, 1.0);
    for (int j = 0; j < kMemoryTerms; ++j)
      if (!prior.empty() && prior[j] > 0) init[j] = prior[j];
    return solve(
        init, active, prior, o.prior_rel_sigma, kPeakNoiseGib,
        [&](ceres::Problem& problem, std::vector<double>& m) {
          for (int i = 0; i < rows; ++i)
            problem.AddResidualBlock(new ceres::AutoDiffCostFunction<PeakCost, 1, 1, 1, 1, 1>(new PeakCost(f[i], target[i], oom[i])),
                                     make_loss(o, o.loss_scale * 10.0), &m[0], &m[1], &m[2], &m[3]);
          return points;
        },
        rss_of);
  };
  const Selection sel = select_terms(in);
  for (int j = 0; j < kMemoryTerms; ++j) {
    coeffs.memory[j].selected = sel.active[j];
    coeffs.memory[j].value = sel.active[j] ? sel.solved.value[j] : 0.0;
    coeffs.memory[j].std_error = sel.active[j] ? sel.solved.se[j] : 0.0;
    coeffs.memory[j].reason = sel.reason[j];
  }
  std::vector<double> m(kMemoryTerms);
  for (int j = 0; j < kMemoryTerms; ++j) m[j] = coeffs.memory[j].value;
  double sum2 = 0;
  for (int i = 0; i < rows; ++i) {
    PeakResidualRow row{files[i], lines[i], target[i], predict(m, i), oom[i]};
    if (!oom[i]) sum2 += (row.predicted_gib - row.measured_gib) * (row.predicted_gib - row.measured_gib);
    report.peak_residuals.push_back(row);
  }
  coeffs.peak_rms_gib = std::sqrt(sum2 / points);
}

}  // namespace

void check_uniform(const std::vector<Record>& records, const std::string& file) {
  if (records.empty()) throw InputError(file + ": no records. Violated constraint: at least 2 records");
  std::vector<std::string> problems;
  const Record& first = records.front();
  for (const Record& r : records) {
    auto differs = [&](const char* field, const std::string& a, const std::string& b) {
      if (a != b)
        problems.push_back((r.file.empty() ? file : r.file) + ":" + std::to_string(r.line) + ": " + field + " = '" + a + "' but line " +
                           first.where() + " has '" + b +
                           "'. Violated constraint: one model, GPU and tier per fit (filter with --tier/--gpu)");
    };
    differs("model", r.model, first.model);
    differs("gpu", r.gpu, first.gpu);
    differs("tier", r.tier, first.tier);
  }
  if (!problems.empty()) throw InputError(problems);
}

FitReport fit(const model::ModelShape& shape, const std::vector<Record>& records, const FitOptions& options) {
  if (options.residuals != "relative" && options.residuals != "absolute")
    throw InputError("--residuals = '" + options.residuals + "'. Violated constraint: relative or absolute");
  if (options.loss != "none" && options.loss != "huber" && options.loss != "cauchy")
    throw InputError("--loss = '" + options.loss + "'. Violated constraint: one of none, huber, cauchy");
  if (records.empty()) throw InputError("calibrate: no records to fit");
  FitReport report;
  auto& c = report.coefficients;
  c.model = records.front().model;
  c.gpu = records.front().gpu;
  c.tier = records.front().tier;
  c.tool_version = options.tool_version;
  c.date = options.date.empty() ? now_utc() : options.date;
  c.loss = options.loss;
  if (options.prior) {
    c.lora_rank = options.prior->lora_rank;
    c.prior = options.prior_name.empty() ? "given" : options.prior_name;
    report.notes.push_back("prior: " + c.prior + " (" + options.prior->gpu + ", tier " + options.prior->tier +
                           ", " + std::to_string(options.prior->points) + " points), each coefficient ±" +
                           fmt(options.prior_rel_sigma * 100) + " % against 1 % step noise");
  }
  const model::TierRules tier = model::tier_from_label(c.tier);
  const model::FeatureMaker maker(shape, tier, model::gpu_info(c.gpu), c.lora_rank);
  if (!tier.known)
    report.notes.push_back("tier '" + c.tier + "' is not a known label: Hugging Face sdpa mask semantics assumed, every "
                           "term free (the mask-path term included); the data decide");
  fit_step(maker, records, options, report);
  fit_peak(maker, records, options, report);
  fit_run_costs(shape, records, options.records_file, c, report.notes);
  return report;
}

}  // namespace stepcast::calibrate
