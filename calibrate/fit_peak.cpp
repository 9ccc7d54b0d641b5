// The peak-memory fit over the memory term table (model/features.hpp): peaks in GiB, OOM records as one-sided
// constraints, the same selection as the step fit.
#include <ceres/ceres.h>

#include <cmath>

#include "calibrate/fit_parts.hpp"
#include "calibrate/run_records.hpp"
#include "calibrate/select.hpp"
#include "calibrate/solve.hpp"
#include "model/tiers.hpp"

namespace stepcast::calibrate {

namespace {

using model::kMemoryTerms;

// Measurement noise the priors are weighed against: peaks repeat to well under 0.5 GiB.
constexpr double kPeakNoiseGib = 0.5;

struct PeakPoints {
  std::vector<model::MemoryFeatures> y;
  std::vector<double> target_gib;  // measured peak, or the capacity an OOM record reached
  std::vector<bool> oom;
  std::vector<int64_t> lines;
  std::vector<std::string> files;
  int points = 0;                  // records with a usable peak (OOM records are constraints, not points)
  int rows() const { return static_cast<int>(y.size()); }
};

double capacity_of(const Record& r) {
  auto it = r.extra.find("capacity_gib");
  if (it != r.extra.end() && it->is_number()) return it->get<double>();
  return model::gpu_info(r.gpu).capacity_gib;
}

PeakPoints peak_points(const RecordFeatures& maker, const std::vector<Record>& records, FitReport& report) {
  PeakPoints p;
  for (const Record& r : records) {
    double target = 0;
    if (r.usable_peak()) {
      target = *r.peak_gib;
      ++p.points;
    } else if (r.oom) {
      target = capacity_of(r);
      if (target <= 0) {
        report.notes.push_back(r.where() + ": OOM record not used (the capacity of '" + r.gpu +
                               "' is unknown; add \"capacity_gib\" to the record)");
        continue;
      }
    } else {
      continue;
    }
    // A run's micro-batch is priced with the state alive then and the run-only terms (model/run_memory.hpp).
    p.y.push_back(maker.of(r).memory(to_batch(r), run_position(r)));
    p.target_gib.push_back(target);
    p.oom.push_back(!r.usable_peak());
    p.lines.push_back(r.line);
    p.files.push_back(r.file);
  }
  return p;
}

template <typename T>
T predicted_gib(const model::MemoryFeatures& y, const T* m) {
  T peak = T(y.base_gib);
  for (int j = 0; j < kMemoryTerms; ++j) peak += m[j] * y.y[j];
  return peak;
}

// Peak error in GiB; an OOM record is a one-sided constraint: the peak must reach the capacity there.
struct PeakCost {
  template <typename T>
  bool operator()(const T* const m, T* residual) const {
    const T gap = predicted_gib(y, m) - T(target_gib);
    residual[0] = (oom && gap > T(0)) ? T(0) : gap;
    return true;
  }
  model::MemoryFeatures y;
  double target_gib;
  bool oom;
};

class PeakLeastSquares final : public LeastSquaresData {
 public:
  PeakLeastSquares(const PeakPoints& p, const FitOptions& o) : p_(p), o_(o) {}
  int add_residuals(ceres::Problem& problem, double* m) const override {
    for (int i = 0; i < p_.rows(); ++i)
      problem.AddResidualBlock(new ceres::AutoDiffCostFunction<PeakCost, 1, kMemoryTerms>(
                                   new PeakCost{p_.y[i], p_.target_gib[i], p_.oom[i]}),
                               make_loss(o_.loss, o_.loss_scale * 10.0), m);
    return p_.points;
  }
  double rss(const std::vector<double>& m) const override {
    double sum = 0;
    for (int i = 0; i < p_.rows(); ++i) {
      double e = predicted_gib(p_.y[i], m.data()) - p_.target_gib[i];
      if (p_.oom[i] && e > 0) e = 0;
      sum += e * e;
    }
    return sum;
  }

 private:
  const PeakPoints& p_;
  const FitOptions& o_;
};

class PeakSolver final : public TermSolver {
 public:
  PeakSolver(const PeakPoints& p, const FitOptions& o, const std::vector<double>& prior)
      : p_(p), o_(o), prior_(prior) {}
  Solved solve(const std::vector<bool>& active) const override {
    std::vector<double> init(kMemoryTerms, 1.0);
    for (int j = 0; j < kMemoryTerms; ++j)
      if (!prior_.empty() && prior_[j] > 0) init[j] = prior_[j];
    const SolveSetup setup{model::kMemoryTermTable, prior_, o_.prior_rel_sigma, kPeakNoiseGib};
    return calibrate::solve(setup, init, active, PeakLeastSquares(p_, o_));
  }

 private:
  const PeakPoints& p_;
  const FitOptions& o_;
  const std::vector<double>& prior_;
};

SelectionInput selection_input(const PeakPoints& p, const FitOptions& o) {
  SelectionInput in;
  in.terms = model::kMemoryTermTable;
  in.exercised.assign(kMemoryTerms, false);
  in.design = Eigen::MatrixXd::Zero(p.points, kMemoryTerms);
  for (int i = 0, row = 0; i < p.rows(); ++i) {
    if (p.oom[i]) continue;
    for (int j = 0; j < kMemoryTerms; ++j) {
      in.design(row, j) = p.y[i].y[j];
      if (p.y[i].y[j] > 0) in.exercised[j] = true;
    }
    ++row;
  }
  in.points = p.points;
  in.min_t_ratio = o.min_t_ratio;
  in.residual_unit = "GiB";
  if (o.prior) {
    in.prior.assign(kMemoryTerms, 0.0);
    for (int j = 0; j < kMemoryTerms; ++j)
      if (model::kMemoryTermTable[j].takes_prior && o.prior->memory[j].selected) in.prior[j] = o.prior->memory[j].value;
  }
  return in;
}

}  // namespace

void fit_peak(const RecordFeatures& maker, const std::vector<Record>& records, const FitOptions& o,
              FitReport& report) {
  const PeakPoints p = peak_points(maker, records, report);
  auto& coeffs = report.coefficients;
  coeffs.peak_points = p.points;
  if (p.points < 1) {
    for (int j = 0; j < kMemoryTerms; ++j) coeffs.memory[j] = {0, 0, false, "not selected: no record has a usable peak_gib"};
    report.notes.push_back("peak: no usable peak_gib; predicted peaks are the weights and adapters only");
    return;
  }
  const SelectionInput in = selection_input(p, o);
  const Selection sel = select_terms(in, PeakSolver(p, o, in.prior));
  std::vector<double> m(kMemoryTerms);
  for (int j = 0; j < kMemoryTerms; ++j) {
    const TermState& s = sel.state[j];
    coeffs.memory[j] = {s.active ? sel.solved.value[j] : 0.0, s.active ? sel.solved.se[j] : 0.0, s.active,
                        reason(s, in, j)};
    m[j] = coeffs.memory[j].value;
  }
  double sum2 = 0;
  for (int i = 0; i < p.rows(); ++i) {
    PeakResidualRow row{p.files[i], p.lines[i], p.target_gib[i], predicted_gib(p.y[i], m.data()), p.oom[i]};
    if (!p.oom[i]) sum2 += (row.predicted_gib - row.measured_gib) * (row.predicted_gib - row.measured_gib);
    report.peak_residuals.push_back(row);
  }
  coeffs.peak_rms_gib = std::sqrt(sum2 / p.points);
}

}  // namespace stepcast::calibrate
