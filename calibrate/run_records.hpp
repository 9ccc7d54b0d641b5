#pragma once
// Recorded runs: a short real training run written as measurement records, one per
// micro-batch in run order, each with a `run` object that the record contract leaves to writers:
//
//   {"model": ..., "gpu": ..., "tier": ..., "rows": [...], "width": W, "step_s": 0.71,   <- the record contract
//    "probe": "run",
//    "run": {"id": "corpus-7/pad-to-longest",  // one id per run; a file may hold several runs
//            "policy": "pad-to-longest",      // planner policy name (planner/batching.hpp) or free text
//            "micro_batch": 2, "accumulation": 4, "max_length": 4096,
//            "pad_to_multiple_of": 1,         // the collator's rounding of the width (1 = none)
//            "seed": 7,                        // the shuffle / corpus seed
//            "index": 0,                       // 0-based micro-batch index in run order
//            "optimizer_step": 0,              // 0-based optimizer step the micro-batch belongs to
//            "first_seen": true,               // this rows x width was new to the process
//            "optimizer_s": 0.012,             // only on the micro-batch that closes a window
//            "elapsed_s": 0.93,                // wall clock since the run began, after this micro-batch
//                                              // (and its optimizer step when it closes a window)
//            "corpus_lengths": [...],          // only at index 0: sample lengths in corpus order
//            "pack_attention": "varlen",       // packed runs (pack, padding-free) only: varlen | block-mask | cross
//            "packer": "next-fit",             // pack only
//            "documents": [[7475], [2147, 1608]]}}  // packed runs: each row's document lengths (they add up
//                                              // to the row's tokens in `rows`)
//
// step_s is the wall clock of the micro-batch (collate, copy, forward, backward; synchronised), so the
// run's total is the last elapsed_s and the sum of step_s + optimizer_s is within host noise of it.
//
// A run's memory (docs/method.md, "Memory of a run"; all GiB = 2^30 bytes, every field optional):
//   "peak_gib": 41.2,                  torch.cuda.max_memory_allocated over the micro-batch (stats reset before it)
//   "peak_reserved_gib": 44.0,         torch.cuda.max_memory_reserved over it
//   "memory": {"allocated_before_gib", "reserved_before_gib", "forward_peak_gib", "backward_peak_gib",
//              "allocated_after_gib", "optimizer_peak_gib", "optimizer_reserved_gib" (a window's last micro-batch:
//              clip + AdamW + zero_grad), "device_used_gib" (cudaMemGetInfo total - free after the micro-batch),
//              "card_total_gib", "alloc_retries" (num_alloc_retries, an integer), "inactive_split_gib"}
//   "memory_start": {"weights_gib", "context_gib" (device used - reserved before the first step), "reserved_gib",
//                    "card_total_gib", "allocator": "default" | "expandable_segments"}   on the run's first record
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "model/batch.hpp"
#include "model/run_memory.hpp"

namespace stepcast::calibrate {

// A micro-batch's `memory` object; each field absent when the writer did not record it.
struct RunStepMemory {
  std::optional<double> allocated_before_gib, reserved_before_gib, forward_peak_gib, backward_peak_gib,
      allocated_after_gib, optimizer_peak_gib, optimizer_reserved_gib, device_used_gib, card_total_gib, inactive_split_gib;
  std::optional<int64_t> alloc_retries;
};

// The run's first record's `memory_start` object.
struct RunMemoryStart {
  std::optional<double> weights_gib, context_gib, reserved_gib, card_total_gib;
  model::Allocator allocator = model::Allocator::caching;
};

struct RunStep {
  Record record;                      // rows, width, step_s: one micro-batch
  int64_t index = 0;
  int64_t optimizer_step = 0;
  bool first_seen = false;
  std::optional<double> optimizer_s;
  double elapsed_s = 0;
  std::vector<int32_t> document_lengths;  // packed runs: every row's documents, row after row; else empty
  std::optional<double> peak_reserved_gib;
  std::optional<RunStepMemory> memory;
};

// What every micro-batch of one run repeats: the run's identity and batching.
struct RunHeader {
  std::string id;
  std::string policy;
  int64_t micro_batch = 0;
  int64_t accumulation = 1;
  int64_t max_length = 0;          // 0: not recorded
  int64_t pad_to_multiple_of = 1;
  uint64_t seed = 0;
  std::optional<model::DocumentAttention> pack_attention;  // set: a packed run (its rows hold documents)
  std::string packer;                                      // pack only; empty otherwise
};

struct RecordedRun : RunHeader {
  std::vector<int32_t> corpus_lengths;  // empty when the writer did not record the corpus
  std::optional<RunMemoryStart> memory_start;
  std::vector<RunStep> steps;           // run order

  double total_s() const { return steps.empty() ? 0.0 : steps.back().elapsed_s; }
  double optimizer_total_s() const;
};

// The `run` object of a micro-batch record (what a writer adds to a Record's `extra`, with "probe": "run").
struct RunFields : RunHeader {
  int64_t index = 0;
  int64_t optimizer_step = 0;
  bool first_seen = false;
  std::optional<double> optimizer_s;
  double elapsed_s = 0;
  std::vector<int32_t> corpus_lengths;  // written only when non-empty (index 0)
};
nlohmann::json run_json(const RunFields& fields);

// The micro-batch a run step measured as the cost model sees it: rows right-padded to the width and, in a
// packed run, its documents and attention mode (so that `validate --run` prices each varlen layer with its
// documents, as `plan` does). The returned batch views `step.document_lengths`: `step` must outlive it.
model::MicroBatch run_batch(const RecordedRun& run, const RunStep& step);

// The runs among `records` (those with "probe": "run"), grouped by run id in first-appearance order and
// checked: indices 0..n-1 without gaps or repeats, elapsed_s non-decreasing, one micro_batch /
// accumulation per run. Every problem is reported at once as file:line in one stepcast::InputError.
std::vector<RecordedRun> read_runs(const std::vector<Record>& records, const std::string& file);

// Where a record sits in its run, for the run's memory terms (model/run_memory.hpp): in_run for a record with
// "probe": "run" and a well-formed run object (index, accumulation, first_seen); read_runs checks the rest.
model::RunPosition run_position(const Record& record);

}  // namespace stepcast::calibrate
