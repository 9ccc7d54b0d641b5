#include "io/fit_input.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"

namespace stepcast::io {

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

std::string measurements_label(const FitInputOptions& o) {
  std::string label;
  for (const auto& f : o.measurements) label += (label.empty() ? "" : ", ") + f;
  return label;
}

FitInput load_fit_input(const FitInputOptions& o, const std::string& tool_version) {
  FitInput in;
  std::string first_dropped;  // where the first record --tier / --gpu left out is, for the message below
  for (const std::string& file : o.measurements)
    for (auto& r : calibrate::read_records_required(file)) {
      if ((!o.tier.empty() && r.tier != o.tier) || (!o.gpu.empty() && r.gpu != o.gpu)) {
        if (first_dropped.empty()) first_dropped = r.where() + ": tier '" + r.tier + "', GPU '" + r.gpu + "'";
        continue;
      }
      in.records.push_back(std::move(r));
    }
  if (in.records.empty())
    throw InputError(first_dropped + ": no record matches --tier/--gpu. Violated constraint: at least 2 records");
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

}  // namespace stepcast::io
