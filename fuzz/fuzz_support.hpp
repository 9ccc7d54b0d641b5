#pragma once
// What every fuzz target shares (docs/reliability.md). A target runs its reader in-process on the fuzzed
// bytes (a file in a per-process scratch folder, or the text itself where the reader takes text) and then
// the cheap computations the commands do with what it read; the oracles turn a broken promise into an abort:
//   - a reader returns, or refuses with InputError naming the fuzzed file and a line ("file:LINE", or
//     "file: byte N" for a streamed Chrome trace); any other exception, a crash or a sanitizer report aborts;
//   - every figure computed from an accepted input is finite and >= 0, or refused with InputError.
// The replay tests (and libFuzzer with STEPCAST_FUZZ_COMMANDS=1) also run the whole stepcast commands that read
// the file, which adds: the exit code is 0, 1 or 2; an exit 2 names the file and a line; every figure of a
// --format json answer is a number and every time, size, token or count is >= 0. Those commands cost
// milliseconds an input, the readers microseconds: libFuzzer runs the readers alone.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/coefficients.hpp"
#include "model/shape.hpp"

namespace stepcast::fuzz {

// Writes the input to `name` inside a per-process scratch folder (beside links to the shipped
// scenarios' corpora and coefficients, so a fuzzed scenario can name them) and returns its path.
std::string scratch_file(const uint8_t* data, size_t size, const std::string& name);

// The shipped file at `relative` under scenarios/ (an absolute path).
std::string shipped(const std::string& relative);
// A measured file at `relative` under measurements/ (an absolute path).
std::string measured(const std::string& relative);

// The shipped H200 coefficients and the Gemma-4 26B-A4B shape they were fitted on, loaded once.
const model::Coefficients& shipped_coefficients();
const model::ModelShape& shipped_model();

// Runs `read` (a reader over the fuzzed file `input`): true when it returned, false when it refused with an
// InputError that names `input` and a line. Anything else aborts.
bool reads_or_refuses(const std::function<void()>& read, const std::string& input);

// Runs `compute` on what a reader accepted: it returns, or refuses with InputError. Anything else aborts.
void computes_or_refuses(const std::function<void()>& compute, const std::string& what);

// Aborts unless `value` is finite and >= 0.
void check_figure(double value, const std::string& what);

// Aborts unless every figure in `j` (a --format json answer) is a number, and every time, size, token or
// count (told by its key) is >= 0.
void check_json_figures(const nlohmann::json& j);

// Whether each input also runs the whole commands: on in the replay tests, and under libFuzzer when
// STEPCAST_FUZZ_COMMANDS is set.
bool whole_commands();
void set_whole_commands(bool on);

// Runs `stepcast args...` in-process with its output captured and checks the command oracles above against
// `input` (the fuzzed file). Returns the exit code.
int run_stepcast(const std::vector<std::string>& args, const std::string& input);

}  // namespace stepcast::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
