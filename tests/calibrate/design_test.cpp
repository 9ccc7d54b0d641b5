// Probe advice (calibrate/design.hpp): which gap of a design leaves two costs apart, and the shape that closes it.
#include "calibrate/design.hpp"
#include "catch.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;

namespace {
calibrate::Record record(std::vector<int64_t> rows, int64_t width) {
  calibrate::Record r;
  r.rows = std::move(rows);
  r.width = width;
  r.step_s = 1.0;
  return r;
}
}  // namespace

TEST_CASE("the four-probe design (2 rows at 2k/4k/8k plus a padded pair) is told it fixes the row count", "[design]") {
  const std::vector<calibrate::Record> four{record({2048, 2048}, 2048), record({4096, 4096}, 4096),
                                            record({8192, 8192}, 8192), record({4096, 2048}, 4096)};
  const auto advice = calibrate::design_advice(four);
  REQUIRE(advice.size() == 1);
  CHECK_THAT(advice[0], Contains("every record has 2 rows"));
  CHECK_THAT(advice[0], Contains("measure 1 x 2048 and 4 x 2048"));
}

TEST_CASE("one width, or no padding, or only padding, each gets its shape", "[design]") {
  auto advice = calibrate::design_advice({record({4096}, 4096), record({4096, 4096}, 4096)});
  REQUIRE(advice.size() == 2);
  CHECK_THAT(advice[0], Contains("every record is 4096 wide"));
  CHECK_THAT(advice[0], Contains("measure 2 x 8192 and 2 x 2048"));
  CHECK_THAT(advice[1], Contains("no record is padded"));
  advice = calibrate::design_advice({record({4096, 2048}, 4096), record({2048, 100}, 2048), record({10}, 2048)});
  REQUIRE(advice.size() == 1);
  CHECK_THAT(advice[0], Contains("every record is padded"));
}

TEST_CASE("a design that varies rows, width and padding gets no advice, OOM records do not count", "[design]") {
  std::vector<calibrate::Record> good{record({2048}, 2048), record({4096, 4096}, 4096), record({4096, 2048}, 4096)};
  CHECK(calibrate::design_advice(good).empty());
  auto oom = record({8192, 8192, 8192}, 8192);
  oom.oom = true;
  oom.step_s.reset();
  good.push_back(oom);
  CHECK(calibrate::design_advice(good).empty());
  CHECK(calibrate::design_advice({}).empty());
}

// Two terms (a fixed cost and a per-token cost): rows are (1, tokens) over the step, as the fit weighs them.
namespace {
calibrate::ProbeRow two_term_row(double tokens) {
  const double step = 0.2 + 1e-4 * tokens;
  return {{1.0 / step, tokens / step}};
}
}  // namespace

TEST_CASE("a c-optimal pick separates the terms the records cannot tell apart", "[design]") {
  // Every record at 4096 tokens: the fixed and per-token costs are confounded, the target (a run of 1000 short
  // micro-batches) is not the records' direction, so its variance is huge until another token count is measured.
  const std::vector<calibrate::ProbeRow> records{two_term_row(4096), two_term_row(4096)};
  const std::vector<calibrate::ProbeRow> candidates{two_term_row(4096), two_term_row(512), two_term_row(16384)};
  const std::vector<double> target{1000.0, 1000.0 * 600};
  const auto s = calibrate::suggest_probes(records, candidates, target, 2);
  REQUIRE(s.picks.size() == 2);
  CHECK(s.picks[0] != 0);  // not the shape already measured
  CHECK(s.variance[1] < s.variance[0] * 1e-3);
  CHECK(s.variance[2] <= s.variance[1]);
}

TEST_CASE("each candidate is picked at most once, and each pick never raises the variance", "[design]") {
  const std::vector<calibrate::ProbeRow> records{two_term_row(512), two_term_row(16384)};
  const std::vector<calibrate::ProbeRow> candidates{two_term_row(600), two_term_row(16384)};
  const auto s = calibrate::suggest_probes(records, candidates, {1.0, 600.0}, 5);
  REQUIRE(s.picks.size() == 2);  // no more than the candidates offered
  CHECK(s.picks[0] != s.picks[1]);
  REQUIRE(s.variance.size() == 3);
  CHECK(s.variance[1] < s.variance[0]);
  CHECK(s.variance[2] < s.variance[1]);
}
