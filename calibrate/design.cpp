#include "calibrate/design.hpp"

#include <algorithm>
#include <set>

namespace stepcast::calibrate {

std::vector<std::string> design_advice(const std::vector<Record>& records) {
  std::set<size_t> rows;
  std::set<int64_t> widths;
  int64_t padded = 0, unpadded = 0, widest = 0, most_rows = 0;
  for (const auto& r : records) {
    if (!r.step_s || r.oom) continue;
    rows.insert(r.rows.size());
    widths.insert(r.width);
    (r.has_padding() ? padded : unpadded) += 1;
    widest = std::max(widest, r.width);
    most_rows = std::max<int64_t>(most_rows, static_cast<int64_t>(r.rows.size()));
  }
  std::vector<std::string> advice;
  if (rows.empty()) return advice;
  const std::string w = std::to_string(*widths.begin());
  if (rows.size() == 1) {
    const int64_t r = most_rows;
    advice.push_back("every record has " + std::to_string(r) + " row" + (r == 1 ? "" : "s") +
                     ": a cost per row cannot be told from a cost per token, so other row counts are extrapolated; "
                     "measure 1 x " + w + " and " + std::to_string(std::max<int64_t>(4, 2 * r)) + " x " + w);
  }
  if (widths.size() == 1)
    advice.push_back("every record is " + w + " wide: GEMM work (linear in width) cannot be told from attention "
                     "work (quadratic) or a fixed cost; measure " + std::to_string(most_rows) + " x " +
                     std::to_string(2 * widest) + " and " + std::to_string(most_rows) + " x " +
                     std::to_string(std::max<int64_t>(128, widest / 2)));
  if (padded == 0)
    advice.push_back("no record is padded: the mask-path cost of padded batches is left to the plan alone; measure " +
                     std::to_string(std::max<int64_t>(2, most_rows)) + " x " + std::to_string(widest) +
                     " with one row at half the width");
  else if (unpadded == 0)
    advice.push_back("every record is padded: the mask-path cost cannot be told from attention; measure " +
                     std::to_string(most_rows) + " x " + std::to_string(widest) + " unpadded");
  return advice;
}

}  // namespace stepcast::calibrate
