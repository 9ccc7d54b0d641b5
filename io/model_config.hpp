#pragma once
// Hugging Face config.json → model::ModelShape. The config's model_type picks its family's entry
// (model/family.hpp: Gemma-4 text, gemma4_text or the text_config inside a gemma4 config, and the Llama-like
// llama, mistral, qwen2, qwen3); the entry's schema says which keys to read and supplies the defaults.
#include <string>

#include "model/shape.hpp"

namespace stepcast::io {

// Parses the file at `path`. Every missing or ill-typed field is reported (by name, with file:line:col
// where the file has one) in one InputError. Unknown keys are fine: HF configs carry many we ignore.
model::ModelShape load_model_config(const std::string& path);

// Resolves a model argument: an existing file path, or a name under the models folder
// ($STEPCAST_MODELS_DIR, else the shipped scenarios/models) with or without ".json".
std::string resolve_model_path(const std::string& name_or_path);

// Both steps: a shape from a name or a path.
model::ModelShape load_model(const std::string& name_or_path);

}  // namespace stepcast::io
