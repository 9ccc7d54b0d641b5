#pragma once
// Files stepcast writes (coefficients, reports, corpora) appear whole or not at all: the text goes to a
// temporary file beside the target, which is then renamed over it (rename is atomic within a folder).
#include <string>

namespace stepcast::io {

// Writes `text` to `path` atomically. `what` names the file in messages ("coefficients", "report").
// Throws InputError when the folder cannot be written, Error when the write or the rename fails.
void write_file_atomically(const std::string& path, const std::string& text, const std::string& what);

}  // namespace stepcast::io
