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

// Resolves a model argument to a config.json path: an existing file; a directory holding config.json (a
// downloaded Hugging Face model); a name under the models folder ($STEPCAST_MODELS_DIR, else the shipped
// scenarios/models) with or without ".json"; or an `org/name` in the local Hugging Face cache
// ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub: models--org--name/snapshots/<revision>/,
// the revision refs/main names, else the newest). Anything else is an InputError that says where it looked.
std::string resolve_model_path(const std::string& name_or_path);

// The name a model goes by in records: the file's stem; a directory's name for its config.json; `name`
// for an `org/name` from the cache.
std::string model_name(const std::string& name_or_path, const std::string& resolved_path);

// Both steps: a shape from a name or a path, named by model_name.
model::ModelShape load_model(const std::string& name_or_path);

}  // namespace stepcast::io
