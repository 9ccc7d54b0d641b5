#pragma once
// Small text helpers shared by the reporters.
#include <cstdint>
#include <string>

namespace stepcast::report {

std::string with_commas(int64_t n);       // 25233141760 -> "25,233,141,760"
std::string billions(int64_t n);          // 25233141760 -> "25.23 B"
std::string fixed(double value, int digits);
std::string percent(double fraction, int digits = 1);  // 0.2989 -> "29.9 %"
// A plan's wall clock against the baseline's, as a change: a saving of 0.311 -> "-31.1 %", a loss -> "+34.9 %".
std::string change_vs_baseline(double saving);

// The unit a duration reads best in: seconds below 10 minutes, minutes below an hour, hours beyond (a
// 36 s check run, a 40 min job and a 6 h run each get their own). Charts pick it from their largest value.
struct TimeUnit {
  std::string name;      // "s", "min", "h"
  std::string long_name; // "seconds", "minutes", "hours"
  double seconds = 1;    // seconds per unit
  int digits = 1;        // decimals worth printing
};
TimeUnit time_unit_for(double seconds);
std::string duration(double seconds);  // "36.0 s", "40.0 min", "6.38 h"

}  // namespace stepcast::report
