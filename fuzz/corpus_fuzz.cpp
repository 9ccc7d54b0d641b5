// Fuzz target: corpus text (io/corpus_io's parse_corpus, the reader load_corpus_file runs after reading and
// decompressing). An accepted corpus holds lengths in [1, 2^31 - 1] and, where given, kept <= length for every
// sample and one root id per sample. The replays add plan --corpus on the shipped 64-sample scenario.
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "io/corpus_io.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

namespace {

void check_corpus(const planner::Corpus& c) {
  if (c.size() < 1) check_figure(-1, "samples of an accepted corpus");
  for (size_t i = 0; i < c.lengths.size(); ++i) {
    check_figure(c.lengths[i] - 1, "length - 1");
    if (c.has_kept()) check_figure(c.lengths[i] - c.kept[i], "length - kept");
    if (c.has_kept()) check_figure(c.kept[i], "kept");
  }
  if (c.has_kept() && c.kept.size() != c.lengths.size()) check_figure(-1, "kept for every sample");
  if (c.has_roots() && c.roots.size() != c.lengths.size()) check_figure(-1, "a root for every sample");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string name = "corpus.csv";
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  planner::Corpus corpus;
  if (reads_or_refuses([&] { corpus = io::parse_corpus(text, name); }, name)) check_corpus(corpus);
  if (whole_commands()) {
    const std::string file = scratch_file(data, size, name);
    run_stepcast({"plan", shipped("h200-hf-peft-64.yaml"), "--corpus", file, "--no-sweep", "--format", "json"}, file);
  }
  return 0;
}
