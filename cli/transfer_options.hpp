#pragma once
// --gpu, --tier and --transfer, shared by predict, validate, drift and plan (docs/method.md, "Transfer").
#include <CLI/CLI.hpp>

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

// The coefficients for the asked GPU and tier and for `shape` (a model asked with --model whose name differs from
// the coefficients' is a model transfer). Throws InputError naming the mismatch when --transfer is missing.
model::Transfer transfer_for(const model::Coefficients& c, const model::ModelShape& shape, bool model_asked,
                             const TransferOptions& o);

// Every record must be of the GPU the predictions are for: a record of another GPU is not a drift or an error of
// the model but another device. Throws InputError (exit 2) with the record's file:line naming both GPUs.
void require_records_on_gpu(const std::vector<calibrate::Record>& records, const model::Transfer& t,
                            const std::string& command);

}  // namespace stepcast::cli
