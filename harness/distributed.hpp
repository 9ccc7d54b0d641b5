#pragma once
// Several processes over c10d (docs/harness.md, "Several processes"): LibTorch's C++ API has no DDP or FSDP
// wrapper, so the collectives are written around the existing layers here. Gloo on the CPU (Debian's LibTorch 1.13
// ships ProcessGroupGloo), NCCL on CUDA (PyTorch's wheel ships ProcessGroupNCCL but not gloo's headers); each is
// compiled in where its headers compile (harness/CMakeLists.txt). Rendezvous through a FileStore:
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

#include "harness/model.hpp"

namespace stepcast::harness {

struct DistributedOptions {
  int rank = 0;
  int world_size = 1;
  std::string store_path;   // the FileStore every rank opens
  std::string backend = "gloo";  // gloo: CPU tensors (and CUDA ones, through host copies); nccl: CUDA tensors
};

// Whether this build has the c10d backend ("gloo", "nccl").
bool backend_built(const std::string& backend);
// NCCL for a CUDA device where built, else Gloo.
std::string backend_for(const torch::Device& device);

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
  bool host_copies(const torch::Tensor& tensor) const;  // Gloo's collectives take host tensors only
  struct Impl;  // the c10d store and process group (Torch's distributed headers stay in the .cpp)
  DistributedOptions options_;
  std::unique_ptr<Impl> impl_;
};

// FSDP's shard of a tensor for `rank` of `world_size`: the flattened tensor zero-padded to a multiple of
// world_size, cut into equal parts.
torch::Tensor shard_of(const torch::Tensor& full, int rank, int world_size);

// FSDP's full shard of a model's decoder layers over `group` (Model::shard_layers): rank r keeps shard_of(w, r, N)
// of every frozen layer tensor; each run of a layer all-gathers them. `group` must outlive the model's steps.
LayerSharding fsdp_sharding(ProcessGroupHandle& group);

// FSDP's optimizer step on the LoRA adapters: the gradients are all-reduced (mean; then each rank keeps its shard:
// Debian's LibTorch 1.13 Gloo has no reduce-scatter, and the adapters' gradients are small next to the layers'
// gathers), clipped by their global norm, and AdamW steps this rank's 1/N of the flattened adapters only (its
// optimizer state is 1/N); the updated shards are all-gathered back into every adapter, so every rank ends the
// step with the same parameters. AdamW is elementwise: the result is one process's AdamW on the same gradients.
class ShardedAdamW {
 public:
  ShardedAdamW(ProcessGroupHandle& group, const std::vector<torch::Tensor>& params, double learning_rate,
               double max_grad_norm);
  void step(const std::vector<torch::Tensor>& params);
  int64_t shard_elements() const { return shard_.numel(); }

 private:
  ProcessGroupHandle& group_;
  double max_grad_norm_;
  int64_t total_ = 0;          // elements of all adapters together
  torch::Tensor shard_;        // this rank's slice of the flattened adapters (fp32 master copy), a leaf
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

// Seconds per all-reduce (sum) of `bytes` of float32, median of `repetitions` after one warm-up; every rank
// must call it with the same arguments.
double time_all_reduce(ProcessGroupHandle& group, int64_t bytes, int repetitions);

}  // namespace stepcast::harness
