#pragma once
// The command-line options calibrate and validate share (io::FitInputOptions is what they fill).
#include <CLI/CLI.hpp>

#include "io/fit_input.hpp"
#include "model/transfer.hpp"

namespace stepcast::cli {

// `measurements_required = false`: the caller checks (validate needs them only without --run).
void add_fit_input_options(CLI::App* cmd, io::FitInputOptions& o, bool measurements_required = true);

// calibrate --prior-transfer (docs/families.md, "Few shot from the transferred prior"): the prior carried to the
// records' model, GPU and tier exactly as predict --coefficients PRIOR --model M --gpu G --tier T --transfer
// carries coefficients (predict/predictor.hpp choose_predictor, with the host side re-priced by both models'
// kernel launches). `model_arg` is calibrate's --model, or the records' model when none was given. Throws
// InputError (exit 2) naming the prior's file when the prior cannot be carried (a GPU without peaks in
// scenarios/gpus.yaml).
model::Transfer transferred_prior(const std::string& prior_path, const std::string& model_arg,
                                  const std::vector<calibrate::Record>& records);

}  // namespace stepcast::cli
