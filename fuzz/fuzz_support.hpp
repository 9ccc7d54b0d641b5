#pragma once
// What every fuzz target shares (docs/reliability.md): the bytes as a file in a scratch folder, the
// stepcast program run in-process on it, and the oracles that turn a broken promise into an abort:
//   - the exit code is 0, 1 or 2 (a crash or sanitizer report aborts by itself);
//   - a refusal (exit 2) names the fuzzed file with a line number ("file:LINE");
//   - every figure of a --format json answer is a number (no NaN written as null) and every time,
//     size, token or count figure is >= 0.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stepcast::fuzz {

// Writes the input to `name` inside a per-process scratch folder (beside links to the shipped
// scenarios' corpora and coefficients, so a fuzzed scenario can name them) and returns its path.
std::string scratch_file(const uint8_t* data, size_t size, const std::string& name);

// The shipped file at `relative` under scenarios/ (an absolute path).
std::string shipped(const std::string& relative);

// Runs `stepcast args...` in-process with its output captured and checks the oracles above against
// `input` (the fuzzed file). Returns the exit code.
int run_stepcast(const std::vector<std::string>& args, const std::string& input);

}  // namespace stepcast::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
