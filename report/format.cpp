#include "report/format.hpp"

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

}  // namespace stepcast::report
