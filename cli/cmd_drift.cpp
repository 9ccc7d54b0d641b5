// stepcast drift: a regression check. Exit 1 naming the line of every record whose measurement is
// off the prediction by more than --tolerance (relative), exit 0 otherwise. No Ceres needed.
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

#include "calibrate/records.hpp"
#include "cli/app.hpp"
#include "cli/figures.hpp"
#include "io/coefficients_io.hpp"
#include "report/format.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"
#include "model/step_model.hpp"
#include "model/tiers.hpp"

namespace stepcast::cli {

using io::load_coefficients;
using io::load_model;
using report::fixed;
namespace {

struct DriftOptions {
  std::string coefficients;
  std::string model;
  std::string measurements;
  double tolerance = 0.10;
  Format format = Format::text;
};

struct Finding {
  int64_t line = 0;
  std::string what;  // "step_s", "peak_gib", "oom"
  double measured = 0, predicted = 0, error_rel = 0;
};

std::vector<Finding> check(const model::StepModel& m, const std::vector<calibrate::Record>& records, double tol,
                           int64_t& checked) {
  std::vector<Finding> out;
  for (const auto& r : records) {
    const auto b = calibrate::to_batch(r);
    ++checked;
    if (r.step_s && !r.oom) {
      const double p = require_figure(m.step_s(b), r.where(), "predicted step_s");
      const double e = (p - *r.step_s) / *r.step_s;
      if (std::abs(e) > tol) out.push_back({r.line, "step_s", *r.step_s, p, e});
    }
    if (r.usable_peak() && m.coefficients().peak_points > 0) {
      const double p = require_figure(m.peak_gib(b), r.where(), "predicted peak_gib");
      const double e = (p - *r.peak_gib) / *r.peak_gib;
      if (std::abs(e) > tol) out.push_back({r.line, "peak_gib", *r.peak_gib, p, e});
    }
    if (r.oom) {
      // An OOM record drifts when the model says the batch fits with room to spare.
      auto it = r.extra.find("capacity_gib");
      const double cap = (it != r.extra.end() && it->is_number()) ? it->get<double>() : model::gpu_info(r.gpu).capacity_gib;
      const double p = require_figure(m.peak_gib(b), r.where(), "predicted peak_gib");
      if (cap > 0 && p < cap * (1.0 - tol)) out.push_back({r.line, "oom", cap, p, (p - cap) / cap});
    }
  }
  return out;
}

}  // namespace

void add_drift_command(CLI::App& app) {
  auto o = std::make_shared<DriftOptions>();
  CLI::App* cmd = app.add_subcommand("drift", "Fail (exit 1) when measurements drift from the predictions");
  cmd->footer(
      "Examples:\n"
      "  stepcast drift --coefficients h200.yaml --measurements nightly.jsonl --tolerance 0.10\n"
      "  stepcast drift --coefficients h200.yaml --measurements nightly.jsonl --format json\n"
      "Exit 0: every record within the tolerance. Exit 1: the file:line of every record beyond it.\n"
      "An OOM record drifts when the predicted peak is more than the tolerance below the GPU's capacity.");
  cmd->add_option("--coefficients", o->coefficients, "Coefficient file (YAML) written by calibrate")->required();
  cmd->add_option("--measurements", o->measurements, "Contract-1 records (JSON Lines)")->required();
  cmd->add_option("--model", o->model, "config.json path or model name (default: the coefficients' model)");
  cmd->add_option("--tolerance", o->tolerance, "Largest accepted relative error, e.g. 0.10 for ±10 %")
      ->check(finite_positive())
      ->default_str("0.10");
  add_format_option(cmd, o->format);
  cmd->callback([o]() {
    const model::Coefficients c = load_coefficients(o->coefficients);
    const auto records = calibrate::read_records_required(o->measurements);
    const model::StepModel m(load_model(o->model.empty() ? c.model : o->model), c);
    int64_t checked = 0;
    const auto findings = check(m, records, o->tolerance, checked);
    std::vector<std::string> lines;
    for (const auto& f : findings)
      lines.push_back(o->measurements + ":" + std::to_string(f.line) + ": " + f.what + " measured " +
                      fixed(f.measured, 3) + ", predicted " + fixed(f.predicted, 3) + " (" +
                      (f.error_rel >= 0 ? "+" : "") + fixed(f.error_rel * 100, 1) + " %), beyond ±" +
                      fixed(o->tolerance * 100, 1) + " %");
    if (o->format == Format::json) {
      nlohmann::json j{{"tolerance", o->tolerance}, {"records", checked}, {"drifted", nlohmann::json::array()}};
      for (const auto& f : findings)
        j["drifted"].push_back({{"line", f.line},
                                {"quantity", f.what},
                                {"measured", f.measured},
                                {"predicted", f.predicted},
                                {"error_rel", f.error_rel}});
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << checked << " records checked against " << o->coefficients << " at ±" << fixed(o->tolerance * 100, 1)
                << " %: " << findings.size() << " beyond\n";
      for (const auto& l : lines) std::cout << "  " << l << "\n";
    }
    if (!findings.empty()) {
      std::string lines_text;
      for (const auto& l : lines) lines_text += "\n  " + l;
      throw CheckFailed(std::to_string(findings.size()) + " measurement(s) drifted beyond the tolerance:" + lines_text);
    }
  });
}

}  // namespace stepcast::cli
