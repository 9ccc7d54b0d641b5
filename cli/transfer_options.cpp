#include "cli/transfer_options.hpp"

#include "model/errors.hpp"

namespace stepcast::cli {

void add_transfer_options(CLI::App* cmd, TransferOptions& o) {
  cmd->add_option("--gpu", o.gpu, "Predict for this GPU (a name in scenarios/gpus.yaml; default: the coefficients')");
  cmd->add_option("--tier", o.tier, "Predict for this tier label (default: the coefficients')");
  cmd->add_flag("--transfer", o.transfer,
                "Allow a model, GPU or tier other than the coefficients' (efficiencies carried by the GPUs' peaks; "
                "the output's first line says what was transferred)");
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
                       "the GPU the predictions are for ('" + t.gpu.name + "', " + io::coefficient_key_where(coefficients_path, "gpu") +
                       "); this record is another GPU, not " +
                       command + " (ask for it with --gpu \"" + gpu.name + "\" --transfer)");
  }
}

}  // namespace stepcast::cli
