#pragma once
// A corpus as the planner sees it: the token length of every sample in corpus order, optionally
// the loss tokens (`kept`) and the source document (`root`) of each. Built from a file (io/corpus_io),
// a histogram or the seeded synthetic generator below.
#include <cstdint>
#include <string>
#include <vector>

#include "model/limits.hpp"

namespace stepcast::planner {

// Memory per sample while planning: the corpus's int32 columns (length, kept, root) and, per sweep thread,
// the schedule being simulated (truncated lengths, sort order, rows, sample order, batch bounds: about
// 40 bytes). Peak resident memory measured at about 120 bytes per sample with the default two threads
// (docs/planner.md "Bounded resources"); limits::kMaxSamples (model/limits.hpp) keeps that near 6 GB.
constexpr int64_t kBytesPerSample = 128;
using limits::kMaxSamples;

struct Corpus {
  std::vector<int32_t> lengths;  // tokens of each sample, corpus order
  std::vector<int32_t> kept;     // loss tokens of each sample (the last `kept` tokens); empty if unknown
  std::vector<int32_t> roots;    // dense root-document id of each sample, 0..num_roots-1; empty if unknown
  int64_t num_roots = 0;

  int64_t size() const { return static_cast<int64_t>(lengths.size()); }
  bool has_kept() const { return !kept.empty(); }
  bool has_roots() const { return !roots.empty(); }
  int64_t total_tokens() const;
  int32_t max_length() const;
};

// One log-normal component: ln(length) ~ Normal(ln(median_tokens), sigma^2), drawn with `weight`.
struct LogNormalComponent {
  double weight = 1.0;
  double median_tokens = 1024.0;
  double sigma = 1.0;
};

// A seeded mixture of log-normals for what-if questions. Lengths are rounded and clamped to
// [min_length, max_length]; when `roots` > 0 every sample gets a uniform random root in [0, roots).
struct SyntheticSpec {
  int64_t samples = 10000;
  uint64_t seed = 1;
  int64_t min_length = 1;
  int64_t max_length = 131072;
  int64_t roots = 0;
  std::vector<LogNormalComponent> components{LogNormalComponent{}};
};

// Throws InputError beyond kMaxSamples, before allocating.
Corpus generate_synthetic(const SyntheticSpec& spec);

// A histogram of exact lengths. A histogram has no order, so the samples are laid out in a seeded
// random order (corpus order matters to `fixed` and `pad-to-longest`).
struct HistogramBin {
  int64_t length = 0;
  int64_t count = 0;
};

// Throws InputError when the counts sum beyond kMaxSamples, before allocating.
Corpus expand_histogram(const std::vector<HistogramBin>& bins, uint64_t seed);

}  // namespace stepcast::planner
