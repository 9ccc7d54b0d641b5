#include "planner/batching.hpp"

#include <algorithm>
#include <stdexcept>

#include "planner/random.hpp"

namespace stepcast::planner {

namespace {

const std::vector<std::string> kPolicyNames = {"fixed",          "pad-to-longest", "sorted-buckets",
                                               "bucket-to-pair", "pack",           "padding-free"};
const std::vector<std::string> kPackerNames = {"next-fit", "ffd", "multipack"};
const std::vector<std::string> kPackAttentionNames = {"varlen", "block-mask", "cross"};  // DocumentAttention order

template <typename E>
std::optional<E> parse_name(const std::vector<std::string>& names, std::string_view name) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

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

// Rows of documents: row r holds the samples ids[row_begin[r] .. row_begin[r+1]).
struct PackedRows {
  std::vector<int32_t> ids;
  std::vector<int64_t> row_begin{0};
  void close_row() { row_begin.push_back(static_cast<int64_t>(ids.size())); }
  int64_t rows() const { return static_cast<int64_t>(row_begin.size()) - 1; }
};

PackedRows next_fit(const std::vector<int32_t>& lengths, int32_t max_length) {
  PackedRows p;
  p.ids.reserve(lengths.size());
  int64_t fill = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (!p.ids.empty() && fill + lengths[i] > max_length) {
      p.close_row();
      fill = 0;
    }
    p.ids.push_back(static_cast<int32_t>(i));
    fill += lengths[i];
  }
  if (!p.ids.empty()) p.close_row();
  return p;
}

// First-fit-decreasing in O(n log n): a max-tree over the rows' free tokens finds the first row with room
// (rows not opened yet have max_length free, so the first fit is an open row or the next new one). The
// rows come out grouped by length, so they are then shuffled (seeded) as bucket-to-pair shuffles.
PackedRows first_fit_decreasing(const std::vector<int32_t>& lengths, int32_t max_length, uint64_t seed) {
  std::vector<int32_t> order = sorted_order(lengths);
  std::reverse(order.begin(), order.end());
  size_t leaves = 1;
  while (leaves < std::max<size_t>(1, lengths.size())) leaves *= 2;
  std::vector<int32_t> free_tokens(2 * leaves, max_length);
  std::vector<int32_t> row_of(order.size());
  int32_t rows = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const int32_t l = lengths[static_cast<size_t>(order[k])];
    size_t node = 1;
    while (node < leaves) node = free_tokens[2 * node] >= l ? 2 * node : 2 * node + 1;
    row_of[k] = static_cast<int32_t>(node - leaves);
    rows = std::max(rows, row_of[k] + 1);
    free_tokens[node] -= l;
    for (node /= 2; node >= 1; node /= 2) free_tokens[node] = std::max(free_tokens[2 * node], free_tokens[2 * node + 1]);
  }
  std::vector<int32_t> position = identity_order(rows);  // row -> its place in the run
  Rng rng(seed);
  shuffle(position.begin(), position.end(), rng);
  PackedRows p;
  p.row_begin.assign(static_cast<size_t>(rows) + 1, 0);
  for (int32_t r : row_of) ++p.row_begin[static_cast<size_t>(position[static_cast<size_t>(r)]) + 1];
  for (size_t i = 1; i < p.row_begin.size(); ++i) p.row_begin[i] += p.row_begin[i - 1];
  std::vector<int64_t> next(p.row_begin.begin(), p.row_begin.end() - 1);
  p.ids.resize(order.size());
  for (size_t k = 0; k < order.size(); ++k)
    p.ids[static_cast<size_t>(next[static_cast<size_t>(position[static_cast<size_t>(row_of[k])])]++)] = order[k];
  return p;
}

