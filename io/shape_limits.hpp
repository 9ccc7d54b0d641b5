#pragma once
// The bounds of io/limits.hpp applied to a parsed model shape: every size within its bound, heads that
// divide the hidden size, a known dtype, and a parameter count whose byte size fits in int64. Each
// refusal is located at the config key that set the value (file:line:col).
#include <yaml-cpp/yaml.h>

#include <string>

#include "model/errors.hpp"
#include "model/shape.hpp"

namespace stepcast::io {

// `root` is the config's document; the keys are looked up in it and in its `text_config` (Gemma-4).
void check_shape_limits(const model::ModelShape& shape, const YAML::Node& root, const std::string& path,
                        Diagnostics& diagnostics);

}  // namespace stepcast::io
