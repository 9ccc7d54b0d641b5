#pragma once
// Several processes over c10d (docs/harness.md, "Several processes"): LibTorch's C++ API has no DDP or FSDP
// wrapper, so the collectives are written around the existing layers here. Gloo (Debian's LibTorch 1.13 ships
// ProcessGroupGloo); NCCL for GPUs is still to wire (docs/harness.md says what is missing). Rendezvous through a FileStore:
// every rank opens the same file, which the launcher creates empty and removes afterwards.
//
//   DDP   trainable gradients all-reduced (sum, then / world) in buckets of 25 MiB (torch DDP's bucket_cap_mb),
//         once per optimizer step, before clipping: every rank then steps the same AdamW on the same gradients.
//   FSDP  every frozen weight sharded over the ranks (rank r keeps elements [r*S/N, (r+1)*S/N) of the flattened
//         tensor, zero-padded to a multiple of N); gather_layer() all-gathers one tensor's shards back into the
//         full weight before use, and release_layer() frees it again.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stepcast::harness {

struct DistributedOptions {
  int rank = 0;
  int world_size = 1;
  std::string store_path;   // the FileStore every rank opens
  std::string backend = "gloo";  // Gloo: CPU tensors (and CUDA ones, through host copies); NCCL is not wired yet
};

// torch DDP's default bucket (bucket_cap_mb = 25), bytes.
inline constexpr int64_t kBucketBytes = 25LL * 1024 * 1024;

class ProcessGroupHandle {
 public:
  // Joins the group: blocks until every rank has opened the store. Throws stepcast::InputError for a bad
  // rank / world size or a backend this build lacks.
  explicit ProcessGroupHandle(const DistributedOptions& options);
  ~ProcessGroupHandle();
  ProcessGroupHandle(const ProcessGroupHandle&) = delete;
  ProcessGroupHandle& operator=(const ProcessGroupHandle&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  const std::string& backend() const { return options_.backend; }

  // DDP: the mean over ranks of every defined gradient of `params`, in place, bucketed by `bucket_bytes`
  // (parameters in reverse order, as DDP's Reducer fills buckets during backward). Returns the buckets sent.
  int64_t all_reduce_mean(const std::vector<torch::Tensor>& params, int64_t bucket_bytes = kBucketBytes);
  // One all-reduce (sum) of `tensor` in place, blocking.
  void all_reduce_sum(torch::Tensor& tensor);
  // FSDP: the full tensor of `numel` elements from every rank's shard (shard_of's output).
  torch::Tensor all_gather_flat(const torch::Tensor& shard, int64_t numel);
  void barrier();

 private:
  struct Impl;  // the c10d store and process group (Torch's distributed headers stay in the .cpp)
  DistributedOptions options_;
  std::unique_ptr<Impl> impl_;
};

// FSDP's shard of a tensor for `rank` of `world_size`: the flattened tensor zero-padded to a multiple of
// world_size, cut into equal parts.
torch::Tensor shard_of(const torch::Tensor& full, int rank, int world_size);

// Seconds per all-reduce (sum) of `bytes` of float32, median of `repetitions` after one warm-up; every rank
// must call it with the same arguments.
double time_all_reduce(ProcessGroupHandle& group, int64_t bytes, int repetitions);

}  // namespace stepcast::harness
