#pragma once
// Corpus files, in the formats people have:
//  - one token length per line;
//  - CSV with a header, read by column name (RFC 4180: quoted fields, extra columns ignored): the length
//    column (`length` or `num_tokens`, or the one CorpusOptions::length_field names), optional `kept`
//    (loss tokens) and `root` (source document id, any text);
//  - JSON Lines, one object per sample: the length is the first of `length`, `num_tokens` or the length of
//    the `input_ids` array (or the field CorpusOptions::length_field names: an integer or an array);
//    optional `kept` (an integer; else the count of `labels` that are not -100) and `root`.
// The format is told from the first line that is not a comment: `{` JSON Lines, a letter or a quote a CSV
// header, else lengths. Any of them may be gzip-compressed (told by its bytes, not its name), and the path
// `-` reads standard input. Lines starting with '#' are comments (outside a quoted CSV field); blank lines at
// the end are ignored, blank lines between samples are errors. Every bad line is reported by line number
// (the first 20, then a count); a file with any bad line is rejected, so nothing is silently dropped.
#include <string>
#include <string_view>

#include "planner/corpus.hpp"

namespace stepcast::io {

struct CorpusOptions {
  std::string length_field;  // empty: length, num_tokens, then input_ids (JSON Lines) / length, num_tokens (CSV)
  // The sample past this is refused at its line before it is stored (planner::kMaxSamples: what a plan can
  // hold in memory). Only tests lower it.
  int64_t max_samples = planner::kMaxSamples;
};

// `path` "-" reads standard input.
planner::Corpus load_corpus_file(const std::string& path, const CorpusOptions& options = {});

// Writes the corpus as CSV (`length[,kept][,root]`, roots as their dense ids), atomically
// (temp file + rename): a synthetic corpus becomes a file people can edit and ship.
void save_corpus_csv(const std::string& path, const planner::Corpus& corpus);

// The same reader over text in memory (already decompressed); `name` stands for the file in messages.
planner::Corpus parse_corpus(std::string_view text, const std::string& name, const CorpusOptions& options = {});

}  // namespace stepcast::io
