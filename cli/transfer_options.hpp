#pragma once
// --gpu, --tier and --transfer, shared by predict, validate, drift and plan (docs/method.md, "Transfer").
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "io/step_model_choice.hpp"
#include "model/shape.hpp"
#include "model/transfer.hpp"

namespace stepcast::cli {

// The options and the transfer itself live in the library (io/step_model_choice.hpp), so that the campaign library
// and a second front end ask the same question.
using io::TransferOptions;
using io::transfer_for;

void add_transfer_options(CLI::App* cmd, TransferOptions& o);

// JSON `provenance`: the names of t.provenance, most trusted first ("calibrated", "transferred-gpu", ...).
nlohmann::json provenance_json(const model::Transfer& t);

// Every record must be of the GPU the predictions are for: a record of another GPU is not a drift or an error of
// the model but another device. Throws InputError (exit 2) with the record's file:line naming both GPUs.
void require_records_on_gpu(const std::vector<calibrate::Record>& records, const model::Transfer& t,
                            const std::string& coefficients_path, const std::string& command);

}  // namespace stepcast::cli
