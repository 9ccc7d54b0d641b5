#include "calibrate/select.hpp"

#include <algorithm>
#include <cmath>

namespace stepcast::calibrate {

namespace {

using model::TermForm;
using model::TermRole;

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

bool full_rank_with(const Eigen::MatrixXd& design, std::vector<int> cols, int j) {
  cols.push_back(j);
  return rank_of(design, cols) == static_cast<int>(cols.size());
}

bool has_prior(const SelectionInput& in, size_t j) { return !in.prior.empty() && in.prior[j] > 0; }

int count_priors(const SelectionInput& in) {
  int n = 0;
  for (size_t j = 0; j < in.terms.size(); ++j) n += has_prior(in, j) ? 1 : 0;
  return n;
}

// A linear term's column enters the rank test; a host term enters through the smooth maximum, where a linear
// rank test says nothing (a constant launch count is a multiple of the fixed term's column): BIC and t alone.
bool rank_tested(const model::TermSpec& t) { return t.form != TermForm::host; }

// Core terms, then the terms a prior pulls, in table order: always fitted where they can be.
std::vector<int> always_fitted(const SelectionInput& in) {
  std::vector<int> order;
  for (size_t j = 0; j < in.terms.size(); ++j)
    if (in.terms[j].role == TermRole::core) order.push_back(static_cast<int>(j));
  for (size_t j = 0; j < in.terms.size(); ++j)
    if (in.terms[j].role != TermRole::core && has_prior(in, j)) order.push_back(static_cast<int>(j));
  return order;
}

// The always-fitted pass: returns the rank-tested columns in.
std::vector<int> fit_core(const SelectionInput& in, Selection& sel) {
  std::vector<int> cols;
  const int priors = count_priors(in);
  for (int j : always_fitted(in)) {
    TermState& s = sel.state[j];
    if (has_prior(in, j)) {
      s = {TermStatus::prior, true};
      if (in.exercised[j]) cols.push_back(j);
    } else if (!in.exercised[j]) {
      s = {TermStatus::unexercised};
    } else if (static_cast<int>(cols.size()) + 1 > in.points + priors) {
      s = {TermStatus::too_few_points};
    } else if (!full_rank_with(in.design, cols, j)) {
      s = {TermStatus::collinear_with_core};
    } else {
      cols.push_back(j);
      s = {TermStatus::core, true};
    }
  }
  return cols;
}

struct Trial {
  TermState state;
  Solved solved;
};

// One optional term tried on top of the current selection (k active terms, BIC `current_bic`).
Trial try_term(const SelectionInput& in, const TermSolver& solver, const Selection& sel, const std::vector<int>& cols,
               int j, double current_bic) {
  const int k = sel.active_count();
  Trial t;
  if (in.points + count_priors(in) - (k + 1) < 1) {
    t.state.status = TermStatus::no_degree_of_freedom;
    t.state.terms = k + 1;
    t.state.rms = std::sqrt(sel.solved.rss / std::max(1, in.points));
    return t;
  }
  if (rank_tested(in.terms[j]) && !full_rank_with(in.design, cols, j)) {
    t.state.status = TermStatus::collinear;
    return t;
  }
  std::vector<bool> active = sel.active();
  active[j] = true;
  t.solved = solver.solve(active);
  t.state.estimate = t.solved.value[j];
  t.state.std_error = t.solved.se[j];
  t.state.bic_before = current_bic;
  t.state.bic_after = bic(t.solved.rss, in.points, k + 1);
  if (!(t.state.estimate > in.min_t_ratio * t.state.std_error) || t.state.estimate <= 0)
    t.state.status = TermStatus::insignificant;
  else if (t.state.bic_after >= current_bic)
    t.state.status = TermStatus::no_bic_gain;
  else
    t.state.status = TermStatus::candidate;
  return t;
}

}  // namespace

std::vector<bool> Selection::active() const {
  std::vector<bool> a(state.size());
  for (size_t j = 0; j < state.size(); ++j) a[j] = state[j].active;
  return a;
}

int Selection::active_count() const {
  return static_cast<int>(std::count_if(state.begin(), state.end(), [](const TermState& s) { return s.active; }));
}

Selection select_terms(const SelectionInput& in, const TermSolver& solver) {
  Selection sel;
  sel.state.assign(in.terms.size(), TermState{});
  std::vector<int> cols = fit_core(in, sel);
  sel.solved = solver.solve(sel.active());
  double current_bic = bic(sel.solved.rss, in.points, sel.active_count());
  std::vector<int> remaining;
  for (size_t j = 0; j < in.terms.size(); ++j) {
    if (in.terms[j].role != TermRole::optional || sel.state[j].active) continue;
    if (in.exercised[j])
      remaining.push_back(static_cast<int>(j));
    else
      sel.state[j] = {TermStatus::unexercised};
  }
  while (!remaining.empty()) {
    int best = -1;
    double best_bic = current_bic;
    Solved best_solved;
    for (int j : remaining) {
      Trial t = try_term(in, solver, sel, cols, j, current_bic);
      sel.state[j] = t.state;
      if (t.state.status == TermStatus::candidate && t.state.bic_after < best_bic) {
        best = j;
        best_bic = t.state.bic_after;
        best_solved = std::move(t.solved);
      }
    }
    if (best < 0) break;
    sel.state[best].status = TermStatus::selected;
    sel.state[best].active = true;
    if (rank_tested(in.terms[best])) cols.push_back(best);
    current_bic = best_bic;
    sel.solved = std::move(best_solved);
    remaining.erase(std::remove(remaining.begin(), remaining.end(), best), remaining.end());
    for (int j : remaining)
      if (sel.state[j].status == TermStatus::candidate) sel.state[j].status = TermStatus::beaten;
  }
  for (int j : remaining)
    if (sel.state[j].status == TermStatus::candidate) sel.state[j].status = TermStatus::unchosen;
  for (size_t j = 0; j < in.terms.size(); ++j)
    if (sel.state[j].active && sel.solved.value[j] <= in.terms[j].lower_bound) sel.state[j] = {TermStatus::at_bound};
  return sel;
}

std::string reason(const TermState& s, const SelectionInput& in, size_t term) {
  switch (s.status) {
    case TermStatus::untested: return "";
    case TermStatus::prior:
      return "prior: fitted with a prior at " + fmt(in.prior[term]) +
             (in.exercised[term] ? "" : " (no record exercises it: the prior's value)");
    case TermStatus::core: return "core: the shape's own work, always fitted";
    case TermStatus::unexercised: return "not selected: no record exercises it (its feature is 0 in every record)";
    case TermStatus::too_few_points:
      return "not selected: too few points (" + std::to_string(in.points) + ") for another term";
    case TermStatus::collinear_with_core: return "not selected: collinear with the terms already in these records";
    case TermStatus::no_degree_of_freedom:
      return "not selected: " + std::to_string(in.points) + " points for " + std::to_string(s.terms) +
             " terms leave no degree of freedom to test it (the " + std::to_string(s.terms - 1) +
             "-term fit leaves an RMS residual of " + fmt(s.rms) + " " + in.residual_unit + ")";
    case TermStatus::collinear:
      return "not selected: collinear with the selected terms in these records (the data cannot tell them apart)";
    case TermStatus::insignificant:
      return "not selected: estimate " + fmt(s.estimate) + " ± " + fmt(s.std_error) + " is within " +
             fmt(in.min_t_ratio) + " standard errors of 0";
    case TermStatus::no_bic_gain:
      return "not selected: BIC does not improve (" + fmt(s.bic_before) + " -> " + fmt(s.bic_after) + ")";
    case TermStatus::candidate: return "candidate";
    case TermStatus::beaten: return "not selected: a better term was chosen first";
    case TermStatus::unchosen: return "not selected";
    case TermStatus::selected:
      return "selected: estimate " + fmt(s.estimate) + " ± " + fmt(s.std_error) + ", BIC " + fmt(s.bic_before) +
             " -> " + fmt(s.bic_after);
    case TermStatus::at_bound:
      return "dropped: the estimate sits at the bound " + fmt(in.terms[term].lower_bound) +
             " (the data want it negative)";
  }
  return "";
}

}  // namespace stepcast::calibrate
