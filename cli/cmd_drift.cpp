// stepcast drift: a regression check. Exit 1 naming the line of every record whose measurement is
// off the prediction by more than --tolerance (relative), exit 0 otherwise. No Ceres needed.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "calibrate/records.hpp"
#include "calibrate/run_records.hpp"
#include "cli/app.hpp"
#include "cli/figures.hpp"
#include "cli/transfer_options.hpp"
#include "io/coefficients_io.hpp"
#include "report/csv.hpp"
#include "report/format.hpp"
#include "report/json_output.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"
#include "model/step_model.hpp"
#include "model/tiers.hpp"

namespace stepcast::cli {

using report::fixed;
namespace {

struct DriftOptions {
  std::string coefficients;
  std::string model;
  std::string measurements;
  double tolerance = 0.10;
  Format format = Format::text;
  TransferOptions transfer;
};

// One quantity of one record held against the prediction.
struct Comparison {
  int64_t line = 0;
  std::string what;  // "step_s", "peak_gib", "oom"
  double measured = 0, predicted = 0, error_rel = 0;
  bool drifted = false;
};

// The GPU's capacity for an OOM record that does not carry its own; an unknown GPU is refused at the record.
double capacity_of(const calibrate::Record& r) {
  try {
    return model::gpu_info(r.gpu).capacity_gib;
  } catch (const InputError& e) {
    throw InputError(r.where() + ": " + e.what());
  }
}

std::vector<Comparison> compare(const model::StepModel& m, const std::vector<calibrate::Record>& records, double tol) {
  std::vector<Comparison> out;
  for (const auto& r : records) {
    const auto b = calibrate::to_batch(r);
    if (r.step_s && !r.oom) {
      const double p = require_figure(m.step_s(b), r.where(), "predicted step_s");
      const double e = (p - *r.step_s) / *r.step_s;
      out.push_back({r.line, "step_s", *r.step_s, p, e, std::abs(e) > tol});
    }
    if (r.usable_peak() && m.coefficients().peak_points > 0) {
      const double p = require_figure(m.peak_gib(b, calibrate::run_position(r)), r.where(), "predicted peak_gib");
      const double e = (p - *r.peak_gib) / *r.peak_gib;
      out.push_back({r.line, "peak_gib", *r.peak_gib, p, e, std::abs(e) > tol});
    }
    if (r.oom) {
      // An OOM record drifts when the model says the batch fits with room to spare.
      auto it = r.extra.find("capacity_gib");
      const double cap = (it != r.extra.end() && it->is_number()) ? it->get<double>() : capacity_of(r);
      const double p = require_figure(m.peak_gib(b, calibrate::run_position(r)), r.where(), "predicted peak_gib");
      if (cap > 0) out.push_back({r.line, "oom", cap, p, (p - cap) / cap, p < cap * (1.0 - tol)});
    }
  }
  return out;
}

// One check per quantity compared: its largest relative error against the tolerance (for OOM records, how far
// below the capacity the prediction falls).
std::vector<report::Check> drift_checks(const std::vector<Comparison>& all, double tol) {
  std::vector<report::Check> checks;
  for (const char* what : {"step_s", "peak_gib", "oom"}) {
    double worst = -1;
    bool drifted = false;
    for (const auto& c : all)
      if (c.what == what) {
        worst = std::max(worst, c.what == std::string("oom") ? std::max(0.0, -c.error_rel) : std::abs(c.error_rel));
        drifted = drifted || c.drifted;
      }
    if (worst >= 0) checks.push_back({std::string(what) + "_max_error_rel", worst, tol, !drifted});
  }
  return checks;
}

std::string finding_text(const Comparison& f, const DriftOptions& o) {
  return o.measurements + ":" + std::to_string(f.line) + ": " + f.what + " measured " + fixed(f.measured, 3) +
         ", predicted " + fixed(f.predicted, 3) + " (" + (f.error_rel >= 0 ? "+" : "") + fixed(f.error_rel * 100, 1) +
         " %), beyond ±" + fixed(o.tolerance * 100, 1) + " %";
}

void print_drift(const std::vector<Comparison>& all, int64_t records, const DriftOptions& o, const predict::Predictor& p) {
  if (o.format == Format::json) {
    nlohmann::json j{{"coefficients", p.coefficients_path},
                     {"predictor", p.first_line},
                     {"measurements", o.measurements},
                     {"tolerance", o.tolerance},
                     {"records", records},
                     {"checks", report::checks_json(drift_checks(all, o.tolerance))},
                     {"drifted", nlohmann::json::array()}};
    for (const auto& f : all)
      if (f.drifted)
        j["drifted"].push_back({{"line", f.line},
                                {"quantity", f.what},
                                {"measured", f.measured},
                                {"predicted", f.predicted},
                                {"error_rel", f.error_rel}});
    report::print_json(std::cout, "drift", j);
    return;
  }
  if (o.format == Format::csv) {
    report::Table t{{"line", "quantity", "measured", "predicted", "error_rel", "drifted"}, {}};
    for (const auto& f : all)
      t.rows.push_back({std::to_string(f.line), f.what, report::csv_number(f.measured), report::csv_number(f.predicted),
                        report::csv_number(f.error_rel), f.drifted ? "true" : "false"});
    report::write_csv(std::cout, t);
    return;
  }
  const auto drifted = std::count_if(all.begin(), all.end(), [](const Comparison& c) { return c.drifted; });
  std::cout << records << " records checked against " << p.coefficients_path << " at ±" << fixed(o.tolerance * 100, 1)
            << " %: " << drifted << " beyond\n";
  for (const auto& f : all)
    if (f.drifted) std::cout << "  " << finding_text(f, o) << "\n";
}

}  // namespace

void add_drift_command(CLI::App& app) {
  auto o = std::make_shared<DriftOptions>();
  CLI::App* cmd = app.add_subcommand("drift", "Fail (exit 1) when measurements drift from the predictions");
  cmd->footer(
      "Examples:\n"
      "  stepcast drift --measurements nightly.jsonl --tolerance 0.10\n"
      "  stepcast drift --coefficients my-fit.yaml --measurements nightly.jsonl --format json\n"
      "Without --coefficients the records' GPU's default predictor is held against them (carried to their model;\n"
      "their tier label names the stack that measured them); the first line says which predictor answered.\n"
      "Exit 0: every record within the tolerance. Exit 1: the file:line of every record beyond it (on stdout).\n"
      "JSON: `checks` holds each quantity's largest error against the tolerance; CSV: every comparison.\n"
      "An OOM record drifts when the predicted peak is more than the tolerance below the GPU's capacity.");
  cmd->add_option("--coefficients", o->coefficients,
                  "Coefficient file (YAML) written by calibrate (default: the records' GPU's default predictor)");
  cmd->add_option("--measurements", o->measurements, "measurement records (JSON Lines)")->required();
  cmd->add_option("--model", o->model, "config.json path or model name (default: the coefficients' model)");
  cmd->add_option("--tolerance", o->tolerance, "Largest accepted relative error, e.g. 0.10 for ±10 %")
      ->check(finite_positive())
      ->default_str("0.10");
  add_format_option(cmd, o->format, true);
  add_transfer_options(cmd, o->transfer);
  cmd->callback([o]() {
    const auto records = calibrate::read_records_required(o->measurements);
    const predict::Predictor p = predict::choose_predictor(records_ask(records, o->coefficients, o->model, o->transfer));
    require_records_on_gpu(records, p.transfer, p.coefficients_path, "drift");
    if (o->format == Format::text) print_predictor(std::cout, p);
    const auto m = p.step_model();
    const auto all = compare(*m, records, o->tolerance);
    if (all.empty())  // nothing was checked: a pass would be silent (docs/reliability.md)
      throw InputError(records.front().where() + ": none of the " + std::to_string(records.size()) +
                       " records can be checked (no step_s, no usable peak, no OOM capacity above 0). Violated "
                       "constraint: at least one comparison");
    print_drift(all, static_cast<int64_t>(records.size()), *o, p);
    // The list went to stdout (text, JSON or CSV) once; stderr says only why the exit code is 1.
    const auto drifted = std::count_if(all.begin(), all.end(), [](const Comparison& f) { return f.drifted; });
    if (drifted > 0)
      throw CheckFailed(std::to_string(drifted) + " measurement(s) of " + o->measurements + " drifted beyond ±" +
                        fixed(o->tolerance * 100, 1) + " % (listed on stdout)");
  });
}

}  // namespace stepcast::cli
