#pragma once
// Every figure stepcast prints is finite and, where it is a time, a size or a count, >= 0; otherwise the
// command refuses (exit 2) naming the input that produced it, instead of printing "nan s" or a negative
// peak. The readers' bounds (io/limits.hpp) should make these checks unreachable: they are the last guard.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "model/errors.hpp"

namespace stepcast::cli {

// `value` as a printed figure of `what`; `where` is the input that produced it (file:line).
inline double require_figure(double value, const std::string& where, const std::string& what) {
  if (std::isfinite(value) && value >= 0) return value;
  throw InputError(where + ": the " + what + " comes out as " + std::to_string(value) +
                   ". Violated constraint: a finite figure >= 0 (an input beyond what the cost model can represent)");
}

// Every number in `j` (a report with no signed figures) is finite and >= 0.
inline void require_figures(const nlohmann::json& j, const std::string& where, const std::string& key = "") {
  if (j.is_number()) require_figure(j.get<double>(), where, key);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) require_figures(v, where, k);
  if (j.is_array())
    for (const auto& v : j) require_figures(v, where, key);
}

// A flag that must be a finite number > 0 (CLI::PositiveNumber lets "nan" and "inf" through).
inline CLI::Validator finite_positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v <= 0)
          return "'" + text + "'. Violated constraint: a finite number > 0";
        return {};
      },
      "FINITE > 0");
}

}  // namespace stepcast::cli
