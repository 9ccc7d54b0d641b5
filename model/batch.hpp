#pragma once
// A micro-batch as the cost model sees it, and the interface every step-time / memory predictor
// offers. The planner simulates runs through StepPredictor; the calibrated StepModel implements it.
#include <compare>
#include <cstdint>
#include <span>
#include <vector>

#include "model/run_memory.hpp"

namespace stepcast::model {

// How the documents of a packed row meet in attention (docs/planner.md "Packing"):
//   varlen      a kernel told the documents' cumulative offsets (flash / efficient varlen, FlexAttention's
//               document mask): each document attends to itself only, Sigma L_i^2 work, no mask tensor
//   block_mask  a 4-D block-diagonal causal mask through SDPA (transformers' sdpa with restarting
//               position_ids): the masked kernel computes the full W x W, plus the mask path and its memory
//   cross       no document mask: one causal W x W, and documents attend to each other (a correctness issue)
enum class DocumentAttention : uint8_t { varlen, block_mask, cross };

struct MicroBatch {
  std::vector<int64_t> rows;  // real (unpadded) tokens of each row
  int64_t width = 0;          // padded width: every row is right-padded to it; width >= max(rows)
  // Packed rows (the planner's `pack` and `padding-free` policies): each row concatenates several
  // documents, positions restarting at each. `documents` counts them; `sum_doc_len_sq` is the sum over
  // all documents of length^2, the attention work of a kernel that honours document boundaries.
  // `document_lengths` views the documents' lengths, row after row (a row's documents add up to its
  // tokens), in storage the schedule owns: no allocation per micro-batch. Empty: unknown (each row is
  // then taken as one document).
  bool packed = false;
  DocumentAttention attention = DocumentAttention::block_mask;
  int64_t documents = 0;
  double sum_doc_len_sq = 0;
  std::span<const int32_t> document_lengths;

  int64_t num_rows() const { return static_cast<int64_t>(rows.size()); }
  int64_t real_tokens() const {
    int64_t n = 0;
    for (int64_t r : rows) n += r;
    return n;
  }
  int64_t padded_tokens() const { return num_rows() * width; }
  bool has_padding() const { return real_tokens() < padded_tokens(); }
};

// The rows of a probe point R x W with a share `padding` of pad tokens (the harness's padded probes, and every
// prediction of one): row 0 is full (so the batch really needs width W), the other rows share the remaining real
// tokens evenly (each at least 2, at most W); one row is simply shortened. padding in [0, 1).
std::vector<int64_t> padded_rows(int64_t rows, int64_t width, double padding);

// A step's two sides: the device's time and the host's time to issue it (model/features.hpp), and the step.
struct StepSides {
  double step_s = 0;
  double device_s = 0;
  double host_s = 0;   // 0: the predictor has no host side
  bool host_bound() const { return host_s > device_s; }
};

class StepPredictor {
 public:
  virtual ~StepPredictor() = default;
  virtual double step_s(const MicroBatch& batch) const = 0;     // one forward + backward, seconds
  virtual double peak_gib(const MicroBatch& batch) const = 0;   // peak allocated device memory, GiB
  // The step with its two sides; the default has no host side (step = device).
  virtual StepSides step_sides(const MicroBatch& batch) const {
    const double s = step_s(batch);
    return {s, s, 0};
  }
  // One-off seconds the first micro-batch of a shape (rows x width) not seen before in the process pays
  // on top of step_s, when every graph it needs (first_seen_graphs) is new: execution graphs built and cached
  // per shape (cuDNN's SDPA, docs/host.md "What a first-seen shape pays for"). Calibrated per tier from
  // first-seen probes and runs; 0 when unknown.
  virtual double first_seen_s(const MicroBatch& /*batch*/) const { return 0; }
  // The graphs a micro-batch's shape needs, as a set of small signature ids (bit i: signature i); a run pays
  // first_seen_s's share once per (rows, width, signature) it has not met. The default: one, the shape itself.
  virtual uint32_t first_seen_graphs(const MicroBatch& /*batch*/) const { return 1; }
  // One-off seconds the very first micro-batch of a fresh process pays on top of first_seen_s (CUDA,
  // cuBLAS and cuDNN initialisation). 0 when unknown.
  virtual double run_start_s() const { return 0; }
  // Seconds of one optimizer step (gradient clipping, AdamW over the trainable parameters, zero_grad).
  // 0 when unknown.
  virtual double optimizer_step_s() const { return 0; }
  // Of which: the update that grows with the trained parameters (a full fine-tune's AdamW passes), which a rank
  // of a sharded optimizer (FSDP, ZeRO-1/2) runs over its shards only. 0 when unknown.
  virtual double optimizer_update_s() const { return 0; }
  // A micro-batch's memory in parts (model/run_memory.hpp); the default itemises nothing: the whole peak is the
  // micro-batch's own.
  virtual MemoryParts memory_parts(const MicroBatch& batch) const { return {peak_gib(batch), 0, 0}; }
  // What a run holds besides its micro-batches under `allocator`; the default knows none of it.
  virtual RunMemory run_memory(Allocator allocator) const {
    RunMemory r;
    r.allocator = allocator;
    return r;
  }
};

// The key a kernel-plan cache sees: rows x padded width (packed rows are max_length wide), and for a graph cache
// the graph's signature id (0..31, StepPredictor::first_seen_graphs).
struct ShapeKey {
  int64_t rows = 0;
  int64_t width = 0;
  int64_t graph = 0;
  friend bool operator==(const ShapeKey&, const ShapeKey&) = default;
  friend auto operator<=>(const ShapeKey&, const ShapeKey&) = default;
};
inline ShapeKey shape_key(const MicroBatch& batch) { return {batch.num_rows(), batch.width}; }

}  // namespace stepcast::model
