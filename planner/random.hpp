#pragma once
// A small seeded generator whose output is the same on every platform and standard library
// (std::*_distribution is implementation-defined), so a seed names the same plan everywhere.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace stepcast::planner {

// SplitMix64 (Steele, Lea, Flood 2014): 64-bit state, passes BigCrush, trivially seedable.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); the modulo bias is below n / 2^64, irrelevant here.
  uint64_t below(uint64_t n) { return next() % n; }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {                                                             // Box-Muller
    const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// Fisher-Yates over [first, last).
template <typename It>
void shuffle(It first, It last, Rng& rng) {
  const auto n = static_cast<uint64_t>(last - first);
  for (uint64_t i = n; i > 1; --i) std::swap(first[i - 1], first[rng.below(i)]);
}

}  // namespace stepcast::planner
