#pragma once
// Corpus files: one token length per line, or CSV with a header `length[,kept][,root]` (columns in
// any order; `kept` = loss tokens, `root` = source document id, any text without a comma). Lines
// starting with '#' are comments; blank lines at the end of the file are ignored, blank lines
// between samples are errors. Every bad line is reported by line number (the first 20, then a
// count); a file with any bad line is rejected, so nothing is silently dropped.
#include <string>
#include <string_view>

#include "planner/corpus.hpp"

namespace stepcast::io {

planner::Corpus load_corpus_file(const std::string& path);

// Writes the corpus as CSV (`length[,kept][,root]`, roots as their dense ids), atomically
// (temp file + rename): a synthetic corpus becomes a file people can edit and ship.
void save_corpus_csv(const std::string& path, const planner::Corpus& corpus);

// The same reader over text in memory; `name` stands for the file in messages.
planner::Corpus parse_corpus(std::string_view text, const std::string& name);

}  // namespace stepcast::io
