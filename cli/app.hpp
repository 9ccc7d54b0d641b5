#pragma once
// The stepcast program: CLI11 subcommands. Errors are thrown as stepcast::Error and turned into
// exit codes in run() alone: 0 success, 1 a check failed, 2 bad input.
#include <CLI/CLI.hpp>

#include <string>

namespace stepcast::cli {

enum class Format { text, json, csv };

// Adds `--format text|json` to a subcommand, and csv where its output is a table (report/csv.hpp).
void add_format_option(CLI::App* command, Format& format, bool has_table = false);

// Progress lines go to stderr on a terminal only (rewritten in place with \r); `--progress` forces them,
// one line each, for logs that want them (a CI log never gets \r).
enum class ProgressStyle { none, in_place, lines };
ProgressStyle progress_style(bool forced);

// Each subcommand lives in its own file (cli/cmd_*.cpp) and registers itself here.
void add_describe_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_drift_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);  // only with STEPCAST_WITH_CALIBRATE (Ceres)
void add_validate_command(CLI::App& app);   // only with STEPCAST_WITH_CALIBRATE (Ceres)
void add_kernels_command(CLI::App& app);
void add_campaign_command(CLI::App& app);
// `measure` lives in its own executable, stepcast-measure (LibTorch is large: linking it into stepcast
// would cost every other subcommand ~0.7 s of start-up). stepcast forwards `measure ...` to it.
void add_measure_command(CLI::App& app);    // in stepcast-measure only (cmd_measure.cpp)
void add_measure_forwarder(CLI::App& app);  // in stepcast: execs stepcast-measure beside it

// Parses and runs an app, turning stepcast errors into exit codes: 0 ok, 1 a check failed, 2 bad input.
int parse_and_run(CLI::App& app, int argc, char** argv);

int run(int argc, char** argv);

}  // namespace stepcast::cli
