#include "report/format.hpp"

#include <cmath>
#include <cstdio>

namespace stepcast::report {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string billions(int64_t n) {
  const double b = static_cast<double>(n) / 1e9;
  if (b >= 1.0) return fixed(b, 2) + " B";
  return fixed(static_cast<double>(n) / 1e6, 2) + " M";
}

std::string percent(double fraction, int digits) { return fixed(100 * fraction, digits) + " %"; }

std::string change_vs_baseline(double saving) {
  std::string text(saving > 0 ? "-" : "+");
  text += percent(std::abs(saving));
  return text;
}

TimeUnit time_unit_for(double seconds) {
  if (seconds < 600) return {"s", "seconds", 1, 1};
  if (seconds < 3600) return {"min", "minutes", 60, 1};
  return {"h", "hours", 3600, 2};
}

std::string duration(double seconds) {
  const TimeUnit u = time_unit_for(seconds);
  return fixed(seconds / u.seconds, u.digits) + " " + u.name;
}

}  // namespace stepcast::report
