#include "cli/transfer_options.hpp"

#include <filesystem>
#include <fstream>
#include <limits>

#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/launches.hpp"

namespace stepcast::cli {

void add_transfer_options(CLI::App* cmd, TransferOptions& o) {
  cmd->add_option("--gpu", o.gpu, "Predict for this GPU (a name in scenarios/gpus.yaml; default: the coefficients')");
  cmd->add_option("--tier", o.tier, "Predict for this tier label (default: the coefficients')");
  cmd->add_flag("--transfer", o.transfer,
                "Allow a model, GPU or tier other than the coefficients' (efficiencies carried by the GPUs' peaks; "
                "the output's first line says what was transferred)");
}

namespace {

// "path:N" for the line of a top-level `key:` of a coefficient file ("path:1" when not found).
std::string key_where(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.rfind(key + ":", 0) == 0) return path + ":" + std::to_string(n);
  return path + ":1";
}

// The same model under another name (a config path for a shipped model): same weights, same GEMM work.
bool same_model(const model::ModelShape& shape, const std::string& coefficients_model) {
  if (shape.name == coefficients_model) return true;
  try {
    const model::ModelShape theirs = io::load_model(coefficients_model);
    return model::weight_bytes(shape, shape.dtype) == model::weight_bytes(theirs, theirs.dtype) &&
           model::gemm_flops_per_token(shape).total() == model::gemm_flops_per_token(theirs).total();
  } catch (const InputError&) {
    return false;
  }
}

// Kernel launches per step of both models (model/launches.hpp), each on its tier, with every expert hit; 0 for
// a coefficients' model that no config names.
void add_launches(model::TransferAsk& ask, const model::Coefficients& c, const model::ModelShape& shape) {
  constexpr double kEveryExpertHit = std::numeric_limits<double>::infinity();
  try {
    ask.source_launches =
        model::LaunchModel(io::load_model(c.model), model::tier_from_label(c.tier), c.lora_rank).per_step(kEveryExpertHit);
  } catch (const InputError&) {
    return;
  }
  const std::string tier = ask.tier.empty() ? c.tier : ask.tier;
  ask.target_launches = model::LaunchModel(shape, model::tier_from_label(tier), c.lora_rank).per_step(kEveryExpertHit);
}

}  // namespace

model::Transfer transfer_for(const model::Coefficients& c, const std::string& coefficients_path,
                             const model::ModelShape& shape, const std::string& model_arg, const TransferOptions& o) {
  const bool model_asked = !model_arg.empty() && !same_model(shape, c.model);
  try {
    model::TransferAsk ask{model_asked ? shape.name : "", o.gpu, o.tier};
    if (model_asked) add_launches(ask, c, shape);
    return model::transfer_coefficients(c, ask, o.transfer);
  } catch (const InputError& e) {
    // Locate the refusal: the coefficient file's key that differs, and the config file asked for.
    const std::string key = model_asked ? "model" : (!o.gpu.empty() && model::gpu_info(o.gpu).name !=
                                                                           model::gpu_info(c.gpu).name)
                                                        ? "gpu"
                                                        : "tier";
    std::string where = key_where(coefficients_path, key);
    if (model_asked && std::filesystem::is_regular_file(model_arg)) where = model_arg + ":1: (the config) and " + where;
    throw InputError(where + ": " + e.what());
  }
}

nlohmann::json provenance_json(const model::Transfer& t) {
  nlohmann::json p = nlohmann::json::array();
  for (auto v : t.provenance) p.push_back(model::provenance_name(v));
  return p;
}

void require_records_on_gpu(const std::vector<calibrate::Record>& records, const model::Transfer& t,
                            const std::string& coefficients_path, const std::string& command) {
  for (const auto& r : records) {
    model::GpuInfo gpu;
    try {
      gpu = model::gpu_info(r.gpu);
    } catch (const InputError& e) {
      throw InputError(r.where() + ": " + e.what());  // an unknown GPU is refused at its record
    }
    if (gpu.name != t.gpu.name)
      throw InputError(r.where() + ": gpu '" + r.gpu + "'. Violated constraint: " + command + " compares records of " +
                       "the GPU the predictions are for ('" + t.gpu.name + "', " + key_where(coefficients_path, "gpu") +
                       "); this record is another GPU, not " +
                       command + " (ask for it with --gpu \"" + gpu.name + "\" --transfer)");
  }
}

}  // namespace stepcast::cli
