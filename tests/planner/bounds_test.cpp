// Bounded resources in the planner (docs/planner.md "Bounded resources"): the caps refuse before
// allocating, the length sort's memory does not follow the longest sample, the duplicate filter keeps
// exactly what comparing every pair kept.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "catch.hpp"
#include "model/errors.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"
#include "planner/random.hpp"
#include "planner/sweep.hpp"

using namespace stepcast::planner;
using Catch::Matchers::Contains;

namespace {

int64_t peak_rss_bytes() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux: KiB
}

std::string refusal_of(const auto& call) {
  try {
    call();
  } catch (const stepcast::InputError& e) {
    return e.what();
  }
  return "";
}

// The O(n^2) filter rank_plans replaced, as the reference: a plan is dropped when any kept plan is equivalent.
std::vector<PlanResult> keep_first_of_each(const std::vector<PlanResult>& ranked) {
  const auto same_time = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); };
  std::vector<PlanResult> kept;
  for (const auto& p : ranked) {
    const bool duplicate = std::any_of(kept.begin(), kept.end(), [&](const PlanResult& k) {
      return (k.batching.policy == Policy::pack) == (p.batching.policy == Policy::pack) &&
             k.batching.micro_batch == p.batching.micro_batch && k.accumulation == p.accumulation &&
             k.batching.max_length == p.batching.max_length && k.processed_tokens == p.processed_tokens &&
             k.distinct_shapes == p.distinct_shapes && same_time(k.wall_clock_s, p.wall_clock_s);
    });
    if (!duplicate) kept.push_back(p);
  }
  return kept;
}

}  // namespace

TEST_CASE("the length sort of one 2^31-token sample costs no memory per token", "[planner][bounds]") {
  Corpus c;
  c.lengths = {70000, 5, INT32_MAX, 5, 65536, 1, 65535};
  const int64_t before = peak_rss_bytes();
  const Schedule s = build_schedule(c, BatchingSpec{Policy::bucket_to_pair, 7, INT32_MAX, 64, 1, 1});
  CHECK(peak_rss_bytes() - before < (int64_t{64} << 20));  // a counting sort over 0..2^31 took 16 GiB
  // One micro-batch of all seven: sorted by length, ties in corpus order.
  CHECK(s.sample_order == std::vector<int32_t>{5, 1, 3, 6, 4, 0, 2});
}

TEST_CASE("the length sort is stable on both 16-bit digits", "[planner][bounds]") {
  Rng rng(3);
  Corpus c;
  for (int i = 0; i < 5000; ++i) c.lengths.push_back(1 + static_cast<int32_t>(rng.below(i % 2 ? 300000 : 70)));
  const Schedule s = build_schedule(c, BatchingSpec{Policy::bucket_to_pair, 5000, INT32_MAX, 64, 1, 1});
  std::vector<int32_t> expected(c.lengths.size());
  std::iota(expected.begin(), expected.end(), 0);
  std::stable_sort(expected.begin(), expected.end(), [&](int32_t a, int32_t b) {
    return c.lengths[static_cast<size_t>(a)] < c.lengths[static_cast<size_t>(b)];
  });
  CHECK(s.sample_order == expected);
}

TEST_CASE("corpora beyond kMaxSamples are refused before anything is allocated", "[planner][bounds]") {
  SyntheticSpec spec;
  spec.samples = 1'000'000'000;
  CHECK_THAT(refusal_of([&] { generate_synthetic(spec); }),
             Contains("synthetic corpus: 1000000000 samples. Violated constraint: <= 50000000"));
  const std::vector<HistogramBin> bins{{100, kMaxSamples}, {200, kMaxSamples}, {300, INT64_MAX}};
  CHECK_THAT(refusal_of([&] { expand_histogram(bins, 1); }), Contains("histogram corpus") && Contains("<= 50000000"));
  spec.samples = 1000;
  CHECK(generate_synthetic(spec).size() == 1000);
}