// Multipack: one optimizer step's rows at a time, balanced. The step takes the samples that waited plus
// the next ones in corpus order up to its capacity (rows * max_length tokens), places them longest first
// into the least-filled row with room, and leaves what does not fit for the next step. The first `rows`
// samples always fit (each <= max_length into an empty row), so every step places at least one.
PackedRows multipack(const std::vector<int32_t>& lengths, int32_t max_length, int64_t step_rows) {
  PackedRows p;
  const auto rows = static_cast<size_t>(step_rows);
  std::vector<int32_t> waiting, candidates;
  std::vector<std::vector<int32_t>> bins(rows);
  std::vector<int64_t> fill(rows);
  size_t next = 0;
  while (next < lengths.size() || !waiting.empty()) {
    candidates.swap(waiting);
    waiting.clear();
    int64_t tokens = 0;
    for (int32_t id : candidates) tokens += lengths[static_cast<size_t>(id)];
    const int64_t capacity = step_rows * int64_t{max_length};
    while (next < lengths.size() && tokens + lengths[next] <= capacity) {
      tokens += lengths[next];
      candidates.push_back(static_cast<int32_t>(next++));
    }
    if (candidates.empty()) candidates.push_back(static_cast<int32_t>(next++));
    std::stable_sort(candidates.begin(), candidates.end(), [&](int32_t a, int32_t b) {
      return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
    });
    for (auto& b : bins) b.clear();
    std::fill(fill.begin(), fill.end(), 0);
    for (int32_t id : candidates) {
      const int32_t l = lengths[static_cast<size_t>(id)];
      size_t best = rows;
      for (size_t r = 0; r < rows; ++r)
        if (fill[r] + l <= max_length && (best == rows || fill[r] < fill[best])) best = r;
      if (best == rows) {
        waiting.push_back(id);
        continue;
      }
      bins[best].push_back(id);
      fill[best] += l;
    }
    for (const auto& b : bins) {
      if (b.empty()) continue;
      p.ids.insert(p.ids.end(), b.begin(), b.end());
      p.close_row();
    }
  }
  return p;
}

// padding-free: R consecutive samples per row, one row per micro-batch.
PackedRows concatenated(const std::vector<int32_t>& lengths, int64_t samples_per_row) {
  PackedRows p;
  const auto n = static_cast<int64_t>(lengths.size());
  p.ids = identity_order(n);
  for (int64_t b = samples_per_row; b < n; b += samples_per_row) p.row_begin.push_back(b);
  if (n > 0) p.close_row();
  return p;
}

PackedRows pack_rows(const BatchingSpec& spec, const std::vector<int32_t>& lengths, int64_t accumulation) {
  const auto max_length = static_cast<int32_t>(spec.max_length);
  if (spec.policy == Policy::padding_free) return concatenated(lengths, spec.micro_batch);
  switch (spec.packer) {
    case Packer::ffd: return first_fit_decreasing(lengths, max_length, spec.seed);
    case Packer::multipack: return multipack(lengths, max_length, spec.micro_batch * std::max<int64_t>(1, accumulation));
    case Packer::next_fit: break;
  }
  return next_fit(lengths, max_length);
}

