#include "harness/distributed.hpp"

#if STEPCAST_WITH_GLOO || STEPCAST_WITH_NCCL
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#endif
#if STEPCAST_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if STEPCAST_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <chrono>

#include "model/errors.hpp"

namespace stepcast::harness {

#if STEPCAST_WITH_GLOO || STEPCAST_WITH_NCCL
// One of the two backends, whichever the constructor made; `run` calls a collective on it (their collectives
// have the same signatures, but in LibTorch 1.13 they share no base class that has them).
struct ProcessGroupHandle::Impl {
  c10::intrusive_ptr<c10d::FileStore> store;
#if STEPCAST_WITH_GLOO
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#if STEPCAST_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
  // NCCL gathers straight into one flat buffer (FSDP's all_gather_into_tensor: no copy-out); Gloo (1.13 has no
  // _allgather_base) into one tensor per rank, concatenated after.
  torch::Tensor all_gather(const torch::Tensor& shard, int world_size) {
    std::vector<torch::Tensor> inputs{shard};
#if STEPCAST_WITH_NCCL
    if (nccl) {
      torch::Tensor flat = torch::empty({shard.numel() * world_size}, shard.options());
      nccl->_allgather_base(flat, inputs[0])->wait();
      return flat;
    }
#endif
    std::vector<torch::Tensor> parts;
    for (int r = 0; r < world_size; ++r) parts.push_back(torch::empty_like(shard));
    std::vector<std::vector<torch::Tensor>> outputs{parts};
    run([&](auto& group) { return group.allgather(outputs, inputs); });
    return torch::cat(outputs[0]);
  }

  template <class Collective>
  void run(Collective&& collective) {
#if STEPCAST_WITH_GLOO
    if (gloo) {
      collective(*gloo)->wait();
      return;
    }
#endif
#if STEPCAST_WITH_NCCL
    if (nccl) collective(*nccl)->wait();
#endif
  }
};
#else
// A LibTorch whose c10d headers (Gloo and NCCL) do not compile here (harness/CMakeLists.txt checks): no ranks,
// and every collective is unreachable because the constructor refuses.
struct ProcessGroupHandle::Impl {
  template <class Collective>
  void run(Collective&&) {}
  torch::Tensor all_gather(const torch::Tensor& shard, int) { return shard; }
};
#endif

namespace {

// Bucket boundaries over `params` in reverse order: a bucket closes once it holds `bucket_bytes` or more.
std::vector<std::vector<torch::Tensor>> buckets_of(const std::vector<torch::Tensor>& params, int64_t bucket_bytes) {
  std::vector<std::vector<torch::Tensor>> buckets(1);
  int64_t filled = 0;
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const torch::Tensor& grad = it->grad();
    if (!grad.defined()) continue;
    if (filled >= bucket_bytes) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(grad);
    filled += grad.numel() * grad.element_size();
  }
  if (buckets.back().empty()) buckets.pop_back();
  return buckets;
}

}  // namespace

bool backend_built(const std::string& backend) {
#if STEPCAST_WITH_GLOO
  if (backend == "gloo") return true;
#endif
#if STEPCAST_WITH_NCCL
  if (backend == "nccl") return true;
#endif
  (void)backend;
  return false;
}

std::string backend_for(const torch::Device& device) {
  return device.is_cuda() && backend_built("nccl") ? "nccl" : "gloo";
}

ProcessGroupHandle::ProcessGroupHandle(const DistributedOptions& options) : options_(options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    throw InputError("rank " + std::to_string(options.rank) + " of world size " + std::to_string(options.world_size) +
                     ". Violated constraint: 0 <= rank < world size");
  if (options.backend != "gloo" && options.backend != "nccl")
    throw InputError("backend '" + options.backend + "'. Violated constraint: gloo or nccl");
  if (!backend_built(options.backend))
    throw InputError("--nproc " + std::to_string(options.world_size) + " over " + options.backend +
                     ": this build's LibTorch has no usable c10d " + options.backend + " headers. Violated " +
                     "constraint: a harness built with them (harness/CMakeLists.txt: STEPCAST_WITH_GLOO, " +
                     "STEPCAST_WITH_NCCL)");
  if (options.store_path.empty()) throw InputError("no rendezvous file. Violated constraint: a FileStore path");
#if STEPCAST_WITH_GLOO || STEPCAST_WITH_NCCL
  impl_ = std::make_unique<Impl>();
  impl_->store = c10::make_intrusive<c10d::FileStore>(options.store_path, options.world_size);
#endif
#if STEPCAST_WITH_GLOO
  if (options.backend == "gloo") {
    auto gloo = c10d::ProcessGroupGloo::Options::create();
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    gloo->threads = 1;
    impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, options.rank, options.world_size, gloo);
  }
#endif
#if STEPCAST_WITH_NCCL
  if (options.backend == "nccl")
    impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl_->store, options.rank, options.world_size);
