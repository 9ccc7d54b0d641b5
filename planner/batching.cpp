#include "planner/batching.hpp"

#include <algorithm>
#include <stdexcept>

#include "planner/random.hpp"

namespace stepcast::planner {

namespace {

const std::vector<std::string> kPolicyNames = {"fixed", "pad-to-longest", "sorted-buckets", "bucket-to-pair", "pack"};

// A run of consecutive entries of the sample order that forms one micro-batch.
struct Chunk {
  int64_t begin = 0;
  int64_t count = 0;
};

Truncation truncate(const Corpus& corpus, int32_t max_length, std::vector<int32_t>& lengths) {
  Truncation t;
  lengths.resize(corpus.lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int32_t l = corpus.lengths[i];
    if (l > max_length) {
      ++t.samples;
      t.tokens += l - max_length;
      if (corpus.has_kept()) t.kept_tokens += std::min<int64_t>(corpus.kept[i], l - max_length);
      lengths[i] = max_length;
    } else {
      lengths[i] = l;
    }
  }
  return t;
}

std::vector<int32_t> identity_order(int64_t n) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return order;
}

// Stable sort by length in O(n) time and memory whatever the longest sample: a radix sort on 16-bit
// digits, one counting pass when every length is below 65,536 and two otherwise (512 KiB of counts). A
// counting sort over 0..longest cost 8 bytes per token of the longest sample: 16 GiB for one 2^31-token
// sample (docs/planner.md "Bounded resources").
std::vector<int32_t> sorted_order(const std::vector<int32_t>& lengths) {
  constexpr int kDigitBits = 16;
  constexpr uint32_t kDigitMask = (1u << kDigitBits) - 1;
  uint32_t longest = 0;
  for (int32_t l : lengths) longest = std::max(longest, static_cast<uint32_t>(l));
  std::vector<int32_t> order = identity_order(static_cast<int64_t>(lengths.size()));
  std::vector<int32_t> next(lengths.size());
  std::vector<int64_t> start(size_t{kDigitMask} + 2);
  for (int shift = 0; shift < 32 && (shift == 0 || (longest >> shift) != 0); shift += kDigitBits) {
    const auto digit = [&](int32_t id) {
      return (static_cast<uint32_t>(lengths[static_cast<size_t>(id)]) >> shift) & kDigitMask;
    };
    std::fill(start.begin(), start.end(), 0);
    for (int32_t id : order) ++start[digit(id) + 1];
    for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    for (int32_t id : order) next[static_cast<size_t>(start[digit(id)]++)] = id;
    order.swap(next);
  }
  return order;
}

void cut(int64_t begin, int64_t end, int64_t rows, std::vector<Chunk>& chunks) {
  for (int64_t b = begin; b < end; b += rows) chunks.push_back({b, std::min(rows, end - b)});
}

void emit(const std::vector<int32_t>& order, const std::vector<Chunk>& chunks, const std::vector<int32_t>& lengths,
          bool pad_to_max_length, int32_t max_length, int64_t multiple, Schedule& s) {
  s.row_tokens.reserve(order.size());
  s.sample_order.reserve(order.size());
  s.batch_width.reserve(chunks.size());
  s.batch_row_begin.reserve(chunks.size() + 1);
  for (const Chunk& c : chunks) {
    s.batch_row_begin.push_back(static_cast<int64_t>(s.row_tokens.size()));
    int32_t width = 0;
    for (int64_t i = c.begin; i < c.begin + c.count; ++i) {
      const int32_t id = order[static_cast<size_t>(i)];
      const int32_t l = lengths[static_cast<size_t>(id)];
      s.row_tokens.push_back(l);
      s.sample_order.push_back(id);
      width = std::max(width, l);
    }
    if (pad_to_max_length) width = max_length;
    if (multiple > 1) width = static_cast<int32_t>(round_up_width(width, multiple));
    s.batch_width.push_back(width);
    s.processed_tokens += c.count * static_cast<int64_t>(width);
  }
  s.batch_row_begin.push_back(static_cast<int64_t>(s.row_tokens.size()));
  s.batch_sample_begin = s.batch_row_begin;
}

void build_padded(const BatchingSpec& spec, const std::vector<int32_t>& lengths, Schedule& s) {
  const auto n = static_cast<int64_t>(lengths.size());
  const auto max_length = static_cast<int32_t>(spec.max_length);
  const bool sorted = spec.policy == Policy::sorted_buckets || spec.policy == Policy::bucket_to_pair;
  std::vector<int32_t> order = sorted ? sorted_order(lengths) : identity_order(n);
  std::vector<Chunk> chunks;
  chunks.reserve(static_cast<size_t>(n / spec.micro_batch + 1));
  Rng rng(spec.seed);
  if (spec.policy == Policy::sorted_buckets) {
    const int64_t bucket = std::max(spec.bucket_size, spec.micro_batch);  // a bucket holds at least R samples
    for (int64_t b = 0; b < n; b += bucket) {
      const int64_t e = std::min(n, b + bucket);
      shuffle(order.begin() + b, order.begin() + e, rng);
      cut(b, e, spec.micro_batch, chunks);
    }
  } else {
    cut(0, n, spec.micro_batch, chunks);
  }
  if (sorted) shuffle(chunks.begin(), chunks.end(), rng);
  emit(order, chunks, lengths, spec.policy == Policy::fixed, max_length, spec.pad_to_multiple_of, s);
}

// Next-fit packing in corpus order into rows of max_length tokens, then R rows per micro-batch.
void build_packed(const BatchingSpec& spec, const std::vector<int32_t>& lengths, Schedule& s) {
  s.packed = true;
  const auto max_length = static_cast<int32_t>(spec.max_length);
  const auto width = static_cast<int32_t>(round_up_width(spec.max_length, spec.pad_to_multiple_of));
  std::vector<int64_t> row_doc_begin;  // rows own samples [row_doc_begin[r], row_doc_begin[r+1])
  int64_t fill = int64_t{max_length} + 1;  // forces a new row for the first sample
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (fill + lengths[i] > max_length) {
      row_doc_begin.push_back(static_cast<int64_t>(i));
      s.row_tokens.push_back(0);
      fill = 0;
    }
    fill += lengths[i];
    s.row_tokens.back() += lengths[i];
  }
  row_doc_begin.push_back(static_cast<int64_t>(lengths.size()));
  s.sample_order = identity_order(static_cast<int64_t>(lengths.size()));
  const auto rows = static_cast<int64_t>(s.row_tokens.size());
  for (int64_t r = 0; r < rows; r += spec.micro_batch) {
    const int64_t e = std::min(rows, r + spec.micro_batch);
    s.batch_row_begin.push_back(r);
    s.batch_sample_begin.push_back(row_doc_begin[static_cast<size_t>(r)]);
    s.batch_width.push_back(width);
    s.processed_tokens += (e - r) * static_cast<int64_t>(width);
    const int64_t d0 = row_doc_begin[static_cast<size_t>(r)], d1 = row_doc_begin[static_cast<size_t>(e)];
    double sum_sq = 0;
    for (int64_t d = d0; d < d1; ++d) sum_sq += static_cast<double>(lengths[static_cast<size_t>(d)]) * lengths[static_cast<size_t>(d)];
    s.batch_documents.push_back(static_cast<int32_t>(d1 - d0));
    s.batch_sum_doc_len_sq.push_back(sum_sq);
  }
  s.batch_row_begin.push_back(rows);
  s.batch_sample_begin.push_back(static_cast<int64_t>(lengths.size()));
}

}  // namespace

