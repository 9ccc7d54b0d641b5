#pragma once
// The command-line options calibrate and validate share (io::FitInputOptions is what they fill).
#include <CLI/CLI.hpp>

#include "io/fit_input.hpp"

namespace stepcast::cli {

// `measurements_required = false`: the caller checks (validate needs them only without --run).
void add_fit_input_options(CLI::App* cmd, io::FitInputOptions& o, bool measurements_required = true);

}  // namespace stepcast::cli