#endif
}

ProcessGroupHandle::~ProcessGroupHandle() = default;

bool ProcessGroupHandle::host_copies(const torch::Tensor& tensor) const {
  return tensor.is_cuda() && options_.backend == "gloo";
}

void ProcessGroupHandle::all_reduce_sum(torch::Tensor& tensor) {
  // Gloo reduces host memory: a CUDA tensor goes through a host copy (slow, but correct); NCCL reduces on the GPU.
  std::vector<torch::Tensor> tensors{host_copies(tensor) ? tensor.to(torch::kCPU) : tensor};
  impl_->run([&](auto& group) { return group.allreduce(tensors); });
  if (host_copies(tensor)) tensor.copy_(tensors[0]);
}

int64_t ProcessGroupHandle::all_reduce_mean(const std::vector<torch::Tensor>& params, int64_t bucket_bytes) {
  const auto buckets = buckets_of(params, bucket_bytes);
  for (const auto& bucket : buckets) {
    std::vector<torch::Tensor> flat_parts;
    for (const auto& g : bucket) flat_parts.push_back(g.reshape({-1}));
    torch::Tensor flat = torch::cat(flat_parts);
    all_reduce_sum(flat);
    flat.div_(static_cast<double>(options_.world_size));
    int64_t offset = 0;
    for (const auto& g : bucket) {
      const int64_t n = g.numel();
      g.copy_(flat.narrow(0, offset, n).view_as(g));
      offset += n;
    }
  }
  return static_cast<int64_t>(buckets.size());
}

torch::Tensor ProcessGroupHandle::all_gather_flat(const torch::Tensor& shard, int64_t numel) {
  const torch::Tensor input = host_copies(shard) ? shard.to(torch::kCPU) : shard.contiguous();
  return impl_->all_gather(input, options_.world_size).narrow(0, 0, numel).to(shard.device());
}

void ProcessGroupHandle::barrier() {
  impl_->run([](auto& group) { return group.barrier(); });
}

torch::Tensor shard_of(const torch::Tensor& full, int rank, int world_size) {
  const torch::Tensor flat = full.reshape({-1});
  const int64_t per_rank = (flat.numel() + world_size - 1) / world_size;
  const torch::Tensor padded = torch::constant_pad_nd(flat, {0, per_rank * world_size - flat.numel()});
  return padded.narrow(0, per_rank * rank, per_rank).clone();
}

LayerSharding fsdp_sharding(ProcessGroupHandle& group) {
  LayerSharding s;
  const int rank = group.rank(), world = group.world_size();
  s.shard = [rank, world](const torch::Tensor& full) { return shard_of(full, rank, world); };
  s.gather = [&group](const torch::Tensor& shard, c10::IntArrayRef full_sizes) {
    return group.all_gather_flat(shard, c10::multiply_integers(full_sizes)).view(full_sizes);
  };
  return s;
}

namespace {
torch::Tensor flat_of(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> parts;
  for (const auto& t : tensors) parts.push_back(t.detach().reshape({-1}).to(torch::kFloat));
  return torch::cat(parts);
}
}  // namespace

ShardedAdamW::ShardedAdamW(ProcessGroupHandle& group, const std::vector<torch::Tensor>& params, double learning_rate,
                           double max_grad_norm)
    : group_(group), max_grad_norm_(max_grad_norm) {
  const torch::Tensor flat = flat_of(params);
  total_ = flat.numel();
  shard_ = shard_of(flat, group.rank(), group.world_size()).requires_grad_(true);
  // Weight decay 0, as the one-process run (harness/run_probe.cpp).
  optimizer_ = std::make_unique<torch::optim::AdamW>(std::vector<torch::Tensor>{shard_},
                                                     torch::optim::AdamWOptions(learning_rate).weight_decay(0.0));
}

void ShardedAdamW::step(const std::vector<torch::Tensor>& params) {
  group_.all_reduce_mean(params);
  torch::nn::utils::clip_grad_norm_(params, max_grad_norm_);
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) grads.push_back(p.grad().defined() ? p.grad() : torch::zeros_like(p));
  shard_.mutable_grad() = shard_of(flat_of(grads), group_.rank(), group_.world_size()).to(shard_.device());
  optimizer_->step();
  const torch::Tensor updated = group_.all_gather_flat(shard_.detach(), total_);
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const auto& p : params) {
    const int64_t n = p.numel();
    p.copy_(updated.narrow(0, offset, n).view_as(p));
    offset += n;
  }
}

double time_all_reduce(ProcessGroupHandle& group, int64_t bytes, int repetitions) {
  torch::Tensor t = torch::ones({std::max<int64_t>(1, bytes / 4)}, torch::kFloat32);
  group.all_reduce_sum(t);  // warm-up: connections and buffers
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    group.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    group.all_reduce_sum(t);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace stepcast::harness