TEST_CASE("memory per sample: a corpus and two sweep threads' schedules stay within kBytesPerSample", "[planner][bounds]") {
  SyntheticSpec spec;
  spec.samples = 200'000;
  spec.roots = 1000;
  const Corpus c = generate_synthetic(spec);
  const auto bytes = [](const auto& v) { return static_cast<int64_t>(v.capacity() * sizeof(v[0])); };
  const int64_t corpus_bytes = bytes(c.lengths) + bytes(c.kept) + bytes(c.roots);
  for (Policy p : {Policy::fixed, Policy::pad_to_longest, Policy::sorted_buckets, Policy::bucket_to_pair, Policy::pack}) {
    CAPTURE(policy_name(p));
    const Schedule s = build_schedule(c, BatchingSpec{p, 1, 131072, 64, 1, 1});  // R = 1: the most batches
    const int64_t schedule_bytes = bytes(s.row_tokens) + bytes(s.batch_row_begin) + bytes(s.batch_width) +
                                   bytes(s.sample_order) + bytes(s.batch_sample_begin) + bytes(s.batch_documents) +
                                   bytes(s.batch_sum_doc_len_sq);
    // Two sweep threads each hold a schedule: kBytesPerSample covers the corpus and both.
    CHECK(corpus_bytes + 2 * schedule_bytes <= kBytesPerSample * spec.samples);
  }
}

TEST_CASE("a sweep beyond kMaxSweepConfigurations is refused before anything is simulated", "[planner][bounds]") {
  SweepSpec spec;
  for (int64_t i = 1; i <= 100; ++i) {
    spec.micro_batches.push_back(i);
    spec.max_lengths.push_back(64 * i);
    spec.bucket_sizes.push_back(i);
  }
  spec.pad_to_multiples = {1, 8};
  // 4 policies x 100 x 100 x 2, plus sorted-buckets x 100 more: 80,000 + 2,000,000.
  CHECK(sweep_size(spec) > kMaxSweepConfigurations);
  spec.policies = {Policy::fixed, Policy::pack};
  CHECK(sweep_size(spec) == 40'000);
  spec.policies = {Policy::sorted_buckets};
  spec.micro_batches.resize(1'000'000, 1);  // 10^6 x 100 x 2 x 100: capped, not overflowed
  CHECK(sweep_size(spec) == kMaxSweepConfigurations + 1);
  Corpus c;
  c.lengths = {100, 200};
  int64_t skipped = 0;
  CHECK_THAT(refusal_of([&] { sweep_configs(c, BatchingSpec{}, RunSpec{}, spec, skipped); }),
             Contains("sweep: more than 1000000 configurations") && Contains("shorten the sweep lists"));
}

TEST_CASE("the hashed duplicate filter keeps exactly what comparing every pair kept", "[planner][bounds]") {
  Rng rng(11);
  std::vector<PlanResult> plans(3000);
  for (auto& p : plans) {
    p.batching.policy = rng.below(2) ? Policy::pack : Policy::sorted_buckets;
    p.batching.micro_batch = 1 + static_cast<int64_t>(rng.below(2));
    p.accumulation = 4;
    p.batching.max_length = 4096;
    p.processed_tokens = 1000 * static_cast<int64_t>(rng.below(3));
    p.distinct_shapes = 1 + static_cast<int64_t>(rng.below(2));
    // Wall clocks on a coarse grid, some nudged by less than the 1e-9 tolerance: many true duplicates.
    p.wall_clock_s = 100.0 + static_cast<double>(rng.below(40)) + (rng.below(2) ? 5e-8 : 0.0);
    p.padding_fraction = 0.001 * static_cast<double>(rng.below(100));
  }
  std::vector<PlanResult> expected = plans;
  std::stable_sort(expected.begin(), expected.end(), [](const PlanResult& a, const PlanResult& b) {
    return ranks_before(a, b, 0);
  });
  expected = keep_first_of_each(expected);
  rank_plans(plans, 0);
  REQUIRE(plans.size() == expected.size());
  CHECK(plans.size() < 3000);
  for (size_t i = 0; i < plans.size(); ++i) {
    CHECK(plans[i].wall_clock_s == expected[i].wall_clock_s);
    CHECK(plans[i].processed_tokens == expected[i].processed_tokens);
    CHECK(plans[i].padding_fraction == expected[i].padding_fraction);
  }
}
