#pragma once
// Coefficient files: YAML with provenance (model, GPU, tier, points, tool version, date) and the fit's
// account of itself (value, standard error, selected or not and why, per term). The planner loads
// `--coefficients C.yaml` through load_coefficients.
#include <nlohmann/json.hpp>

#include <string>

#include "model/coefficients.hpp"

namespace stepcast::io {

// Strict: every missing, ill-typed or unknown key is reported as file:line:col in one InputError.
model::Coefficients load_coefficients(const std::string& path);

// Writes atomically (a temp file in the same folder, then rename). Overwrites; callers check --force.
void save_coefficients(const std::string& path, const model::Coefficients& coefficients);

// The same content as JSON, for --format json reporters.
nlohmann::json coefficients_json(const model::Coefficients& coefficients);

// The YAML text save_coefficients writes.
std::string coefficients_yaml(const model::Coefficients& coefficients);

}  // namespace stepcast::io