std::string policy_name(Policy policy) { return kPolicyNames[static_cast<size_t>(policy)]; }

const std::vector<std::string>& policy_names() { return kPolicyNames; }

std::optional<Policy> parse_policy(std::string_view name) {
  for (size_t i = 0; i < kPolicyNames.size(); ++i)
    if (kPolicyNames[i] == name) return static_cast<Policy>(i);
  return std::nullopt;
}

double Schedule::padding_fraction() const {
  if (processed_tokens == 0) return 0.0;
  return static_cast<double>(processed_tokens - real_tokens) / static_cast<double>(processed_tokens);
}

void Schedule::fill(int64_t b, model::MicroBatch& out) const {
  const auto i = static_cast<size_t>(b);
  out.rows.assign(row_tokens.begin() + batch_row_begin[i], row_tokens.begin() + batch_row_begin[i + 1]);
  out.width = batch_width[i];
  out.packed = packed;
  out.documents = packed ? batch_documents[i] : out.num_rows();
  out.sum_doc_len_sq = packed ? batch_sum_doc_len_sq[i] : 0.0;
  if (!packed)
    for (int64_t r : out.rows) out.sum_doc_len_sq += static_cast<double>(r) * static_cast<double>(r);
}

std::vector<std::string> batching_problems(const BatchingSpec& spec, Naming naming, const std::string& prefix) {
  const auto name = [&](std::string key) {
    if (naming == Naming::keys) return prefix + key;
    std::replace(key.begin(), key.end(), '_', '-');
    return "--" + key;
  };
  std::vector<std::string> out;
  const auto at_least_one = [&](const char* key, int64_t v) {
    if (v < 1) out.push_back(name(key) + " = " + std::to_string(v) + ". Violated constraint: >= 1");
  };
  at_least_one("micro_batch", spec.micro_batch);
  at_least_one("max_length", spec.max_length);
  at_least_one("bucket_size", spec.bucket_size);
  at_least_one("pad_to_multiple_of", spec.pad_to_multiple_of);
  if (spec.max_length > INT32_MAX)
    out.push_back(name("max_length") + " = " + std::to_string(spec.max_length) + ". Violated constraint: <= 2147483647");
  if (spec.pad_to_multiple_of > kMaxPadToMultipleOf)
    out.push_back(name("pad_to_multiple_of") + " = " + std::to_string(spec.pad_to_multiple_of) +
                  ". Violated constraint: <= " + std::to_string(kMaxPadToMultipleOf));
  else if (out.empty() && round_up_width(spec.max_length, spec.pad_to_multiple_of) > INT32_MAX)
    out.push_back(name("max_length") + " = " + std::to_string(spec.max_length) + " rounded up to a multiple of " +
                  std::to_string(spec.pad_to_multiple_of) + ". Violated constraint: <= 2147483647");
  return out;
}

Schedule build_schedule(const Corpus& corpus, const BatchingSpec& spec) {
  if (const auto problems = batching_problems(spec); !problems.empty())
    throw std::invalid_argument("build_schedule: " + problems.front());
  Schedule s;
  std::vector<int32_t> lengths;
  s.truncated = truncate(corpus, static_cast<int32_t>(spec.max_length), lengths);
  s.samples = corpus.size();
  for (int32_t l : lengths) s.real_tokens += l;
  if (corpus.has_kept()) {
    for (int32_t k : corpus.kept) s.kept_tokens += k;
    s.kept_tokens -= s.truncated.kept_tokens;
  }
  if (spec.policy == Policy::pack) {
    build_packed(spec, lengths, s);
  } else {
    build_padded(spec, lengths, s);
  }
  return s;
}

}  // namespace stepcast::planner
