#include "cli/fit_input.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cli/coefficients_io.hpp"
#include "cli/model_config.hpp"
#include "model/errors.hpp"

namespace stepcast::cli {

std::string find_prior(const std::string& model, const std::string& gpu, const std::string& tier) {
  namespace fs = std::filesystem;
  const char* env = std::getenv("STEPCAST_COEFFICIENTS_DIR");
#ifdef STEPCAST_MODELS_DIR
  const fs::path shipped = fs::path(STEPCAST_MODELS_DIR).parent_path() / "coefficients";
#else
  const fs::path shipped = "scenarios/coefficients";
#endif
  const fs::path dir = env != nullptr && *env != 0 ? fs::path(env) : shipped;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string best;
  int64_t best_score = -1;
  for (const auto& f : files) {
    model::Coefficients c;
    try {
      c = load_coefficients(f.string());
    } catch (const Error&) {
      continue;  // not a coefficient file (or a broken one): never a prior
    }
    if (c.model != model || c.gpu != gpu) continue;
    const int64_t score = (c.tier == tier ? 1000000 : 0) + c.points;
    if (score > best_score) {
      best_score = score;
      best = f.string();
    }
  }
  if (best.empty()) return best;
  // Provenance reads better relative to where the command ran, when the file is below it.
  const fs::path rel = fs::relative(best, fs::current_path(), ec);
  return !ec && !rel.empty() && rel.string().rfind("..", 0) != 0 ? rel.string() : best;
}

void add_fit_input_options(CLI::App* cmd, FitInputOptions& o, bool measurements_required) {
  auto* m = cmd->add_option("--measurements", o.measurements,
                            "Contract-1 records (JSON Lines); several files (repeat the flag or list them) are fitted together");
  if (measurements_required) m->required();
  cmd->add_option("--model", o.model, "config.json path or model name (default: the records' model)");
  cmd->add_option("--tier", o.tier, "Use only the records of this tier label");
  cmd->add_option("--gpu", o.gpu, "Use only the records of this GPU name");
  cmd->add_option("--loss", o.loss, "Robust loss: none, huber or cauchy")
      ->check(CLI::IsMember({"none", "huber", "cauchy"}))
      ->default_str("none");
  cmd->add_option("--loss-scale", o.loss_scale, "Relative step error where the robust loss bends")
      ->check(CLI::PositiveNumber)
      ->default_str("0.05");
  cmd->add_option("--residuals", o.residuals, "Step residuals: relative (every record weighs the same) or absolute (seconds)")
      ->check(CLI::IsMember({"relative", "absolute"}))
      ->default_str("relative");
  cmd->add_option("--prior", o.prior,
                  "Regularise toward a coefficient file: auto (the shipped file of the same model and GPU, if any), "
                  "none, or a path")
      ->default_str("auto");
  cmd->add_option("--prior-sigma", o.prior_sigma, "Relative standard deviation of each prior coefficient")
      ->check(CLI::PositiveNumber)
      ->default_str("0.5");
}

std::string measurements_label(const FitInputOptions& o) {
  std::string label;
  for (const auto& f : o.measurements) label += (label.empty() ? "" : ", ") + f;
  return label;
}

FitInput load_fit_input(const FitInputOptions& o, const std::string& tool_version) {
  FitInput in;
  for (const std::string& file : o.measurements)
    for (auto& r : calibrate::read_records(file)) {
      if (!o.tier.empty() && r.tier != o.tier) continue;
      if (!o.gpu.empty() && r.gpu != o.gpu) continue;
      in.records.push_back(std::move(r));
    }
  if (in.records.empty())
    throw InputError(measurements_label(o) + ": no records" + (o.tier.empty() && o.gpu.empty() ? "" : " match --tier/--gpu") +
                     ". Violated constraint: at least 2 records");
  calibrate::check_uniform(in.records, measurements_label(o));
  in.shape = load_model(o.model.empty() ? in.records.front().model : o.model);
  in.options.loss = o.loss;
  in.options.loss_scale = o.loss_scale;
  in.options.residuals = o.residuals;
  in.options.tool_version = tool_version;
  in.options.records_file = measurements_label(o);
  in.options.prior_rel_sigma = o.prior_sigma;
  std::string prior = o.prior;
  if (prior == "auto") prior = find_prior(in.records.front().model, in.records.front().gpu, in.records.front().tier);
  if (!prior.empty() && prior != "none") {
    in.options.prior = load_coefficients(prior);
    in.options.prior_name = prior;
  }
  return in;
}

}  // namespace stepcast::cli
