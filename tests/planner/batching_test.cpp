// Each batching policy's padding and truncation against small cases computed by hand.
#include <algorithm>
#include <numeric>

#include "catch.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"
#include "planner/random.hpp"

using namespace stepcast::planner;

namespace {

Corpus corpus_of(std::vector<int32_t> lengths) {
  Corpus c;
  c.lengths = std::move(lengths);
  return c;
}

// Widths of the schedule's micro-batches together with their row counts, sorted (shuffles change order only).
std::vector<std::pair<int64_t, int32_t>> shapes(const Schedule& s) {
  std::vector<std::pair<int64_t, int32_t>> out;
  for (int64_t b = 0; b < s.num_batches(); ++b)
    out.emplace_back(s.batch_row_begin[static_cast<size_t>(b) + 1] - s.batch_row_begin[static_cast<size_t>(b)],
                     s.batch_width[static_cast<size_t>(b)]);
  std::sort(out.begin(), out.end());
  return out;
}

// Every sample runs exactly once.
bool each_sample_once(const Schedule& s) {
  std::vector<int32_t> ids = s.sample_order;
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] != static_cast<int32_t>(i)) return false;
  return static_cast<int64_t>(ids.size()) == s.samples;
}

BatchingSpec spec(Policy p, int64_t rows, int64_t max_length, int64_t bucket = 64) {
  return BatchingSpec{p, rows, max_length, bucket, 7, 1};
}

}  // namespace

// lengths 5 3 8 2 7 at max_length 6: 8 -> 6 and 7 -> 6, so 2 samples and 2 + 1 = 3 tokens are lost,
// and the truncated corpus is 5 3 6 2 6 = 22 real tokens.
TEST_CASE("truncation at max_length is reported the same under every policy", "[planner][batching]") {
  const Corpus c = corpus_of({5, 3, 8, 2, 7});
  for (const auto& name : policy_names()) {
    const auto s = build_schedule(c, spec(*parse_policy(name), 2, 6));
    INFO(name);
    CHECK(s.truncated.samples == 2);
    CHECK(s.truncated.tokens == 3);
    CHECK(s.real_tokens == 22);
    CHECK(each_sample_once(s));
  }
}

TEST_CASE("fixed pads every micro-batch to max_length", "[planner][batching]") {
  const auto s = build_schedule(corpus_of({5, 3, 8, 2, 7}), spec(Policy::fixed, 2, 6));
  // [5 3] [6 2] [6]: 2*6 + 2*6 + 1*6 = 30 processed, 30 - 22 = 8 padding.
  CHECK(s.num_batches() == 3);
  CHECK(s.processed_tokens == 30);
  CHECK(s.padding_tokens() == 8);
  CHECK(s.padding_fraction() == Approx(8.0 / 30.0));
}

TEST_CASE("pad-to-longest pads each micro-batch to its longest row, in corpus order", "[planner][batching]") {
  const auto s = build_schedule(corpus_of({5, 3, 8, 2, 7}), spec(Policy::pad_to_longest, 2, 6));
  // [5 3] -> 5, [6 2] -> 6, [6] -> 6: 10 + 12 + 6 = 28 processed, 6 padding.
  CHECK(s.batch_width == std::vector<int32_t>{5, 6, 6});
  CHECK(s.row_tokens == std::vector<int32_t>{5, 3, 6, 2, 6});
  CHECK(s.processed_tokens == 28);
  CHECK(s.padding_tokens() == 6);
}

TEST_CASE("bucket-to-pair pairs neighbours in length order, then shuffles the pairs", "[planner][batching]") {
  const auto s = build_schedule(corpus_of({5, 3, 8, 2, 7}), spec(Policy::bucket_to_pair, 2, 6));
  // sorted 2 3 5 6 6: [2 3] -> 3, [5 6] -> 6, [6] -> 6: 6 + 12 + 6 = 24 processed, 2 padding.
  CHECK(shapes(s) == std::vector<std::pair<int64_t, int32_t>>{{1, 6}, {2, 3}, {2, 6}});
  CHECK(s.processed_tokens == 24);
  CHECK(s.padding_tokens() == 2);
}

TEST_CASE("sorted-buckets forms micro-batches inside buckets of k sorted samples", "[planner][batching]") {
  // Buckets of 4 in sorted order hold {2,2,2,2} and {9,9,9,9}: whatever the shuffle, no padding.
  const Corpus c = corpus_of({9, 2, 9, 2, 2, 9, 2, 9});
  const auto tight = build_schedule(c, spec(Policy::sorted_buckets, 2, 10, 4));
  CHECK(tight.padding_tokens() == 0);
  CHECK(each_sample_once(tight));
  // Buckets of 3: {2,2,2} {2,9,9} {9,9}; micro-batches of 2 inside: the middle bucket pairs 2 with 9
  // or 9 with 9 (then 2 alone): padding 7 tokens or 0, and 4 or 5 micro-batches.
  const auto ragged = build_schedule(c, spec(Policy::sorted_buckets, 2, 10, 3));
  CHECK(ragged.num_batches() == 5);  // 2 + 2 + 1
  CHECK((ragged.padding_tokens() == 7 || ragged.padding_tokens() == 0));
  // k < R counts as k = R: the same micro-batches as bucket-to-pair.
  const auto small = build_schedule(c, spec(Policy::sorted_buckets, 2, 10, 1));
  const auto pair = build_schedule(c, spec(Policy::bucket_to_pair, 2, 10));
  CHECK(shapes(small) == shapes(pair));
}

