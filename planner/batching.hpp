#pragma once
// Batching policies: how a corpus becomes the micro-batches of a run, exactly as padded and truncated.
//
//   fixed           corpus order, R samples per micro-batch, every row padded to max_length
//   pad-to-longest  corpus order, R samples per micro-batch, padded to the micro-batch's longest row
//   sorted-buckets  sort by length (stable), cut into buckets of k consecutive samples, shuffle the
//                   samples inside each bucket, form micro-batches of R inside the bucket (a bucket's
//                   last micro-batch may be short), then shuffle all micro-batches. A bucket holds at
//                   least R samples (k < R counts as k = R, the tightest grouping); a larger k mixes
//                   lengths inside a micro-batch and pads more.
//   bucket-to-pair  sort by length (stable), cut into micro-batches of R consecutive samples (rows of
//                   equal or near-equal length), then shuffle the micro-batches to mix the run.
//   padding-free    corpus order, R samples per micro-batch concatenated into ONE row (positions restart
//                   at each sample: TRL's padding_free / DataCollatorWithFlattening); the row is as wide as
//                   its samples, so there is no padding (but for pad_to_multiple_of).
//   pack            rows of max_length tokens filled by a packer, R rows per micro-batch:
//                     next-fit   corpus order: a sample goes into the current row if it fits, else opens one
//                     ffd        first-fit-decreasing over the pass: longest first, each into the first row
//                                with room (fewest rows; lengths grouped, so the run order is then shuffled)
//                     multipack  corpus order, one optimizer step (R * accumulation rows) at a time: the
//                                step's samples, longest first, each into the least-filled row with room
//                                (balanced rows; what does not fit waits for the next step)
// Packed rows (both policies) carry their documents' lengths; `pack_attention` says how documents meet
// (model::DocumentAttention: varlen, block-mask or cross).
//
// Every policy first truncates each sample to max_length (a sample is truncated, never split), and
// the last micro-batch of the run may hold fewer than R rows. Shuffles use `seed` (planner/random.hpp).
//
// pad_to_multiple_of = m (the data collator's option, Hugging Face DataCollatorWithPadding; 1 = off):
// after the policy picks a micro-batch's width, the width is rounded up to a multiple of m, even past
// max_length (the collator pads after truncation: longest row 4,000 with m = 64 -> 4,032; a row of 4,100
// truncated to max_length 4,096 stays 4,096). `fixed` pads to max_length rounded up, `pack` rows are
// max_length rounded up wide (they still hold at most max_length real tokens). Fewer distinct widths
// mean fewer first-seen shapes (planner/timeline.hpp) for more padding.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/batch.hpp"
#include "planner/corpus.hpp"

namespace stepcast::planner {

enum class Policy { fixed, pad_to_longest, sorted_buckets, bucket_to_pair, pack, padding_free };
enum class Packer { next_fit, ffd, multipack };

std::string policy_name(Policy policy);
std::optional<Policy> parse_policy(std::string_view name);
const std::vector<std::string>& policy_names();
inline bool packs(Policy policy) { return policy == Policy::pack || policy == Policy::padding_free; }

std::string packer_name(Packer packer);
std::optional<Packer> parse_packer(std::string_view name);
const std::vector<std::string>& packer_names();

// "varlen", "block-mask", "cross".
std::string pack_attention_name(model::DocumentAttention attention);
std::optional<model::DocumentAttention> parse_pack_attention(std::string_view name);
const std::vector<std::string>& pack_attention_names();

struct BatchingSpec {
  Policy policy = Policy::pad_to_longest;
  int64_t micro_batch = 1;    // rows per micro-batch (R)
  int64_t max_length = 4096;  // tokens; samples are truncated to it, packed rows are this wide
  int64_t bucket_size = 64;   // samples per bucket (sorted-buckets only)
  uint64_t seed = 0;          // for the shuffles
  int64_t pad_to_multiple_of = 1;  // tokens; the width is rounded up to a multiple of it (1: off)
  Packer packer = Packer::next_fit;  // pack only
  // pack and padding-free: block-mask is what transformers builds under sdpa from restarting positions.
  model::DocumentAttention pack_attention = model::DocumentAttention::block_mask;
};

// The largest pad_to_multiple_of accepted: collators use 8-256 (tensor-core and kernel tiles); a
// multiple beyond 65,536 tokens is surely a typo.
constexpr int64_t kMaxPadToMultipleOf = 65536;

// Every way `spec` breaks the limits above (rows, max_length, bucket size >= 1; pad_to_multiple_of in
// [1, kMaxPadToMultipleOf]; max_length rounded up to it fits a 32-bit width), each as "<name> = <value>.
// Violated constraint: ...". Names are scenario keys after `prefix` ("baseline.max_length") or, with
// Naming::flags, command-line flags ("--max-length"). Empty: valid. Every reader of a BatchingSpec (scenario,
// command line, harness) and build_schedule call this one rule.
enum class Naming { keys, flags };
std::vector<std::string> batching_problems(const BatchingSpec& spec, Naming naming = Naming::keys,
                                           const std::string& prefix = "");

// `width` rounded up to a multiple of `multiple` (>= 1).
inline int64_t round_up_width(int64_t width, int64_t multiple) {
  return (width + multiple - 1) / multiple * multiple;
}

// Truncation at max_length: samples cut and tokens lost (`kept` tokens are the last ones of a sample,
// as in supervised fine-tuning where the prompt is masked, so they are lost first).
struct Truncation {
  int64_t samples = 0;
  int64_t tokens = 0;
  int64_t kept_tokens = 0;
};

// The micro-batches of one pass over the corpus, in the order they run, stored flat so that a
// million samples cost a few vectors and no allocation per micro-batch.
struct Schedule {
  bool packed = false;
  model::DocumentAttention attention = model::DocumentAttention::block_mask;
  std::vector<int32_t> row_tokens;          // real tokens of each row (after truncation), batch after batch
  std::vector<int64_t> batch_row_begin;     // batch b owns rows [batch_row_begin[b], batch_row_begin[b+1])
  std::vector<int32_t> batch_width;         // padded width of each batch
  std::vector<int32_t> sample_order;        // sample ids in the order they run
  std::vector<int64_t> batch_sample_begin;  // batch b owns samples [batch_sample_begin[b], ...[b+1])
  std::vector<int32_t> batch_documents;     // packed only: documents in the batch
  std::vector<double> batch_sum_doc_len_sq; // packed only: sum of document length^2 in the batch
  // packed only: each document's tokens after truncation, in sample_order's order (row after row), so
  // batch b's documents are [batch_sample_begin[b], batch_sample_begin[b+1]).
  std::vector<int32_t> document_tokens;

  int64_t samples = 0;
  int64_t real_tokens = 0;       // after truncation
  int64_t processed_tokens = 0;  // sum over micro-batches of rows * width
  int64_t kept_tokens = 0;       // after truncation; 0 when the corpus has no `kept`
  Truncation truncated;

  int64_t num_batches() const { return static_cast<int64_t>(batch_width.size()); }
  int64_t padding_tokens() const { return processed_tokens - real_tokens; }
  // Padded-but-not-real tokens over processed tokens (0 for an empty schedule).
  double padding_fraction() const;
  // Writes batch b into `out`, reusing its row storage.
  void fill(int64_t b, model::MicroBatch& out) const;
};

// `accumulation` (micro-batches per optimizer step) matters to multipack only, which balances the rows
// of one optimizer step.
Schedule build_schedule(const Corpus& corpus, const BatchingSpec& spec, int64_t accumulation = 1);

}  // namespace stepcast::planner
