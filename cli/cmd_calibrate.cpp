// stepcast calibrate: fit a tier's coefficients to measurement records (Ceres), print them with
// standard errors, the chosen terms and why, and the residual of every record; write C.yaml.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

#include "calibrate/design.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/records.hpp"
#include "calibrate/validate.hpp"
#include "cli/app.hpp"
#include "cli/fit_options.hpp"
#include "io/atomic_file.hpp"
#include "io/fit_input.hpp"
#include "io/coefficients_io.hpp"
#include "report/format.hpp"
#include "report/json_output.hpp"
#include "model/errors.hpp"

#ifndef STEPCAST_VERSION
#define STEPCAST_VERSION "dev"
#endif

namespace stepcast::cli {

using io::coefficients_json;
using io::load_fit_input;
using io::measurements_label;
using io::save_coefficients;
using io::FitInput;
using io::FitInputOptions;
using report::fixed;
namespace {

struct CalibrateOptions {
  FitInputOptions input;
  std::string out;
  bool force = false;
  bool prior_transfer = false;
  Format format = Format::text;
};

nlohmann::json report_json(const calibrate::FitReport& r, const std::string& out,
                           const std::vector<std::string>& advice) {
  nlohmann::json j;
  j["advice"] = advice;
  j["coefficients"] = coefficients_json(r.coefficients);
  j["out"] = out;
  j["step_residuals"] = nlohmann::json::array();
  for (const auto& s : r.step_residuals)
    j["step_residuals"].push_back({{"file", s.file},
                                   {"line", s.line},
                                   {"measured_step_s", s.measured_s},
                                   {"predicted_step_s", s.predicted_s},
                                   {"error_rel", s.error_rel()}});
  j["peak_residuals"] = nlohmann::json::array();
  for (const auto& p : r.peak_residuals)
    j["peak_residuals"].push_back({{"file", p.file},
                                   {"line", p.line},
                                   {"measured_peak_gib", p.measured_gib},
                                   {"predicted_peak_gib", p.predicted_gib},
                                   {"oom_constraint", p.oom_constraint},
                                   {"error_rel", p.error_rel()}});
  j["notes"] = r.notes;
  return j;
}

void print_terms(std::ostream& out, const std::string& title, const auto& names, const auto& terms) {
  out << title << "\n";
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& t = terms[i];
    char line[160];
    if (t.selected)
      std::snprintf(line, sizeof line, "  %-28s %12.5g ± %-10.3g ", names[i].c_str(), t.value, t.std_error);
    else
      std::snprintf(line, sizeof line, "  %-28s %12s   %-10s ", names[i].c_str(), "-", "");
    out << line << t.reason << "\n";
  }
}

void print_text(const calibrate::FitReport& r, const std::string& file, const std::string& out_path,
                const std::vector<std::string>& advice, std::ostream& out) {
  const auto& c = r.coefficients;
  out << "calibrated " << c.model << " on " << c.gpu << ", tier " << c.tier << ": " << c.points << " step points, "
      << c.peak_points << " peak points, loss " << c.loss << "\n";
  print_terms(out, "step-time terms (value ± standard error):", model::step_term_names(), c.step);
  print_terms(out, "memory terms (value ± standard error):", model::memory_term_names(), c.memory);
  if (c.step[model::kHost].selected)
    out << "host side: " << fixed(c.launches_per_step, 0) << " launches per step, overlap exponent p = "
        << fixed(c.overlap_exponent, 1) << " (step = (device^p + host^p)^(1/p)), host floor "
        << fixed(c.step[model::kHost].value * c.launches_per_step / 1000.0, 3) << " s\n";
  print_terms(out, "run terms (one-off seconds, value ± standard error):", model::run_term_names(), c.run);
  if (c.held_out.known)
    out << "held-out step errors (" << c.held_out.scheme << "): 90 % interval +-" << fixed(c.held_out.half_width.unpadded * 100, 2)
        << " % unpadded (" << c.held_out.points_unpadded << " records), +-" << fixed(c.held_out.half_width.padded * 100, 2)
        << " % padded (" << c.held_out.points_padded << "); predictions of this file carry them (docs/method.md, \"Intervals\")\n";
  out << "step residuals (relative RMS " << fixed(c.step_rms_rel * 100, 2) << " %):\n";
  for (const auto& s : r.step_residuals)
    out << "  " << (s.file.empty() ? file : s.file) << ":" << s.line << "  measured " << fixed(s.measured_s, 3) << " s  predicted "
        << fixed(s.predicted_s, 3) << " s  " << (s.predicted_s >= s.measured_s ? "+" : "")
        << fixed((s.predicted_s - s.measured_s) * 1000, 1) << " ms (" << fixed(s.error_rel() * 100, 2) << " %)\n";
  out << "peak residuals (RMS " << fixed(c.peak_rms_gib, 2) << " GiB):\n";
  for (const auto& p : r.peak_residuals)
    out << "  " << (p.file.empty() ? file : p.file) << ":" << p.line << "  " << (p.oom_constraint ? "OOM, capacity " : "measured ")
        << fixed(p.measured_gib, 2) << " GiB  predicted " << fixed(p.predicted_gib, 2) << " GiB ("
        << fixed(p.error_rel() * 100, 2) << " %)\n";
  for (const auto& n : r.notes) out << "note: " << n << "\n";
  for (const auto& a : advice) out << "advice: " << a << "\n";
  if (!out_path.empty()) out << "wrote " << out_path << "\n";
}

// --prior-transfer: replace the loaded prior by its transfer to the records' model, GPU and tier; returns the
// transfer's summary ("transferred: model 'a' -> 'b' ...").
std::string carry_prior(const CalibrateOptions& o, FitInput& in) {
  const std::string& path = o.input.prior;
  if (path == "auto" || path == "none" || !in.options.prior)
    throw InputError("--prior-transfer with --prior '" + path +
                     "'. Violated constraint: --prior-transfer needs --prior PATH, the coefficient file to carry");
  const std::string model_arg = o.input.model.empty() ? in.records.front().model : o.input.model;
  const model::Transfer t = transferred_prior(path, model_arg, in.records);
  in.options.prior = t.coefficients;
  in.options.prior_name = path + " (transferred)";
  return t.summary();
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit a tier's step-time and memory coefficients to measurements");
  cmd->footer(
      "Examples:\n"
      "  stepcast calibrate --measurements measurements/records/seed-sm120.jsonl --out seed.yaml\n"
      "  stepcast calibrate --model gemma-4-26b-a4b --measurements h200.jsonl --tier sdpa-auto/grouped \\\n"
      "      --loss huber --out h200.yaml --force --format json\n"
      "Every record must share one model, GPU and tier (filter with --tier / --gpu). Terms the data do not\n"
      "support are dropped and the reason is printed. An existing --out is never overwritten without --force.");
  add_fit_input_options(cmd, o->input);
  cmd->add_flag("--prior-transfer", o->prior_transfer,
                "Carry the --prior file to the records' model, GPU and tier first, as predict --transfer does "
                "(few shot: a transferred prior and a handful of probes)");
  cmd->add_option("--out", o->out, "Write the coefficients here (YAML, atomically)");
  cmd->add_flag("--force", o->force, "Overwrite an existing --out");
  add_format_option(cmd, o->format);
  cmd->callback([o]() {
    if (!o->out.empty()) {
      auto inputs = o->input.measurements;  // and the prior and model config when given as files
      for (const auto& file : {o->input.prior, o->input.model})
        if (std::filesystem::is_regular_file(file)) inputs.push_back(file);
      io::check_output(o->out, {"--out", o->force, inputs});
    }
    FitInput in = load_fit_input(o->input, STEPCAST_VERSION);
    std::string transferred;
    if (o->prior_transfer) transferred = carry_prior(*o, in);
    calibrate::FitReport report = calibrate::fit(in.shapes(), in.records, in.options);
    report.coefficients.fitted_records = io::record_fingerprints(in.records);  // provenance for --prior auto
    // The file's own held-out errors: the calibrated interval of every prediction made with it.
    report.coefficients.held_out = calibrate::fit_held_out(in.shape, in.records, in.options);
    if (!transferred.empty()) report.notes.insert(report.notes.begin(), "prior " + transferred);
    if (!o->out.empty()) save_coefficients(o->out, report.coefficients);
    const auto advice = calibrate::design_advice(in.records);
    if (o->format == Format::json)
      report::print_json(std::cout, "calibrate", report_json(report, o->out, advice));
    else
      print_text(report, measurements_label(o->input), o->out, advice, std::cout);
  });
}

}  // namespace stepcast::cli
