#include "io/step_model_choice.hpp"

#include <filesystem>
#include <fstream>
#include <limits>

#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/launches.hpp"

namespace stepcast::io {
namespace {

// The same model under another name (a config path for a shipped model): same weights, same GEMM work.
bool same_model(const model::ModelShape& shape, const std::string& coefficients_model) {
  if (shape.name == coefficients_model) return true;
  try {
    const model::ModelShape theirs = load_model(coefficients_model);
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
        model::LaunchModel(load_model(c.model), model::tier_from_label(c.tier), c.lora_rank).per_step(kEveryExpertHit);
  } catch (const InputError&) {
    return;
  }
  const std::string tier = ask.tier.empty() ? c.tier : ask.tier;
  ask.target_launches = model::LaunchModel(shape, model::tier_from_label(tier), c.lora_rank).per_step(kEveryExpertHit);
}

}  // namespace

std::string coefficient_key_where(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.rfind(key + ":", 0) == 0) return path + ":" + std::to_string(n);
  return path + ":1";
}

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
    std::string where = coefficient_key_where(coefficients_path, key);
    if (model_asked && std::filesystem::is_regular_file(model_arg)) where = model_arg + ":1: (the config) and " + where;
    throw InputError(where + ": " + e.what());
  }
}

StepModelChoice choose_step_model(const std::string& coefficients_path, const std::string& model_arg,
                                  const TransferOptions& asked) {
  const model::Coefficients c = load_coefficients(coefficients_path);
  // The model and GPU asked for are what is predicted: another one than the coefficients' is a transfer.
  StepModelChoice choice;
  choice.shape = load_model(model_arg.empty() ? c.model : model_arg);
  choice.transfer = transfer_for(c, coefficients_path, choice.shape, model_arg, asked);
  choice.description = "StepModel " + choice.shape.name + " on " + choice.transfer.gpu.name + ", tier " +
                       choice.transfer.coefficients.tier + " (" + coefficients_path + ", " + std::to_string(c.points) +
                       " points)";
  choice.wall_clock_half_width = 1.645 * c.step_rms_rel + choice.transfer.transfer_half_width;
  return choice;
}

}  // namespace stepcast::io
