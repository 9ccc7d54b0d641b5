#pragma once
// --gpu, --tier and --transfer, shared by predict, validate, drift and plan (docs/method.md, "Transfer").
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "model/shape.hpp"
#include "model/transfer.hpp"

namespace stepcast::cli {

struct TransferOptions {
  std::string gpu;   // empty: the coefficients'
  std::string tier;  // empty: the coefficients'
  bool transfer = false;
};

void add_transfer_options(CLI::App* cmd, TransferOptions& o);

// The coefficients for the asked GPU and tier and for `shape`. A model asked with --model (`model_arg`, a name or a
// config path) is a model transfer unless it has the coefficients' model's weights and GEMM work. Throws
// InputError naming each mismatch, located at the coefficient file's key (and the config file), without --transfer.
model::Transfer transfer_for(const model::Coefficients& c, const std::string& coefficients_path,
                             const model::ModelShape& shape, const std::string& model_arg, const TransferOptions& o);

// JSON `provenance`: the names of t.provenance, most trusted first ("calibrated", "transferred-gpu", ...).
nlohmann::json provenance_json(const model::Transfer& t);

// Every record must be of the GPU the predictions are for: a record of another GPU is not a drift or an error of
// the model but another device. Throws InputError (exit 2) with the record's file:line naming both GPUs.
void require_records_on_gpu(const std::vector<calibrate::Record>& records, const model::Transfer& t,
                            const std::string& coefficients_path, const std::string& command);

}  // namespace stepcast::cli
