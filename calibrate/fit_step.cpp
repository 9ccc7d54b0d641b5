// The step-time fit: the points and their features over the term table (the model's rows plus any extra ones),
// term selection for a given overlap exponent, the overlap-exponent search, and the final coefficients.
#include <ceres/ceres.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>

#include "calibrate/fit_parts.hpp"
#include "calibrate/select.hpp"
#include "calibrate/solve.hpp"
#include "model/errors.hpp"

namespace stepcast::calibrate {

namespace {

using model::TermForm;

// Measurement noise the priors are weighed against: repeated steps on the H200 vary by ~1 % (repeated
// 2 x 16384 points of measurements/records/seed-sm120.jsonl: 35.017 / 35.244 / 35.329 s).
constexpr double kStepNoiseRel = 0.01;

// The overlap exponent p of step = (D^p + H^p)^(1/p) (model/features.hpp): the start, and the grid searched
// when the host term is selected (1: the sides add; 16: nearly the larger of the two).
constexpr double kDefaultOverlap = 4;
constexpr double kOverlapGrid[] = {1, 1.5, 2, 3, 4, 6, 8, 16};

// Jets of this many partial derivatives: the model's 11 step terms (and a trial one) in one pass.
constexpr int kJetStride = 12;

// ---- the points ----

struct StepPoints {
  std::vector<model::TermSpec> terms;   // the model's rows, then the extra ones
  std::vector<std::vector<double>> x;   // per point, one feature per term
  std::vector<double> expert_tflop;     // per point: F_exp
  std::vector<double> y;                // measured step seconds
  std::vector<double> scale;            // of the residuals: y (relative) or 1 s (absolute)
  std::vector<int64_t> lines;
  std::vector<std::string> files;
  Eigen::MatrixXd design;               // x / scale: points x terms
  int size() const { return static_cast<int>(y.size()); }
};

// Kernel launches of one step as the record's writer counted them (harness CUPTI, torch.profiler).
std::optional<double> launches_of(const Record& r) {
  const auto it = r.extra.find("launches_per_step");
  if (it == r.extra.end() || !it->is_number() || it->get<double>() <= 0) return std::nullopt;
  return it->get<double>();
}

// Each model's median count (a pooled fit's models launch different numbers of kernels); a record that counts its
// own keeps it, one of a model that counted none takes `fallback`.
class LaunchCounts {
 public:
  LaunchCounts(const std::vector<Record>& records, double fallback) : fallback_(fallback) {
    std::map<std::string, std::vector<Record>> by_model;
    for (const Record& r : records)
      if (launches_of(r)) by_model[r.model].push_back(r);
    for (const auto& [model, mine] : by_model) median_[model] = typical_of(mine);
  }
  double of(const Record& r) const {
    if (auto n = launches_of(r)) return *n;
    const auto it = median_.find(r.model);
    return it == median_.end() ? fallback_ : it->second;
  }

