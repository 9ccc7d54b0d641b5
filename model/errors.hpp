#pragma once
// One error hierarchy for the whole project (after CLI11's Error.hpp). Library code throws;
// only main() turns an error into an exit code: 2 for bad input, 1 for a failed check.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace stepcast {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input: a file, a flag, a value. Carries every problem found, one message each, already
// formatted as `file:line:col: what. Violated constraint: ...` where a position is known.
class InputError : public Error {
 public:
  explicit InputError(std::string problem) : InputError(std::vector<std::string>{std::move(problem)}) {}
  explicit InputError(std::vector<std::string> problems)
      : Error(join(problems)), problems_(std::move(problems)) {}
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  static std::string join(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) out += (out.empty() ? "" : "\n") + line;
    return out;
  }
  std::vector<std::string> problems_;
};

// A check the user asked for did not pass (drift beyond tolerance, a validation bar).
class CheckFailed : public Error {
 public:
  using Error::Error;
};

// Collects problems instead of stopping at the first (Ceres' Solver::Options::IsValid style).
class Diagnostics {
 public:
  void add(std::string message) { problems_.push_back(std::move(message)); }
  bool empty() const { return problems_.empty(); }
  const std::vector<std::string>& problems() const { return problems_; }
  void throw_if_any() const {
    if (!problems_.empty()) throw InputError(problems_);
  }

 private:
  std::vector<std::string> problems_;
};

}  // namespace stepcast
