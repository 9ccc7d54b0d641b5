#pragma once
// Small text helpers shared by the reporters.
#include <cstdint>
#include <string>

namespace stepcast::report {

std::string with_commas(int64_t n);       // 25233141760 -> "25,233,141,760"
std::string billions(int64_t n);          // 25233141760 -> "25.23 B"
std::string fixed(double value, int digits);

}  // namespace stepcast::report