 private:
  static double typical_of(std::vector<Record> records);
  double fallback_;
  std::map<std::string, double> median_;
};

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

// A split-off term (model/features.hpp absent_reads_as: the LoRA and expert GEMM rates) that no prior prices is
// tied to the term it was split from: its work joins that term's column and it takes that term's rate. Total
// step times alone cannot tell GEMM FLOPs of one model apart (they all scale with tokens); the kernel tables can
// (tools/kernel_efficiency.py writes them as a --prior).
int tied_to(const model::TermSpec& t, int j, const FitOptions& o) {
  const auto priced = [&](int k) { return o.prior && o.prior->step[static_cast<size_t>(k)].selected; };
  if (j >= model::kStepTerms || t.absent_reads_as < 0 || priced(j)) return -1;
  // Up the chain to the first term that is fitted itself (a masked efficient rate -> efficient -> fused).
  int to = t.absent_reads_as;
  while (model::kStepTermTable[static_cast<size_t>(to)].absent_reads_as >= 0 && !priced(to))
    to = model::kStepTermTable[static_cast<size_t>(to)].absent_reads_as;
  return to;
}

// A table-only term (model/features.hpp) that no prior prices is held at 0: its column is cleared.
bool unpriced_table_term(const model::TermSpec& t, int j, const FitOptions& o) {
  return j < model::kStepTerms && t.table_only && !(o.prior && o.prior->step[static_cast<size_t>(j)].selected);
}

void tie_split_terms(StepPoints& p, const FitOptions& o) {
  for (size_t j = 0; j < p.terms.size(); ++j) {
    if (unpriced_table_term(p.terms[j], static_cast<int>(j), o))
      for (auto& x : p.x) x[j] = 0;
    const int to = tied_to(p.terms[j], static_cast<int>(j), o);
    if (to < 0) continue;
    for (auto& x : p.x) {
      x[static_cast<size_t>(to)] += x[j];
      x[j] = 0;
    }
  }
}

double LaunchCounts::typical_of(std::vector<Record> records) { return typical_launches(records); }

StepPoints step_points(const RecordFeatures& maker, const std::vector<Record>& records, const FitOptions& o,
                       double launches) {
  const LaunchCounts counts(records, launches);
  StepPoints p;
  p.terms.assign(model::kStepTermTable.begin(), model::kStepTermTable.end());
  for (const auto& extra : o.extra_step_terms) p.terms.push_back(extra.spec);
  for (const Record& r : records) {
    if (r.oom || !r.step_s || !steady_step(r)) continue;
    const model::MicroBatch batch = to_batch(r);
    model::StepFeatures f = maker.of(r).step(batch);
    f.x[model::kHost] = counts.of(r) / 1000.0;
    std::vector<double> x(f.x.begin(), f.x.end());
    for (const auto& extra : o.extra_step_terms) x.push_back(extra.feature(batch));
    p.x.push_back(std::move(x));
    p.expert_tflop.push_back(f.expert_tflop);
    p.y.push_back(*r.step_s);
    p.scale.push_back(o.residuals == "relative" ? *r.step_s : 1.0);
    p.lines.push_back(r.line);
    p.files.push_back(r.file);
  }
  tie_split_terms(p, o);
  p.design = Eigen::MatrixXd::Zero(p.size(), static_cast<Eigen::Index>(p.terms.size()));
  for (int i = 0; i < p.size(); ++i)
    for (size_t j = 0; j < p.terms.size(); ++j) p.design(i, static_cast<Eigen::Index>(j)) = p.x[i][j] / p.scale[i];
  return p;
}

double predicted_s(const StepPoints& p, int i, const double* c, double overlap) {
  return model::step_seconds(std::span<const model::TermSpec>(p.terms), c, p.x[i].data(), p.expert_tflop[i], overlap);
}

// ---- one solve at a given overlap exponent ----

// Relative step-time error (the bar is a MAPE, so every record weighs the same whatever its size); with
// absolute residuals the scale is 1 s and the fit is plain least squares in seconds.
struct StepCost {
  template <typename T>
  bool operator()(T const* const* c, T* residual) const {
    residual[0] = (model::step_seconds(terms, c[0], x, expert_tflop, overlap) - T(measured_s)) / T(scale_s);
    return true;
  }
  std::span<const model::TermSpec> terms;
  const double* x;
  double expert_tflop, measured_s, scale_s, overlap;
};

class StepLeastSquares final : public LeastSquaresData {
 public:
  StepLeastSquares(const StepPoints& p, const FitOptions& o, double overlap) : p_(p), o_(o), overlap_(overlap) {}
  int add_residuals(ceres::Problem& problem, double* c) const override {
    for (int i = 0; i < p_.size(); ++i) {
      auto* cost = new ceres::DynamicAutoDiffCostFunction<StepCost, kJetStride>(
          new StepCost{p_.terms, p_.x[i].data(), p_.expert_tflop[i], p_.y[i], p_.scale[i], overlap_});
      cost->AddParameterBlock(static_cast<int>(p_.terms.size()));
      cost->SetNumResiduals(1);
      problem.AddResidualBlock(cost, make_loss(o_.loss, o_.loss_scale), c);
    }
    return p_.size();
  }
  double rss(const std::vector<double>& c) const override {
    double sum = 0;
    for (int i = 0; i < p_.size(); ++i) {
      const double e = (predicted_s(p_, i, c.data(), overlap_) - p_.y[i]) / p_.scale[i];
      sum += e * e;
    }
    return sum;
  }

