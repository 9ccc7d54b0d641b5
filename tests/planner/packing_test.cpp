// Packing policies (padding-free, pack with next-fit / ffd / multipack) against cases counted by hand, and
// their invariants on a random corpus.
#include <algorithm>
#include <numeric>

#include "catch.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"
#include "planner/random.hpp"

using namespace stepcast::planner;
using stepcast::model::DocumentAttention;

namespace {

Corpus corpus_of(std::vector<int32_t> lengths) {
  Corpus c;
  c.lengths = std::move(lengths);
  return c;
}

BatchingSpec packing(Policy policy, Packer packer, int64_t rows, int64_t max_length) {
  BatchingSpec s{policy, rows, max_length, 64, 7, 1};
  s.packer = packer;
  return s;
}

// Document lengths of each row, row by row (rows are recovered from row_tokens: a row's documents add up to it).
std::vector<std::vector<int32_t>> rows_of(const Schedule& s) {
  std::vector<std::vector<int32_t>> rows;
  size_t d = 0;
  for (int32_t tokens : s.row_tokens) {
    rows.emplace_back();
    for (int64_t sum = 0; sum < tokens; ++d) {
      rows.back().push_back(s.document_tokens[d]);
      sum += s.document_tokens[d];
    }
  }
  return rows;
}

Corpus random_corpus(int n, uint64_t seed) {
  Rng rng(seed);
  Corpus c;
  for (int i = 0; i < n; ++i) c.lengths.push_back(static_cast<int32_t>(1 + rng.below(3000)));
  return c;
}

}  // namespace

TEST_CASE("padding-free concatenates R samples into one row per micro-batch", "[planner][packing]") {
  auto s = build_schedule(corpus_of({5, 3, 8, 2, 7}), packing(Policy::padding_free, Packer::next_fit, 2, 6));
  // Truncated to 6: 5 3 | 6 2 | 6 -> rows of 8, 8, 6 tokens, each as wide as it is.
  CHECK(s.packed);
  CHECK(s.row_tokens == std::vector<int32_t>{8, 8, 6});
  CHECK(s.batch_width == std::vector<int32_t>{8, 8, 6});
  CHECK(s.padding_tokens() == 0);
  CHECK(s.batch_documents == std::vector<int32_t>{2, 2, 1});
  CHECK(s.batch_sum_doc_len_sq == std::vector<double>{25 + 9, 36 + 4, 36});
  CHECK(s.document_tokens == std::vector<int32_t>{5, 3, 6, 2, 6});
  stepcast::model::MicroBatch mb;
  s.fill(1, mb);
  CHECK(mb.rows == std::vector<int64_t>{8});
  CHECK(mb.width == 8);
  CHECK(std::vector<int32_t>(mb.document_lengths.begin(), mb.document_lengths.end()) == std::vector<int32_t>{6, 2});
  CHECK(mb.attention == DocumentAttention::block_mask);
  // A pad multiple rounds each row up: 8 -> 8, 6 -> 8.
  BatchingSpec m = packing(Policy::padding_free, Packer::next_fit, 2, 6);
  m.pad_to_multiple_of = 4;
  CHECK(build_schedule(corpus_of({5, 3, 8, 2, 7}), m).batch_width == std::vector<int32_t>{8, 8, 8});
}

TEST_CASE("ffd packs longest first into the first row with room", "[planner][packing]") {
  // Sorted: 7 6 5 4 3 2 1 into rows of 10: [7 3], [6 4], [5 2 1] -> 3 rows; next-fit needs 4.
  const Corpus c = corpus_of({3, 7, 1, 6, 4, 2, 5});
  const auto ffd = build_schedule(c, packing(Policy::pack, Packer::ffd, 1, 10));
  auto rows = rows_of(ffd);
  std::sort(rows.begin(), rows.end());
  CHECK(rows == std::vector<std::vector<int32_t>>{{5, 2, 1}, {6, 4}, {7, 3}});
  CHECK(build_schedule(c, packing(Policy::pack, Packer::next_fit, 1, 10)).row_tokens.size() == 4);
}

