// stepcast validate: held-out accuracy of the calibration on the records themselves. k-fold and
// leave-one-out: each fold is fitted on the others (same model selection) and predicts its records.
// With --run: the planner's prediction of recorded runs against their measured wall clock (cli/run_check.hpp).
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

#include "calibrate/run_records.hpp"
#include "calibrate/validate.hpp"
#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "report/run_check.hpp"
#include "cli/app.hpp"
#include "cli/figures.hpp"
#include "cli/fit_options.hpp"
#include "cli/transfer_options.hpp"
#include "predict/coverage.hpp"
#include "io/fit_input.hpp"
#include "report/csv.hpp"
#include "report/format.hpp"
#include "report/json_output.hpp"
#include "model/errors.hpp"

#ifndef STEPCAST_VERSION
#define STEPCAST_VERSION "dev"
#endif

namespace stepcast::cli {

using io::load_coefficients;
using io::load_fit_input;
using io::load_model;
using io::measurements_label;
using io::FitInput;
using io::FitInputOptions;
using report::check_runs;
using report::fixed;
using report::print_run_validation;
using report::run_validation_json;
using report::RunValidation;
namespace {

struct ValidateOptions {
  FitInputOptions input;
  int folds = 5;
  double max_step_mape = 0;  // 0 = no bar
  double max_peak_mape = 0;
  Format format = Format::text;
  // --run
  std::string run;
  std::string coefficients;
  bool transfer = false;           // price runs of another model, GPU or tier than the coefficients'
  std::string stack;               // --run, --coverage: the stack the records ran on (default: what their tier label names)
  bool coverage = false;           // hold each record against the interval of its predictor
  double max_total_error = 0;      // 0 = no bar
  double max_saving_error_pp = 0;
};

// What the runs are priced with (predict/predictor.hpp): the coefficients carried to the runs' model, GPU and
// tier (one of each per --run file); without --coefficients the runs' GPU's default predictor, on the stack their
// tier label names. Another model, GPU or tier than a fitted file's is exit 2 naming the mismatch at the run's
// record unless --transfer, as for predict (docs/method.md, "Transfer").
predict::Predictor pricing_for_runs(const std::vector<calibrate::RecordedRun>& runs, const ValidateOptions& o) {
  const calibrate::Record& first = runs.front().steps.front().record;
  auto label = [](const calibrate::Record& r) { return "model '" + r.model + "', GPU '" + r.gpu + "', tier '" + r.tier + "'"; };
  for (const auto& run : runs) {
    const auto& r = run.steps.front().record;
    if (label(r) != label(first))
      throw InputError(r.where() + ": run '" + run.id + "' is of " + label(r) + " but " + first.where() + " is of " +
                       label(first) + ". Violated constraint: one model, GPU and tier per --run file");
  }
  predict::PredictorAsk ask = predictor_ask(o.coefficients, o.input.model.empty() ? first.model : o.input.model,
                                            {first.gpu, first.tier, o.stack, o.transfer});
  ask.tier_from_records = true;
  // The weights as measured: the records' dtype, else --dtype, else the config's.
  const auto d = first.extra.find("dtype");
  ask.dtype = d != first.extra.end() && d->is_string() ? d->get<std::string>() : o.input.dtype;
  set_lora_of(ask, first);  // the adapters the run trained (rank, targets, dropout), as calibrate prices them
  try {
    return predict::choose_predictor(ask);
  } catch (const InputError& e) {
    throw InputError(first.where() + ": run '" + runs.front().id + "' is of " + label(first) + "; " + e.what());
  }
}

// The --max-* bars given, one check each: a run's total error (fraction) and a saving's error (percentage points
// as a fraction, so that value and bar share the unit of the flag / 100).
std::vector<report::Check> run_checks(const RunValidation& v, const ValidateOptions& o) {
  std::vector<report::Check> checks;
  if (o.max_total_error > 0)
    for (const auto& r : v.runs)
      checks.push_back({"total_error_rel " + r.id, std::abs(r.error_rel()), o.max_total_error,
                        std::abs(r.error_rel()) <= o.max_total_error});
  if (o.max_saving_error_pp > 0)
    for (const auto& s : v.savings)
      checks.push_back({"saving_error_pp " + s.other_id + " over " + s.baseline_id, std::abs(s.error_pp()) / 100,
                        o.max_saving_error_pp / 100, std::abs(s.error_pp()) <= o.max_saving_error_pp});
  return checks;
}

report::Table runs_table(const RunValidation& v) {
  using report::csv_number;
  report::Table t{{"id", "policy", "micro_batches", "distinct_shapes", "measured_s", "predicted_s", "error_rel",
                   "planned_s", "micro_batch_mape"},
                  {}};
  for (const auto& r : v.runs)
    t.rows.push_back({r.id, r.policy, std::to_string(r.micro_batches), std::to_string(r.distinct_shapes),
                      csv_number(r.measured_s), csv_number(r.predicted_s), csv_number(r.error_rel()),
                      r.planned_s ? csv_number(*r.planned_s) : "", csv_number(r.batch_mape)});
  return t;
}

void validate_runs(const ValidateOptions& o) {
  const auto records = calibrate::read_records_required(o.run);
  const auto runs = calibrate::read_runs(records, o.run);
  if (runs.empty())
    throw InputError(records.front().where() + ": no recorded run among these records (records with \"probe\": \"run\" and a run object, "
                     "calibrate/run_records.hpp). Violated constraint: at least one run");
  const predict::Predictor p = pricing_for_runs(runs, o);
  RunValidation v = check_runs(runs, *p.step_model());
  for (auto& r : v.runs) r.wall_clock_half_width = p.wall_clock_half_width(r.padded, r.host_bound_share());
  const auto checks = run_checks(v, o);
  if (o.format == Format::json) {
    nlohmann::json j = run_validation_json(v);
    j["predictor"] = p.first_line;
    j["transfer"] = p.transfer.summary();
    j["provenance"] = provenance_json(p.transfer);
    j["checks"] = report::checks_json(checks);
    report::print_json(std::cout, "validate", j);
  } else if (o.format == Format::csv) {
    if (p.transfer.transferred()) std::cerr << p.first_line << "\n";  // stdout stays one CSV table
    report::write_csv(std::cout, runs_table(v));
  } else {
    print_predictor(std::cout, p);
    print_run_validation(v, o.run, std::cout);
  }
  // The same checks, in words, for the exit-1 line on stderr.
  std::string failed;
  size_t i = 0;
  if (o.max_total_error > 0)
    for (const auto& r : v.runs)
      if (!checks[i++].passed)
        failed += r.id + ": total off by " + fixed(r.error_rel() * 100, 1) + " % (bar " + fixed(o.max_total_error * 100, 1) + " %). ";
  if (o.max_saving_error_pp > 0)
    for (const auto& s : v.savings)
      if (!checks[i++].passed)
        failed += "saving " + s.other_id + " over " + s.baseline_id + " off by " + fixed(s.error_pp(), 1) + " pp (bar " +
                  fixed(o.max_saving_error_pp, 1) + " pp). ";
  if (!failed.empty()) throw CheckFailed(failed);
}

nlohmann::json stats_json(const calibrate::ErrorStats& s) {
  return {{"count", s.count}, {"mape", s.mape}, {"max_abs_error", s.max_abs}, {"max_line", s.max_line}};
}

// The conformal 90 % interval of the held-out step errors and how often each held-out step falls inside the
// interval the others give (calibrate/validate.hpp), unpadded and padded: the calibrated kind's coverage.
nlohmann::json interval_json(const calibrate::Validation& v) {
  nlohmann::json j = nlohmann::json::object();
  for (bool padded : {false, true}) {
    const calibrate::IntervalCoverage c = calibrate::interval_coverage(v, padded);
    j[padded ? "padded" : "unpadded"] = {{"points", c.points}, {"inside", c.inside}, {"coverage", c.share()},
                                         {"half_width", c.half_width}};
  }
  return j;
}

nlohmann::json validation_json(const calibrate::Validation& v) {
  nlohmann::json j;
  j["scheme"] = v.scheme;
  j["folds"] = v.folds;
  j["step"] = stats_json(v.step);
  j["peak"] = stats_json(v.peak);
  j["interval"] = interval_json(v);
  j["notes"] = v.notes;
  j["records"] = nlohmann::json::array();
  for (const auto& r : v.rows) {
    nlohmann::json row{{"line", r.line}, {"fold", r.fold}, {"padded", r.padded}};
    if (r.measured_step_s) row["measured_step_s"] = *r.measured_step_s;
    if (r.predicted_step_s) row["predicted_step_s"] = *r.predicted_step_s;
    if (r.measured_peak_gib) row["measured_peak_gib"] = *r.measured_peak_gib;
    if (r.predicted_peak_gib) row["predicted_peak_gib"] = *r.predicted_peak_gib;
    j["records"].push_back(row);
  }
  return j;
}

void print_validation(const calibrate::Validation& v, const std::string& file, std::ostream& out) {
  out << v.scheme << " (" << v.folds << " folds):\n";
  out << "  step time: MAPE " << fixed(v.step.mape * 100, 2) << " %, max " << fixed(v.step.max_abs * 100, 2) << " % ("
      << (v.step.max_file.empty() ? file : v.step.max_file) << ":" << v.step.max_line << "), " << v.step.count << " held-out records\n";
  out << "  peak:      MAPE " << fixed(v.peak.mape * 100, 2) << " %, max " << fixed(v.peak.max_abs * 100, 2) << " % ("
      << (v.peak.max_file.empty() ? file : v.peak.max_file) << ":" << v.peak.max_line << "), " << v.peak.count << " held-out records\n";
  for (bool padded : {false, true}) {
    const calibrate::IntervalCoverage c = calibrate::interval_coverage(v, padded);
    if (c.points == 0) continue;
    out << "  90 % interval (" << (padded ? "padded" : "unpadded") << "): +-" << fixed(c.half_width * 100, 2) << " %, "
        << c.inside << " of " << c.points << " held-out steps (" << fixed(c.share() * 100, 1)
        << " %) inside the interval the others give\n";
  }
  for (const auto& n : v.notes) out << "  note: " << n << "\n";
}

// --coverage: every record priced by the predictor its model gets, held against its interval.
void validate_coverage(const ValidateOptions& o) {
  if (o.input.measurements.empty())
    throw InputError("validate --coverage needs --measurements F.jsonl (the records to hold against their intervals)");
  std::vector<calibrate::Record> records;
  for (const auto& file : o.input.measurements)
    for (auto& r : calibrate::read_records_required(file))
      if ((o.input.tier.empty() || r.tier == o.input.tier) && (o.input.gpu.empty() || r.gpu == o.input.gpu))
        records.push_back(std::move(r));
  predict::PredictorAsk base = predictor_ask(o.coefficients, o.input.model, {"", "", o.stack, o.transfer});
  const predict::CoverageReport c = predict::interval_coverage(records, base);
  if (o.format == Format::json) {
    nlohmann::json groups = nlohmann::json::array(), points = nlohmann::json::array();
    for (const auto& g : c.groups)
      groups.push_back({{"kind", g.kind},
                        {"padded", g.padded},
                        {"points", g.points},
                        {"inside", g.inside},
                        {"coverage", g.share()},
                        {"stated_half_width", g.stated_half_width},
                        {"conformal_half_width", g.conformal},
                        {"other_models_points", g.other_models_points},
                        {"other_models_inside", g.other_models_inside}});
    for (const auto& p : c.points)
      points.push_back({{"where", p.where}, {"model", p.model}, {"kind", p.kind}, {"padded", p.padded},
                        {"ratio_error", p.ratio_error}, {"half_width", p.half_width}, {"inside", p.inside},
                        {"host_bound", p.host_bound}});
    report::print_json(std::cout, "validate", {{"coverage", {{"predictors", c.predictors}, {"groups", groups}, {"points", points}}}});
    return;
  }
  if (o.format == Format::csv) {
    report::Table t{{"where", "model", "kind", "padded", "ratio_error", "half_width", "inside"}, {}};
    for (const auto& p : c.points)
      t.rows.push_back({p.where, p.model, p.kind, p.padded ? "true" : "false", report::csv_number(p.ratio_error),
                        report::csv_number(p.half_width), p.inside ? "true" : "false"});
    report::write_csv(std::cout, t);
    return;
  }
  for (const auto& line : c.predictors) std::cout << line << "\n";
  std::cout << "90 % step intervals against " << c.points.size() << " measured records (docs/method.md, \"Intervals\"):\n";
  for (const auto& g : c.groups) {
    std::cout << "  " << g.kind << (g.padded ? ", padded: " : ", unpadded: ") << g.inside << " of " << g.points
              << " inside (" << fixed(g.share() * 100, 1) << " %) at +-" << fixed(g.stated_half_width * 100, 1)
              << " %; these points' own conformal 90 %: +-" << fixed(g.conformal * 100, 1) << " %";
    if (g.other_models_points > 0)
      std::cout << "; each model against the other models' quantile: " << g.other_models_inside << " of "
                << g.other_models_points << " inside";
    std::cout << "\n";
  }
}

// The --max-*-mape bars given, held against leave-one-out.
std::vector<report::Check> mape_checks(const calibrate::Validation& loo, const ValidateOptions& o) {
  std::vector<report::Check> checks;
  if (o.max_step_mape > 0)
    checks.push_back({"leave_one_out_step_mape", loo.step.mape, o.max_step_mape, loo.step.mape <= o.max_step_mape});
  if (o.max_peak_mape > 0)
    checks.push_back({"leave_one_out_peak_mape", loo.peak.mape, o.max_peak_mape, loo.peak.mape <= o.max_peak_mape});
  return checks;
}

// --format csv: every held-out record of a scheme.
report::Table held_out_table(const calibrate::Validation& v) {
  auto opt = [](const std::optional<double>& x) { return x ? report::csv_number(*x) : std::string(); };
  report::Table t{{"scheme", "fold", "line", "measured_step_s", "predicted_step_s", "measured_peak_gib",
                   "predicted_peak_gib"},
                  {}};
  for (const auto& r : v.rows)
    t.rows.push_back({v.scheme, std::to_string(r.fold), std::to_string(r.line), opt(r.measured_step_s),
                      opt(r.predicted_step_s), opt(r.measured_peak_gib), opt(r.predicted_peak_gib)});
  return t;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Held-out accuracy (k-fold and leave-one-out) of the calibration");
  cmd->footer(
      "Examples:\n"
      "  stepcast validate --measurements measurements/records/seed-sm120.jsonl\n"
      "  stepcast validate --model gemma-4-26b-a4b --measurements h200.jsonl --folds 3 \\\n"
      "      --max-step-mape 0.03 --max-peak-mape 0.05 --format json\n"
      "  stepcast validate --run measurements/records/h200-hf-peft-runs-m3.jsonl --max-total-error 0.05\n"
      "  stepcast validate --coverage --measurements measurements/records/h200-llama-3-8b.jsonl \\\n"
      "      measurements/records/h200-qwen3-30b-a3b.jsonl --tier sdpa-auto/grouped/gqa-expand\n"
      "Exit 1 when a --max-* bar is given and not met; JSON's `checks` holds each bar with its value and pass/fail.\n"
      "CSV: the held-out records of both schemes, or (--run) one row per run.\n"
      "--run FILE: recorded runs (one record per micro-batch with a `run` object, calibrate/run_records.hpp; written\n"
      "by `stepcast measure --run-synthetic ...` or tools/device/hf_campaign.py). Prints, per run, the measured and predicted\n"
      "wall clock (the recorded micro-batches through the planner's cost rule: steady step with the host floor,\n"
      "first-seen shapes, process start, optimizer steps), the per-micro-batch error, the planner's own schedule of\n"
      "the recorded corpus, and the saving between policies run on the same corpus. Packed runs (run.documents,\n"
      "run.pack_attention) are priced per document and attention mode, as `plan` prices them. The runs' model, GPU\n"
      "and tier must be the coefficients' unless --transfer (the first line, JSON `transfer`, says what was carried);\n"
      "without --coefficients the runs' GPU's default predictor prices them, on the stack their tier label names.\n"
      "Held-out fits also give the 90 % interval of their held-out errors and how often a held-out step falls\n"
      "inside the interval the others give (JSON `interval`). --coverage: no fit; each --measurements record is\n"
      "priced by the predictor its model gets (--coefficients, or the default predictor) and held against the\n"
      "90 % interval of its kind (calibrated, transferred-model, ...; padded and unpadded apart): the share inside,\n"
      "and each model against the quantile of the other models' errors.");
  add_fit_input_options(cmd, o->input, false);
  cmd->add_option("--run", o->run, "Recorded runs (JSON Lines) to predict and compare");
  cmd->add_option("--coefficients", o->coefficients,
                  "Coefficient file the runs (--run) or records (--coverage) are predicted with (default: their GPU's "
                  "default predictor)");
  cmd->add_flag("--coverage", o->coverage,
                "Hold every --measurements record against the 90 % interval of the predictor its model gets (no fit)");
  cmd->add_option("--stack", o->stack, "--run / --coverage: the stack the records ran on (default: their tier label's)");
  cmd->add_flag("--transfer", o->transfer,
                "--run: price runs of another model, GPU or tier than the coefficients' by carrying them there "
                "(docs/method.md, \"Transfer\"); --gpu / --tier stay filters of --measurements records");
  cmd->add_option("--max-total-error", o->max_total_error,
                  "Fail (exit 1) if a run's predicted total is off by more than this fraction (--run)")
      ->check(finite_positive());
  cmd->add_option("--max-saving-error-pp", o->max_saving_error_pp,
                  "Fail (exit 1) if a predicted saving between policies is off by more than this many points (--run)")
      ->check(finite_positive());
  cmd->add_option("--folds", o->folds, "k of the k-fold split (leave-one-out is always run as well)")
      ->check(CLI::Range(2, 1000))
      ->default_str("5");
  cmd->add_option("--max-step-mape", o->max_step_mape, "Fail (exit 1) if the leave-one-out step MAPE exceeds this fraction")
      ->check(finite_positive());
  cmd->add_option("--max-peak-mape", o->max_peak_mape, "Fail (exit 1) if the leave-one-out peak MAPE exceeds this fraction")
      ->check(finite_positive());
  add_format_option(cmd, o->format, true);
  cmd->callback([o]() {
    if (!o->run.empty()) return validate_runs(*o);
    if (o->coverage) return validate_coverage(*o);
    if (o->transfer)  // a held-out fit uses no coefficients: nothing to carry
      throw InputError("validate: --transfer without --run. Violated constraint: --transfer prices --run records with "
                       "--coefficients of another model, GPU or tier; --gpu/--tier filter --measurements records");
    if (o->input.measurements.empty())
      throw InputError("validate needs --measurements F.jsonl (held-out accuracy) or --run F.jsonl (recorded runs)");
    const FitInput in = load_fit_input(o->input, STEPCAST_VERSION);
    // Pooled: the held-out model stands for a family the default predictor has not seen.
    const auto kfold = o->input.pooled ? calibrate::leave_one_model_out(in.shapes(), in.records, in.options)
                                       : calibrate::cross_validate(in.shapes(), in.records, in.options, o->folds);
    const auto loo = calibrate::cross_validate(in.shapes(), in.records, in.options, 0);
    if (loo.step.count == 0)  // every fold skipped: a pass would be silent (docs/reliability.md)
      throw InputError(in.records.front().where() + ": no record could be held out and predicted (" +
                       std::to_string(in.records.size()) + " records). Violated constraint: at least 3 records with step_s");
    const auto checks = mape_checks(loo, *o);
    if (o->format == Format::json) {
      report::print_json(std::cout, "validate",
                         {{"k_fold", validation_json(kfold)},
                          {"leave_one_out", validation_json(loo)},
                          {"prior", in.options.prior_name},
                          {"checks", report::checks_json(checks)}});
    } else if (o->format == Format::csv) {
      report::Table t = held_out_table(kfold);
      for (auto& row : held_out_table(loo).rows) t.rows.push_back(std::move(row));
      report::write_csv(std::cout, t);
    } else {
      // A prior fitted on these same records leaks them into every fold: say which one was used.
      std::cout << "prior: " << (in.options.prior_name.empty() ? "none" : in.options.prior_name)
                << (in.options.prior_name.empty() ? "" : " (if it was fitted on these records, use --prior none)") << "\n";
      print_validation(kfold, measurements_label(o->input), std::cout);
      print_validation(loo, measurements_label(o->input), std::cout);
    }
    std::string failed;
    for (const auto& c : checks)
      if (!c.passed)
        failed += std::string(c.name == "leave_one_out_step_mape" ? "leave-one-out step MAPE " : "leave-one-out peak MAPE ") +
                  fixed(c.value * 100, 2) + " % > " + fixed(c.bar * 100, 2) + " %. ";
    if (!failed.empty()) throw CheckFailed(failed);
  });
}

}  // namespace stepcast::cli