 private:
  const StepPoints& p_;
  const FitOptions& o_;
  const double overlap_;
};

// A linear least-squares start (clamped to > 0) for the active linear rates.
std::vector<double> linear_start(const StepPoints& p, const std::vector<bool>& active) {
  std::vector<int> cols;
  for (size_t j = 0; j < p.terms.size(); ++j)
    if (active[j] && p.terms[j].form == TermForm::linear) cols.push_back(static_cast<int>(j));
  Eigen::MatrixXd a(p.size(), static_cast<Eigen::Index>(cols.size()));
  for (size_t c = 0; c < cols.size(); ++c) a.col(static_cast<Eigen::Index>(c)) = p.design.col(cols[c]);
  Eigen::VectorXd target(p.size());
  for (int i = 0; i < p.size(); ++i) target(i) = p.y[i] / p.scale[i];
  const Eigen::VectorXd sol = a.completeOrthogonalDecomposition().solve(target);
  std::vector<double> init(p.terms.size(), 0.0);
  double typical = 0;
  for (Eigen::Index c = 0; c < sol.size(); ++c) typical = std::max(typical, std::abs(sol(c)));
  for (size_t c = 0; c < cols.size(); ++c)
    init[cols[c]] = std::max(sol(static_cast<Eigen::Index>(c)), 1e-3 * typical + 1e-12);
  return init;
}

// The streaming floor starts where it just bites on the smallest batch (given the GEMM rate's start).
double stream_start(const StepPoints& p, size_t j, double gemm_rate) {
  double ratio = 0;
  for (int i = 0; i < p.size(); ++i)
    if (p.x[i][j] > 0) ratio = std::max(ratio, p.expert_tflop[i] / p.x[i][j]);
  return 1.5 * gemm_rate * ratio + 1e-9;
}

// The host rate starts at the fastest measured step: below it the device cannot be the bound.
double host_start(const StepPoints& p, size_t j) {
  double floor = std::numeric_limits<double>::max();
  for (int i = 0; i < p.size(); ++i)
    if (p.x[i][j] > 0) floor = std::min(floor, p.y[i] / p.x[i][j]);
  return floor;
}

// The solver's start: linear rates from least squares or their prior, the other forms from their own rule.
std::vector<double> initial(const StepPoints& p, const std::vector<bool>& active, const std::vector<double>& prior) {
  std::vector<double> init = linear_start(p, active);
  for (size_t j = 0; j < init.size(); ++j)
    if (active[j] && !prior.empty() && prior[j] > 0) init[j] = prior[j];
  for (size_t j = 0; j < init.size(); ++j) {
    if (!active[j]) continue;
    if (p.terms[j].form == TermForm::expert_stream) init[j] = stream_start(p, j, init[model::kExpertGemm] > 0 ? init[model::kExpertGemm] : init[model::kGemm]);
    if (p.terms[j].form == TermForm::host) init[j] = host_start(p, j);
  }
  return init;
}

class StepSolver final : public TermSolver {
 public:
  StepSolver(const StepPoints& p, const FitOptions& o, const std::vector<double>& prior, double overlap)
      : p_(p), o_(o), prior_(prior), overlap_(overlap) {}
  Solved solve(const std::vector<bool>& active) const override {
    const SolveSetup setup{p_.terms, prior_, o_.prior_rel_sigma, kStepNoiseRel};
    return calibrate::solve(setup, initial(p_, active, prior_), active, StepLeastSquares(p_, o_, overlap_));
  }

