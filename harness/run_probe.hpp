#pragma once
// The end-to-end run probe: a short real LoRA fine-tuning run over a corpus, batched by the planner's own
// code (planner::build_schedule, the micro-batches the planner simulates), one record per micro-batch in
// the recorded-run schema of calibrate/run_records.hpp. No warm-up: the run is measured as people launch
// it, first-seen shapes, optimizer state creation and all. Per micro-batch: collate (rows right-padded to
// the width, labels -100 on pads; packed rows as TRL's flattening collator gives them) and copy, forward, loss / accumulation, backward, synchronise; at each
// window end (and at the run's end): clip the gradient norm to 1.0, AdamW on the LoRA parameters, zero
// the gradients, synchronise.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "harness/activity.hpp"
#include "harness/device.hpp"
#include "harness/model.hpp"
#include "harness/tier.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"

namespace stepcast::harness {

struct RunOptions {
  std::string model_label;             // the record's `model`
  std::string tier = kDefaultTier;
  planner::BatchingSpec batching;      // policy, micro_batch, max_length, shuffle seed
  int64_t pad_to_multiple_of = 1;      // the collator's rounding of the width, handed to the planner (1: off)
  int64_t accumulation = 1;            // micro-batches per optimizer step
  double learning_rate = 1e-4;         // AdamW on the adapters (weight decay 0: transformers' default)
  double max_grad_norm = 1.0;          // transformers' default max_grad_norm
  uint64_t token_seed = 1234;          // random token ids of each micro-batch (seed + index)
  std::string id;                      // the run id; default "<corpus>/<policy>"
  std::string corpus_label = "corpus"; // what the corpus was ("synthetic-64-7", a file name)
  std::string out;                     // JSON Lines file the records are appended to
  std::string command;                 // the command line, written into each record's `source`
  bool progress = true;                // one line per micro-batch on stderr
  // Several processes (harness/distributed.hpp): called with the adapters after a window's last backward and
  // before clipping (DDP's gradient all-reduce); the rank and world size every record carries.
  std::function<void(const std::vector<torch::Tensor>&)> before_optimizer_step;
  // When set, replaces clipping and the AdamW step (FSDP's sharded optimizer step, harness/distributed.hpp).
  std::function<void(const std::vector<torch::Tensor>&)> optimizer_step;
  std::optional<int64_t> rank, world_size;
  std::optional<std::string> strategy;  // "ddp" or "fsdp" on ranks: the record's `strategy`
  // After the run (its records untouched): micro-batch `kernel_batch` once more under the activity source,
  // its CUPTI kernel table written to `kernel_dir` (default: `out` without .jsonl + ".kernels/"). -1: none.
  int64_t kernel_batch = -1;
  std::string kernel_dir;
};

struct RunSummary {
  std::string id;
  int64_t micro_batches = 0;
  int64_t optimizer_steps = 0;
  int64_t distinct_shapes = 0;  // rows x width new to the process during the run
  double total_s = 0;           // the last micro-batch's elapsed_s
  double optimizer_s = 0;       // summed optimizer steps
  std::string kernel_table;     // the kernel table's path, when one was written
};

// The synthetic fine-tuning corpus of the device script: a seeded two-part log-normal mix, clamped to
// [16, max_length]. 80 % chat-like turns (median 600 tokens, sigma 0.7) and 20 % long documents
// (median 1,800, sigma 0.75): the mix's median is ~715 tokens, its 90th percentile ~2,270, and ~3 % of
// samples reach 4,096 (200,000 draws; 64 samples scatter around these).
planner::SyntheticSpec finetune_mix(int64_t samples, uint64_t seed, int64_t max_length);

// The run's id from its options ("<corpus_label>/<policy>[/<packer>][/<pack attention>][/pad-M]" unless `id`
// is set; the packer for pack, the attention mode for pack and padding-free).
std::string run_id(const RunOptions& options);

// Packed schedules (pack, padding-free) run as packed rows (make_packed_batch) with the schedule's attention
// mode, and each record's `run` object adds the packer, the attention mode and the documents of each row.
// Throws InputError when the schedule cannot run on this harness (rows under 2 tokens have no label; a pad_to_multiple_of the planner build lacks) or
// when `out` already holds a run with this id.
void check_run(const planner::Corpus& corpus, const RunOptions& options);

// `activity` may be null (no kernel table, whatever kernel_batch says).
RunSummary run_recorded(Model& model, const planner::Corpus& corpus, const RunOptions& options,
                        const DeviceInfo& device, ActivitySource* activity = nullptr);

}  // namespace stepcast::harness
