#include "harness/distributed.hpp"

#if STEPCAST_WITH_GLOO
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#include <algorithm>
#include <chrono>

#include "model/errors.hpp"

namespace stepcast::harness {

#if STEPCAST_WITH_GLOO
struct ProcessGroupHandle::Impl {
  c10::intrusive_ptr<c10d::FileStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
};

namespace {
void wait(const c10::intrusive_ptr<c10d::Work>& work) { work->wait(); }
}  // namespace
#else
// A LibTorch whose c10d Gloo headers do not compile here (harness/CMakeLists.txt checks): no ranks, and every
// collective is unreachable because the constructor refuses.
struct ProcessGroupHandle::Impl {};
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

ProcessGroupHandle::ProcessGroupHandle(const DistributedOptions& options) : options_(options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    throw InputError("rank " + std::to_string(options.rank) + " of world size " + std::to_string(options.world_size) +
                     ". Violated constraint: 0 <= rank < world size");
  if (options.backend != "gloo")
    throw InputError("backend '" + options.backend + "'. Violated constraint: gloo (NCCL is not wired in this build)");
  if (options.store_path.empty()) throw InputError("no rendezvous file. Violated constraint: a FileStore path");
#if STEPCAST_WITH_GLOO
  impl_ = std::make_unique<Impl>();
  impl_->store = c10::make_intrusive<c10d::FileStore>(options.store_path, options.world_size);
  auto gloo = c10d::ProcessGroupGloo::Options::create();
  gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  gloo->threads = 1;
  impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, options.rank, options.world_size, gloo);
#else
  throw InputError("--nproc " + std::to_string(options.world_size) +
                   ": this build's LibTorch has no usable c10d Gloo headers. Violated constraint: a harness built "
                   "with c10d (harness/CMakeLists.txt, STEPCAST_WITH_GLOO)");
#endif
}

ProcessGroupHandle::~ProcessGroupHandle() = default;

void ProcessGroupHandle::all_reduce_sum(torch::Tensor& tensor) {
  // Gloo reduces host memory: a CUDA tensor goes through a host copy (slow, but correct; NCCL is the GPU path).
  std::vector<torch::Tensor> tensors{tensor.is_cuda() ? tensor.to(torch::kCPU) : tensor};
#if STEPCAST_WITH_GLOO
  wait(impl_->group->allreduce(tensors));
#endif
  if (tensor.is_cuda()) tensor.copy_(tensors[0]);
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
  const torch::Tensor host = shard.to(torch::kCPU);
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < options_.world_size; ++r) parts.push_back(torch::empty_like(host));
  std::vector<std::vector<torch::Tensor>> outputs{parts};
  std::vector<torch::Tensor> inputs{host};
#if STEPCAST_WITH_GLOO
  wait(impl_->group->allgather(outputs, inputs));
#endif
  return torch::cat(outputs[0]).narrow(0, 0, numel).to(shard.device());
}

void ProcessGroupHandle::barrier() {
#if STEPCAST_WITH_GLOO
  wait(impl_->group->barrier());
#endif
}

torch::Tensor shard_of(const torch::Tensor& full, int rank, int world_size) {
  const torch::Tensor flat = full.reshape({-1});
  const int64_t per_rank = (flat.numel() + world_size - 1) / world_size;
  const torch::Tensor padded = torch::constant_pad_nd(flat, {0, per_rank * world_size - flat.numel()});
  return padded.narrow(0, per_rank * rank, per_rank).clone();
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