 private:
  const StepPoints& p_;
  const FitOptions& o_;
  const std::vector<double>& prior_;
  const double overlap_;
};

// ---- selection, the overlap search, the final fit ----

// Which terms the points can speak to. The streaming floor differs from a fixed cost only where fewer than all
// experts are hit: when every record hits (nearly) every expert, B is the same everywhere and the floor is a
// fixed cost minus a slope, which a handful of points would happily use to bend the GEMM rate. It is tested
// only where the streamed bytes vary (by more than 2 %) between records.
std::vector<bool> exercised_terms(const StepPoints& p) {
  std::vector<bool> exercised(p.terms.size(), false);
  for (size_t j = 0; j < p.terms.size(); ++j) {
    double lo = 1e300, hi = 0;
    for (int i = 0; i < p.size(); ++i) {
      lo = std::min(lo, p.x[i][j]);
      hi = std::max(hi, p.x[i][j]);
    }
    exercised[j] = hi > 0;
    if (p.terms[j].form == TermForm::expert_stream && lo > 0.98 * hi) exercised[j] = false;
  }
  return exercised;
}

std::vector<double> step_prior(const StepPoints& p, const FitOptions& o) {
  if (!o.prior) return {};
  std::vector<double> prior(p.terms.size(), 0.0);
  for (int j = 0; j < model::kStepTerms; ++j)
    if (p.terms[j].takes_prior && o.prior->step[j].selected) prior[j] = o.prior->step[j].value;
  return prior;
}

SelectionInput selection_input(const StepPoints& p, const FitOptions& o, std::vector<double> prior) {
  SelectionInput in;
  in.terms = p.terms;
  in.exercised = exercised_terms(p);
  in.prior = std::move(prior);
  in.design = p.design;
  in.points = p.size();
  in.min_t_ratio = o.min_t_ratio;
  in.residual_unit = o.residuals == "relative" ? "(relative)" : "s";
  return in;
}

bool host_selected(const StepPoints& p, const Selection& s) {
  for (size_t j = 0; j < p.terms.size(); ++j)
    if (p.terms[j].form == TermForm::host && s.state[j].active) return true;
  return false;
}

struct OverlapChoice {
  double overlap = kDefaultOverlap;
  Selection selection;
};

// The overlap exponent is not a linear rate: the whole selection is repeated for each exponent of the grid and
// the lowest BIC kept, so that a wrong p cannot make a fixed term look necessary. Without a host term p stays
// at its default (it then changes nothing).
OverlapChoice choose_overlap(const StepPoints& p, const FitOptions& o, const SelectionInput& in) {
  OverlapChoice best{kDefaultOverlap, select_terms(in, StepSolver(p, o, in.prior, kDefaultOverlap))};
  if (!host_selected(p, best.selection)) return best;
  const auto bic_of = [&](const Selection& s) { return bic(s.solved.rss, p.size(), s.active_count()); };
  double best_bic = bic_of(best.selection);
  for (double overlap : kOverlapGrid) {
    if (overlap == kDefaultOverlap) continue;
    Selection s = select_terms(in, StepSolver(p, o, in.prior, overlap));
    const double b = bic_of(s);
    if (host_selected(p, s) && b < best_bic) {
      best_bic = b;
      best = {overlap, std::move(s)};
    }
  }
  return best;
}

model::Term term_of(const Selection& sel, const SelectionInput& in, size_t j) {
  const TermState& s = sel.state[j];
  return {s.active ? sel.solved.value[j] : 0.0, s.active ? sel.solved.se[j] : 0.0, s.active, reason(s, in, j)};
}

void report_fit(const StepPoints& p, const SelectionInput& in, const OverlapChoice& choice, const FitOptions& o,
                FitReport& report) {
  auto& coeffs = report.coefficients;
  coeffs.overlap_exponent = choice.overlap;
  coeffs.points = p.size();
  std::vector<double> c(p.terms.size());
  for (size_t j = 0; j < p.terms.size(); ++j) {
    const model::Term t = term_of(choice.selection, in, j);
    c[j] = t.value;
    if (j < model::kStepTerms)
      coeffs.step[j] = t;
    else
      report.extra_step.push_back(t);
  }
  for (size_t j = 0; j < model::kStepTerms; ++j) {
    if (unpriced_table_term(p.terms[j], static_cast<int>(j), o))
      coeffs.step[j].reason = "not selected: only a kernel-table rate (--prior) prices it; step totals cannot tell "
                              "it from the work that grows with it";
    const int to = tied_to(p.terms[j], static_cast<int>(j), o);
    if (to < 0) continue;
    coeffs.step[j] = coeffs.step[static_cast<size_t>(to)];
    coeffs.step[j].reason = "tied: no kernel-table rate (--prior) separates it; priced at " +
                            model::step_term_names()[static_cast<size_t>(to)];
  }
  if (!choice.selection.solved.se_known)
    report.notes.push_back("step: standard errors unknown (" + std::to_string(p.size()) +
                           " points leave no degree of freedom, or the covariance is rank deficient)");
  double sum2 = 0;
  for (int i = 0; i < p.size(); ++i) {
    StepResidualRow row{p.files[i], p.lines[i], p.y[i], predicted_s(p, i, c.data(), choice.overlap)};
    sum2 += row.error_rel() * row.error_rel();
    report.step_residuals.push_back(row);
  }
  coeffs.step_rms_rel = std::sqrt(sum2 / p.size());
}

}  // namespace

void fit_step(const RecordFeatures& maker, const std::vector<Record>& records, const FitOptions& o,
              FitReport& report) {
  const double launches = typical_launches(records);
  const StepPoints p = step_points(maker, records, o, launches);
  report.coefficients.launches_per_step = launches;
  if (!has_launch_counts(records))
    report.notes.push_back("host: no record counts its kernel launches (launches_per_step): the host term is "
                           "fitted per nominal 1000 launches, i.e. in seconds per step");
  if (p.size() < 2)
    throw InputError("calibrate: " + std::to_string(p.size()) +
                     " step-time record(s). Violated constraint: at least 2 records with step_s (not OOM)");
  const SelectionInput in = selection_input(p, o, step_prior(p, o));
  const OverlapChoice choice = choose_overlap(p, o, in);
  if (host_selected(p, choice.selection))
    report.notes.push_back("host: overlap exponent p = " + fmt(choice.overlap) +
                           " (lowest BIC of p in 1, 1.5, 2, 3, 4, 6, 8, "
                           "16; 1 = the host and device times add, 16 = nearly the larger of the two)");
  report_fit(p, in, choice, o, report);
}

}  // namespace stepcast::calibrate
