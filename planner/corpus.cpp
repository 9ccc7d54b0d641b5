#include "planner/corpus.hpp"

#include <algorithm>
#include <cmath>

#include "model/errors.hpp"
#include "planner/random.hpp"

namespace stepcast::planner {

int64_t Corpus::total_tokens() const {
  int64_t n = 0;
  for (int32_t l : lengths) n += l;
  return n;
}

int32_t Corpus::max_length() const {
  int32_t m = 0;
  for (int32_t l : lengths) m = std::max(m, l);
  return m;
}

namespace {

size_t pick_component(const std::vector<LogNormalComponent>& components, double total_weight, Rng& rng) {
  double u = rng.uniform() * total_weight;
  for (size_t i = 0; i + 1 < components.size(); ++i) {
    if (u < components[i].weight) return i;
    u -= components[i].weight;
  }
  return components.size() - 1;
}

}  // namespace

void check_sample_count(int64_t samples, const std::string& what) {
  if (samples > kMaxSamples)
    throw InputError(what + ": " + std::to_string(samples) + " samples. Violated constraint: <= " +
                     std::to_string(kMaxSamples) + " (about " + std::to_string(kBytesPerSample) +
                     " bytes each while planning; docs/planner.md \"Bounded resources\")");
}

Corpus generate_synthetic(const SyntheticSpec& spec) {
  check_sample_count(spec.samples, "synthetic corpus");
  Corpus corpus;
  corpus.lengths.reserve(static_cast<size_t>(spec.samples));
  double total_weight = 0;
  for (const auto& c : spec.components) total_weight += c.weight;
  Rng rng(spec.seed);
  for (int64_t i = 0; i < spec.samples; ++i) {
    const auto& c = spec.components[pick_component(spec.components, total_weight, rng)];
    const double length = std::round(c.median_tokens * std::exp(c.sigma * rng.normal()));
    // NaN (a median or sigma the reader should have refused) falls to min_length rather than reaching the
    // int32 cast, where it is undefined behaviour.
    const double clamped = std::isnan(length) ? static_cast<double>(spec.min_length)
                                              : std::clamp(length, static_cast<double>(spec.min_length),
                                                           static_cast<double>(spec.max_length));
    corpus.lengths.push_back(static_cast<int32_t>(clamped));
  }
  if (spec.roots > 0) {
    corpus.roots.reserve(static_cast<size_t>(spec.samples));
    for (int64_t i = 0; i < spec.samples; ++i)
      corpus.roots.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(spec.roots))));
    corpus.num_roots = spec.roots;
  }
  return corpus;
}

Corpus expand_histogram(const std::vector<HistogramBin>& bins, uint64_t seed) {
  int64_t samples = 0;
  for (const auto& bin : bins) {
    samples += std::min(bin.count, kMaxSamples + 1);  // stops just past the cap: no overflow
    if (samples > kMaxSamples) break;
  }
  check_sample_count(samples, "histogram corpus");
  Corpus corpus;
  corpus.lengths.reserve(static_cast<size_t>(samples));
  for (const auto& bin : bins)
    corpus.lengths.insert(corpus.lengths.end(), static_cast<size_t>(bin.count), static_cast<int32_t>(bin.length));
  Rng rng(seed);
  shuffle(corpus.lengths.begin(), corpus.lengths.end(), rng);
  return corpus;
}

}  // namespace stepcast::planner