// Packed rows into micro-batches: `pack` puts R rows of max_length (rounded up) in each; padding-free
// has one row per micro-batch, as wide as its samples (rounded up). One pass over the documents.
void build_packed(const BatchingSpec& spec, const std::vector<int32_t>& lengths, int64_t accumulation, Schedule& s) {
  s.packed = true;
  s.attention = spec.pack_attention;
  PackedRows p = pack_rows(spec, lengths, accumulation);
  const bool padding_free = spec.policy == Policy::padding_free;
  const int64_t rows_per_batch = padding_free ? 1 : spec.micro_batch;
  const int64_t rows = p.rows();
  s.document_tokens.resize(p.ids.size());
  s.row_tokens.resize(static_cast<size_t>(rows));
  const auto pack_width = static_cast<int32_t>(round_up_width(spec.max_length, spec.pad_to_multiple_of));
  for (int64_t r0 = 0; r0 < rows; r0 += rows_per_batch) {
    const int64_t e = std::min(rows, r0 + rows_per_batch);
    double sum_sq = 0;
    for (int64_t r = r0; r < e; ++r) {
      int32_t tokens = 0;
      for (int64_t d = p.row_begin[static_cast<size_t>(r)]; d < p.row_begin[static_cast<size_t>(r) + 1]; ++d) {
        const int32_t l = lengths[static_cast<size_t>(p.ids[static_cast<size_t>(d)])];
        s.document_tokens[static_cast<size_t>(d)] = l;
        tokens += l;  // <= max_length, or R * max_length for padding-free: both fit 32 bits (batching_problems)
        sum_sq += static_cast<double>(l) * l;
      }
      s.row_tokens[static_cast<size_t>(r)] = tokens;
    }
    const int32_t width =
        padding_free ? static_cast<int32_t>(round_up_width(s.row_tokens[static_cast<size_t>(r0)], spec.pad_to_multiple_of))
                     : pack_width;
    const int64_t d0 = p.row_begin[static_cast<size_t>(r0)], d1 = p.row_begin[static_cast<size_t>(e)];
    s.batch_row_begin.push_back(r0);
    s.batch_sample_begin.push_back(d0);
    s.batch_width.push_back(width);
    s.processed_tokens += (e - r0) * static_cast<int64_t>(width);
    s.batch_documents.push_back(static_cast<int32_t>(d1 - d0));
    s.batch_sum_doc_len_sq.push_back(sum_sq);
  }
  s.batch_row_begin.push_back(rows);
  s.batch_sample_begin.push_back(static_cast<int64_t>(p.ids.size()));
  s.sample_order = std::move(p.ids);
}

}  // namespace

std::string policy_name(Policy policy) { return kPolicyNames[static_cast<size_t>(policy)]; }

const std::vector<std::string>& policy_names() { return kPolicyNames; }

std::optional<Policy> parse_policy(std::string_view name) { return parse_name<Policy>(kPolicyNames, name); }

std::string packer_name(Packer packer) { return kPackerNames[static_cast<size_t>(packer)]; }
const std::vector<std::string>& packer_names() { return kPackerNames; }
std::optional<Packer> parse_packer(std::string_view name) { return parse_name<Packer>(kPackerNames, name); }

std::string pack_attention_name(model::DocumentAttention attention) {
  return kPackAttentionNames[static_cast<size_t>(attention)];
}
const std::vector<std::string>& pack_attention_names() { return kPackAttentionNames; }
std::optional<model::DocumentAttention> parse_pack_attention(std::string_view name) {
  return parse_name<model::DocumentAttention>(kPackAttentionNames, name);
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
  out.attention = attention;
  out.documents = packed ? batch_documents[i] : out.num_rows();
  out.sum_doc_len_sq = packed ? batch_sum_doc_len_sq[i] : 0.0;
  out.document_lengths = {};
  if (packed)
    out.document_lengths = std::span<const int32_t>(document_tokens)
                               .subspan(static_cast<size_t>(batch_sample_begin[i]),
                                        static_cast<size_t>(batch_sample_begin[i + 1] - batch_sample_begin[i]));
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
  if (out.empty() && spec.policy == Policy::padding_free &&
      spec.micro_batch > INT32_MAX / round_up_width(spec.max_length, spec.pad_to_multiple_of))
    out.push_back(name("micro_batch") + " x " + name("max_length") + " = " + std::to_string(spec.micro_batch) + " x " +
                  std::to_string(spec.max_length) + ". Violated constraint: <= 2147483647 (a padding-free row holds " +
                  "the micro-batch's samples)");
  return out;
}

Schedule build_schedule(const Corpus& corpus, const BatchingSpec& spec, int64_t accumulation) {
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
  if (packs(spec.policy)) {
    build_packed(spec, lengths, accumulation, s);
  } else {
    build_padded(spec, lengths, s);
  }
  return s;
}

}  // namespace stepcast::planner
