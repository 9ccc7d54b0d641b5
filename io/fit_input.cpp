#include "io/fit_input.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"

namespace stepcast::io {

std::string record_fingerprint(const calibrate::Record& r) {
  std::string key = r.model + '\x1f' + r.gpu + '\x1f' + r.tier + '\x1f' + std::to_string(r.width) + '\x1f';
  for (int64_t row : r.rows) key += std::to_string(row) + ',';
  char number[64];
  std::snprintf(number, sizeof number, "\x1f%.17g\x1f%.17g\x1f%d", r.step_s.value_or(-1), r.peak_gib.value_or(-1),
                r.oom ? 1 : 0);
  key += number;
  key += r.extra.dump();
  uint64_t h = 14695981039346656037ULL;  // FNV-1a, 64 bits
  for (unsigned char ch : key) h = (h ^ ch) * 1099511628211ULL;
  std::snprintf(number, sizeof number, "%016llx", static_cast<unsigned long long>(h));
  return number;
}

std::string record_fingerprints(const std::vector<calibrate::Record>& records) {
  std::set<std::string> unique;
  for (const auto& r : records) unique.insert(record_fingerprint(r));
  std::string out;
  for (const auto& f : unique) out += (out.empty() ? "" : " ") + f;
  return out;
}

std::string prior_refusal(const model::Coefficients& c, const std::vector<calibrate::Record>& judged) {
  const calibrate::Record& r = judged.front();
  if (c.model != r.model || c.gpu != r.gpu || c.tier != r.tier)
    return "fitted on " + c.model + " / " + c.gpu + " / " + c.tier + ", not " + r.model + " / " + r.gpu + " / " + r.tier;
  if (c.fitted_records.empty()) return "it does not list the records it was fitted on (written before fitted_records)";
  std::set<std::string> fitted;
  std::istringstream words(c.fitted_records);
  for (std::string w; words >> w;) fitted.insert(w);
  int64_t shared = 0;
  for (const auto& rec : judged) shared += fitted.count(record_fingerprint(rec)) > 0 ? 1 : 0;
  if (shared > 0) return "it was fitted on " + std::to_string(shared) + " of these " + std::to_string(judged.size()) + " records";
  return "";
}

std::string find_prior(const std::vector<calibrate::Record>& judged) {
  namespace fs = std::filesystem;
  if (judged.empty()) return "";
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
  int64_t best_points = -1;
  for (const auto& f : files) {
    model::Coefficients c;
    try {
      c = load_coefficients(f.string());
    } catch (const Error&) {
      continue;  // not a coefficient file (or a broken one): never a prior
    }
    if (!prior_refusal(c, judged).empty()) continue;
    if (c.points > best_points) {
      best_points = c.points;
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
  calibrate::check_uniform(in.records, measurements_label(o), o.pooled);
  if (o.pooled && !o.model.empty())
    throw InputError("--model with --pooled. Violated constraint: a pooled fit prices each record with its own model");
  // The weights as measured: the records' `dtype` (the harness and tools/device/hf_campaign.py write it), else --dtype,
  // else the config's.
  const auto measured_dtype = [&](const calibrate::Record& r) {
    const auto d = r.extra.find("dtype");
    return d != r.extra.end() && d->is_string() ? d->get<std::string>() : o.dtype;
  };
  const auto with_dtype = [](model::ModelShape s, const std::string& dtype) {
    if (!dtype.empty()) {
      model::dtype_bytes(dtype);  // an unknown name is refused, naming the known ones
      s.dtype = dtype;
    }
    return s;
  };
  in.shape = with_dtype(load_model(o.model.empty() ? in.records.front().model : o.model), measured_dtype(in.records.front()));
  if (o.pooled) {
    for (const auto& r : in.records)
      if (!in.pooled_shapes.count(r.model)) {
        try {
          in.pooled_shapes.emplace(r.model, with_dtype(load_model(r.model), measured_dtype(r)));
        } catch (const InputError& e) {
          throw InputError(r.where() + ": model '" + r.model + "': " + e.what());
        }
      }
  }
  in.options.loss = o.loss;
  in.options.loss_scale = o.loss_scale;
  in.options.residuals = o.residuals;
  in.options.tool_version = tool_version;
  in.options.records_file = measurements_label(o);
  in.options.prior_rel_sigma = o.prior_sigma;
  in.options.expert_work = o.expert_work;
  in.options.memory_work = o.memory_work;
  std::string prior = o.prior;
  if (prior == "auto") prior = find_prior(in.records);
  if (!prior.empty() && prior != "none") {
    in.options.prior = load_coefficients(prior);
    in.options.prior_name = prior;
  }
  return in;
}

}  // namespace stepcast::io