TEST_CASE("multipack balances the rows of one optimizer step", "[planner][packing]") {
  // R = 2, accumulation 2: 4 rows of 10 per step (capacity 40). Step 1 takes 9 8 7 6 5 4 (39 tokens),
  // longest first into the least-filled row with room: [9] [8] [7] [6]; 5 fits no row (6 + 5 > 10) and waits
  // for step 2; 4 joins [6]. Step 2: [5].
  const Corpus c = corpus_of({9, 8, 7, 6, 5, 4});
  const auto s = build_schedule(c, packing(Policy::pack, Packer::multipack, 2, 10), 2);
  auto rows = rows_of(s);
  CHECK(rows == std::vector<std::vector<int32_t>>{{9}, {8}, {7}, {6, 4}, {5}});
  // Balanced: on a random corpus, the spread of real tokens between the rows of a step is smaller than
  // next-fit's, and every sample runs once.
  const Corpus r = random_corpus(4000, 3);
  const auto multi = build_schedule(r, packing(Policy::pack, Packer::multipack, 2, 8192), 4);
  const auto next = build_schedule(r, packing(Policy::pack, Packer::next_fit, 2, 8192), 4);
  const auto spread = [](const Schedule& sch) {
    double total = 0;
    const size_t step_rows = 8;
    size_t steps = 0;
    for (size_t b = 0; b + step_rows <= sch.row_tokens.size(); b += step_rows, ++steps) {
      const auto [lo, hi] = std::minmax_element(sch.row_tokens.begin() + static_cast<long>(b),
                                                sch.row_tokens.begin() + static_cast<long>(b + step_rows));
      total += *hi - *lo;
    }
    return total / static_cast<double>(steps);
  };
  CHECK(spread(multi) < 0.5 * spread(next));
  std::vector<int32_t> ids = multi.sample_order;
  std::sort(ids.begin(), ids.end());
  std::vector<int32_t> expect(ids.size());
  std::iota(expect.begin(), expect.end(), 0);
  CHECK(ids == expect);
}

TEST_CASE("every packer keeps each sample once, rows within max_length, and its documents' lengths",
          "[planner][packing]") {
  const Corpus c = random_corpus(3000, 11);
  const auto policy = GENERATE(Policy::pack, Policy::padding_free);
  const auto packer = GENERATE(Packer::next_fit, Packer::ffd, Packer::multipack);
  const auto s = build_schedule(c, packing(policy, packer, 2, 4096), 3);
  INFO(policy_name(policy) << " " << packer_name(packer));
  std::vector<int32_t> ids = s.sample_order;
  std::sort(ids.begin(), ids.end());
  std::vector<int32_t> expect(c.lengths.size());
  std::iota(expect.begin(), expect.end(), 0);
  CHECK(ids == expect);
  int64_t real = 0;
  for (size_t i = 0; i < s.sample_order.size(); ++i) {
    CHECK(s.document_tokens[i] == std::min<int32_t>(c.lengths[static_cast<size_t>(s.sample_order[i])], 4096));
    real += s.document_tokens[i];
  }
  CHECK(real == s.real_tokens);
  stepcast::model::MicroBatch mb;
  double sum_sq = 0;
  for (int64_t b = 0; b < s.num_batches(); ++b) {
    s.fill(b, mb);
    CHECK(mb.real_tokens() <= mb.padded_tokens());
    if (policy == Policy::pack) CHECK(mb.width == 4096);
    int64_t docs = 0;
    for (int32_t l : mb.document_lengths) docs += l;
    CHECK(docs == mb.real_tokens());
    CHECK(static_cast<int64_t>(mb.document_lengths.size()) == mb.documents);
    sum_sq += mb.sum_doc_len_sq;
  }
  double direct = 0;
  for (int32_t l : s.document_tokens) direct += static_cast<double>(l) * l;
  CHECK(sum_sq == direct);
}

TEST_CASE("packer and attention names round-trip and reject others", "[planner][packing]") {
  for (const auto& n : packer_names()) CHECK(packer_name(*parse_packer(n)) == n);
  for (const auto& n : pack_attention_names()) CHECK(pack_attention_name(*parse_pack_attention(n)) == n);
  CHECK(policy_name(*parse_policy("padding-free")) == "padding-free");
  CHECK_FALSE(parse_packer("best-fit"));
  CHECK_FALSE(parse_pack_attention("flex"));
}

TEST_CASE("a padding-free row wider than 32 bits is refused, not overflowed", "[planner][packing]") {
  BatchingSpec s = packing(Policy::padding_free, Packer::next_fit, 4, 1'000'000'000);
  const auto problems = batching_problems(s);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("micro_batch x max_length = 4 x 1000000000") != std::string::npos);
  CHECK_THROWS_AS(build_schedule(corpus_of({5}), s), std::invalid_argument);
  s.micro_batch = 2;
  CHECK(batching_problems(s).empty());
}
