#pragma once
// Wall-clock timing shared by the benchmarks: one run, and the best of n (the least disturbed by other load).
#include <algorithm>
#include <chrono>
#include <functional>

namespace stepcast::bench {

inline double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline double best_of(int n, const std::function<void()>& f) {
  double best = 1e300;
  for (int i = 0; i < n; ++i) best = std::min(best, seconds(f));
  return best;
}

}  // namespace stepcast::bench
