// stepcast measure --suggest N --scenario S: the N probe shapes that most shrink the scenario's wall-clock
// interval given the records already measured (calibrate/design.hpp suggest_probes; docs/method.md "Probe
// advice"). No GPU: it reads the scenario, its coefficients and records, and prints `measure --points` entries.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

#include "calibrate/design.hpp"
#include "calibrate/records.hpp"
#include "cli/app.hpp"
#include "cli/transfer_options.hpp"
#include "io/coefficients_io.hpp"
#include "io/corpus_io.hpp"
#include "io/model_config.hpp"
#include "io/scenario_io.hpp"
#include "model/errors.hpp"
#include "model/step_model.hpp"
#include "planner/batching.hpp"

namespace stepcast::cli {
namespace {

struct SuggestOptions {
  int64_t n = 0;
  std::string scenario;
  std::vector<std::string> measurements;
  std::string candidates;  // records whose shapes are the candidates, instead of the scenario's micro-batch shapes
  Format format = Format::text;
};

planner::Corpus scenario_corpus(const io::CorpusSource& c) {
  if (c.synthetic) return planner::generate_synthetic(*c.synthetic);
  if (!c.histogram.empty()) return planner::expand_histogram(c.histogram, c.histogram_seed);
  return io::load_corpus_file(c.file, c.options);
}

// The unknowns of the design: the linear device terms the coefficients price (selected), in StepTerm order. A
// split-off rate that only copies its source (converted from an older file, or tied by the fit) is no unknown of
// its own: its work is added to its source's column (column_of).
bool copies_its_source(const model::Coefficients& c, int term) {
  const auto& t = c.step[term];
  return model::kStepTermTable[term].absent_reads_as >= 0 &&
         (!(t.value > 0) || t.reason.rfind("converted", 0) == 0 || t.reason.rfind("tied", 0) == 0);
}

struct Columns {
  std::vector<int> terms;              // the unknowns
  std::array<int, model::kStepTerms> column_of{};  // -1: not priced
};

Columns design_columns(const model::Coefficients& c) {
  Columns cols;
  cols.column_of.fill(-1);
  for (int i = 0; i < model::kStepTerms; ++i)
    if (model::kStepTermTable[i].form == model::TermForm::linear && c.step[i].selected && !copies_its_source(c, i)) {
      cols.column_of[i] = static_cast<int>(cols.terms.size());
      cols.terms.push_back(i);
    }
  for (int i = 0; i < model::kStepTerms; ++i)
    if (model::kStepTermTable[i].form == model::TermForm::linear && copies_its_source(c, i))
      cols.column_of[i] = cols.column_of[model::kStepTermTable[i].absent_reads_as];
  return cols;
}

std::vector<double> design_row(const Columns& cols, const model::StepFeatures& f) {
  std::vector<double> x(cols.terms.size(), 0.0);
  for (int i = 0; i < model::kStepTerms; ++i)
    if (cols.column_of[i] >= 0) x[static_cast<size_t>(cols.column_of[i])] += f.x[i];
  return x;
}

calibrate::ProbeRow probe_row(const model::StepModel& m, const Columns& cols, const model::MicroBatch& b) {
  const double step = m.step_s(b);
  calibrate::ProbeRow r{design_row(cols, m.features().step(b))};
  for (double& v : r.x) v = step > 0 ? v / step : 0.0;
  return r;
}

struct Candidate {
  std::string point;  // "scaling:RxW" or the record's file:line
  model::MicroBatch batch;
};

// Distinct (rows, width) of the scenario's micro-batches, the first of each as the probe: a padded one as a
// `padding` point with its share of pad tokens (the mask path is part of the wall clock), else `scaling`.
std::vector<Candidate> schedule_shapes(const planner::Schedule& schedule) {
  std::set<std::pair<int64_t, int64_t>> seen;
  std::vector<Candidate> out;
  model::MicroBatch b;
  for (int64_t i = 0; i < schedule.num_batches(); ++i) {
    schedule.fill(i, b);
    if (!seen.insert({b.num_rows(), b.width}).second) continue;
    double real = 0;
    for (int64_t r : b.rows) real += static_cast<double>(r);
    const double pad = 1.0 - real / static_cast<double>(b.num_rows() * b.width);
    const std::string shape = std::to_string(b.num_rows()) + "x" + std::to_string(b.width);
    std::ostringstream point;
    point.precision(2);
    if (pad > 0) point << "padding:" << shape << ":" << pad;
    else point << "scaling:" << shape;
    out.push_back({point.str(), b});
  }
  return out;
}

void run_suggest(const SuggestOptions& o) {
  if (o.n < 1) throw InputError("--suggest " + std::to_string(o.n) + ". Violated constraint: at least 1 probe");
  io::Scenario s = io::load_scenario(o.scenario);
  if (s.width_quadratic)
    throw InputError(o.scenario + ":1:1: the scenario's predictor is a width_quadratic equation. Violated constraint: "
                     "--suggest needs the step model's coefficients (a width_quadratic predictor has no design matrix)");
  // The predictor plan uses for this scenario (predict/predictor.hpp): the probes lower its wall-clock variance.
  const predict::Predictor p = predict::choose_predictor(scenario_ask(s, false, {}));
  const model::Coefficients& c = p.transfer.coefficients;
  const auto model = p.step_model();
  const model::StepModel& m = *model;
  const Columns cols = design_columns(c);

  const planner::Schedule schedule = planner::build_schedule(scenario_corpus(s.corpus), s.baseline, s.run.accumulation);
  if (schedule.num_batches() == 0)
    throw InputError(o.scenario + ":1:1: the scenario's corpus makes no micro-batch. Violated constraint: at least one");
  std::vector<double> target(cols.terms.size(), 0.0);  // the wall clock's features: summed over the micro-batches
  model::MicroBatch b;
  for (int64_t i = 0; i < schedule.num_batches(); ++i) {
    schedule.fill(i, b);
    const std::vector<double> x = design_row(cols, m.features().step(b));
    for (size_t j = 0; j < x.size(); ++j) target[j] += x[j];
  }
  std::vector<calibrate::ProbeRow> measured;
  for (const auto& path : o.measurements)
    for (const auto& r : calibrate::read_records(path))
      if (r.step_s && !r.oom) measured.push_back(probe_row(m, cols, calibrate::to_batch(r)));
  std::vector<Candidate> candidates;
  if (o.candidates.empty()) {
    candidates = schedule_shapes(schedule);
  } else {
    for (const auto& r : calibrate::read_records(o.candidates))
      if (r.step_s && !r.oom) candidates.push_back({r.where(), calibrate::to_batch(r)});
  }
  std::vector<calibrate::ProbeRow> rows;
  for (const auto& cand : candidates) rows.push_back(probe_row(m, cols, cand.batch));
  const calibrate::Suggestion sug = calibrate::suggest_probes(measured, rows, target, static_cast<size_t>(o.n));

  nlohmann::json j{{"scenario", o.scenario}, {"records", measured.size()}, {"candidates", candidates.size()}};
  j["variance_before"] = sug.variance.front();
  for (size_t i = 0; i < sug.picks.size(); ++i)
    j["suggested"].push_back({{"point", candidates[sug.picks[i]].point}, {"variance_after", sug.variance[i + 1]}});
  if (o.format == Format::json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "suggest: " << sug.picks.size() << " probe(s) of " << candidates.size() << " candidate shapes for "
            << o.scenario << " given " << measured.size() << " record(s); wall-clock variance (relative, c' M^-1 c) "
            << sug.variance.front() << " before\n";
  for (size_t i = 0; i < sug.picks.size(); ++i)
    std::cout << "  " << candidates[sug.picks[i]].point << "  -> " << sug.variance[i + 1] << "\n";
}

}  // namespace

bool is_suggest(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--suggest" || a.rfind("--suggest=", 0) == 0) return true;
  return false;
}

void run_measure_suggest(const std::vector<std::string>& args) {
  CLI::App app("stepcast measure --suggest: probe shapes that most shrink a scenario's wall-clock interval");
  SuggestOptions o;
  app.add_option("--suggest", o.n, "How many probes to propose")->required();
  app.add_option("--scenario", o.scenario, "Scenario file: its coefficients, corpus and baseline batching")->required();
  app.add_option("--measurements", o.measurements, "Records already measured (JSON Lines)");
  app.add_option("--candidates", o.candidates, "Records whose shapes are the candidates (default: the scenario's)");
  add_format_option(&app, o.format);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InputError(std::string("measure --suggest: ") + e.what());
  }
  run_suggest(o);
}

}  // namespace stepcast::cli
