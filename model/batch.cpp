#include "model/batch.hpp"

#include <algorithm>
#include <cmath>

namespace stepcast::model {

std::vector<int64_t> padded_rows(int64_t rows, int64_t width, double padding) {
  const auto total = static_cast<int64_t>(std::llround((1.0 - padding) * static_cast<double>(rows * width)));
  if (rows == 1) return {std::max<int64_t>(2, total)};
  std::vector<int64_t> out(static_cast<size_t>(rows), width);
  const int64_t rest = std::max<int64_t>(2 * (rows - 1), total - width);  // real tokens of rows 1..R-1
  for (int64_t r = 1; r < rows; ++r) {
    const int64_t share = rest / (rows - 1) + (r <= rest % (rows - 1) ? 1 : 0);
    out[static_cast<size_t>(r)] = std::min(width, share);
  }
  return out;
}

}  // namespace stepcast::model