TEST_CASE("sorted-buckets pads more as the bucket grows past the micro-batch", "[planner][batching]") {
  SyntheticSpec syn;
  syn.samples = 20000;
  syn.components = {{1.0, 2000.0, 0.8}};
  const Corpus c = generate_synthetic(syn);
  const double k2 = build_schedule(c, spec(Policy::sorted_buckets, 2, 16384, 2)).padding_fraction();
  const double k256 = build_schedule(c, spec(Policy::sorted_buckets, 2, 16384, 256)).padding_fraction();
  const double k20000 = build_schedule(c, spec(Policy::sorted_buckets, 2, 16384, 20000)).padding_fraction();
  CHECK(k2 < 0.001);
  CHECK(k2 < k256);
  CHECK(k256 < k20000);
}

TEST_CASE("pack fills rows of max_length next-fit and counts documents", "[planner][batching]") {
  const auto s = build_schedule(corpus_of({5, 3, 8, 2, 7}), spec(Policy::pack, 2, 8));
  // Rows: [5 3] = 8, [8], [2] (2 + 7 > 8), [7]; micro-batches [8 8] and [2 7], both 8 wide.
  CHECK(s.packed);
  CHECK(s.row_tokens == std::vector<int32_t>{8, 8, 2, 7});
  CHECK(s.batch_width == std::vector<int32_t>{8, 8});
  CHECK(s.processed_tokens == 32);
  CHECK(s.padding_tokens() == 7);
  CHECK(s.batch_documents == std::vector<int32_t>{3, 2});
  CHECK(s.batch_sum_doc_len_sq == std::vector<double>{25 + 9 + 64, 4 + 49});
  stepcast::model::MicroBatch mb;
  s.fill(0, mb);
  CHECK(mb.packed);
  CHECK(mb.documents == 3);
  CHECK(mb.rows == std::vector<int64_t>{8, 8});
}

TEST_CASE("pack truncates a sample longer than a row instead of splitting it", "[planner][batching]") {
  const auto s = build_schedule(corpus_of({3, 20, 4}), spec(Policy::pack, 1, 8));
  // 20 -> 8 (12 lost): rows [3], [8], [4].
  CHECK(s.truncated.samples == 1);
  CHECK(s.truncated.tokens == 12);
  CHECK(s.row_tokens == std::vector<int32_t>{3, 8, 4});
}

TEST_CASE("kept (loss) tokens are the last tokens of a sample, so truncation loses them first", "[planner][batching]") {
  Corpus c = corpus_of({10, 10, 4});
  c.kept = {3, 8, 4};
  const auto s = build_schedule(c, spec(Policy::pad_to_longest, 1, 6));
  // sample 0 loses 4 tokens, 3 of them kept; sample 1 loses 4 tokens, all kept.
  CHECK(s.truncated.kept_tokens == 3 + 4);
  CHECK(s.kept_tokens == 15 - 7);
}

TEST_CASE("pad-to-longest padding equals an independent count on a random corpus", "[planner][batching]") {
  auto rows = GENERATE(1, 2, 3, 7, 64);
  SyntheticSpec syn;
  syn.samples = 10007;
  syn.seed = 99;
  syn.components = {{0.7, 900.0, 1.1}, {0.3, 6000.0, 0.5}};
  const Corpus c = generate_synthetic(syn);
  const int64_t max_length = 8192;
  int64_t real = 0, processed = 0;
  for (int64_t b = 0; b < c.size(); b += rows) {
    int64_t longest = 0;
    for (int64_t i = b; i < std::min<int64_t>(c.size(), b + rows); ++i) {
      const int64_t l = std::min<int64_t>(c.lengths[static_cast<size_t>(i)], max_length);
      real += l;
      longest = std::max(longest, l);
    }
    processed += longest * std::min<int64_t>(rows, c.size() - b);
  }
  const auto s = build_schedule(c, spec(Policy::pad_to_longest, rows, max_length));
  CHECK(s.real_tokens == real);
  CHECK(s.processed_tokens == processed);
  CHECK(s.padding_fraction() == static_cast<double>(processed - real) / static_cast<double>(processed));
}

TEST_CASE("policy names round-trip", "[planner][batching]") {
  for (const auto& name : policy_names()) CHECK(policy_name(*parse_policy(name)) == name);
  CHECK_FALSE(parse_policy("pad_to_longest").has_value());
}

TEST_CASE("the synthetic generator is seeded and honours its bounds", "[planner][corpus]") {
  SyntheticSpec syn;
  syn.samples = 5000;
  syn.min_length = 16;
  syn.max_length = 4096;
  syn.roots = 50;
  const Corpus a = generate_synthetic(syn), b = generate_synthetic(syn);
  CHECK(a.lengths == b.lengths);
  CHECK(a.roots == b.roots);
  CHECK(*std::min_element(a.lengths.begin(), a.lengths.end()) >= 16);
  CHECK(a.max_length() <= 4096);
  CHECK(a.num_roots == 50);
  syn.seed = 2;
  CHECK(generate_synthetic(syn).lengths != a.lengths);
  // median of ln-normal(ln 1024, 1): about 1024
  std::vector<int32_t> sorted = a.lengths;
  std::nth_element(sorted.begin(), sorted.begin() + 2500, sorted.end());
  CHECK(sorted[2500] == Approx(1024).epsilon(0.1));
}

TEST_CASE("a histogram expands to exactly its counts", "[planner][corpus]") {
  const Corpus c = expand_histogram({{100, 3}, {7, 2}}, 1);
  CHECK(c.size() == 5);
  CHECK(c.total_tokens() == 314);
}
