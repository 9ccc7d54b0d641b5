// Fuzz target: a corpus file (io/corpus_io) through plan on the shipped 64-sample scenario.
#include "fuzz/fuzz_support.hpp"

using stepcast::fuzz::run_stepcast;
using stepcast::fuzz::scratch_file;
using stepcast::fuzz::shipped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string corpus = scratch_file(data, size, "corpus.csv");
  run_stepcast({"plan", shipped("h200-hf-peft-64.yaml"), "--corpus", corpus, "--no-sweep", "--format", "json"}, corpus);
  return 0;
}
