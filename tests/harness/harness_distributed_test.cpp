// Two processes over Gloo on the CPU (harness/distributed.hpp): the bucketed all-reduce gives every rank the
// gradients one process gets from the same global batch, and FSDP's shards gather back into the weight.
// Forks before any Torch work in this process (a fork after Torch's thread pools start is unsafe), so each
// case runs in the fresh process ctest gives it.
#include <sys/wait.h>
#include <unistd.h>

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "harness/distributed.hpp"
#include "harness/model.hpp"
#include "io/model_config.hpp"
#include "temp_file.hpp"

namespace h = stepcast::harness;

namespace {

const std::vector<std::vector<int64_t>> kRowsOfRank{{24, 17}, {31, 9}};  // one micro-batch per rank
constexpr int64_t kWidth = 32;

std::unique_ptr<h::Model> tiny_model(const std::string& config = "tiny-llama") {
  const auto shape =
      stepcast::io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/" + config + ".json");
  h::BuildOptions o;
  o.dtype = torch::kFloat;
  o.lora.rank = 4;
  o.lora.dropout = 0.0;
  auto model = std::make_unique<h::Model>(shape, o);
  // LoRA's B starts at 0, which makes A's gradient 0: move every adapter off it, the same way in each process.
  torch::manual_seed(7);
  torch::NoGradGuard no_grad;
  for (auto& p : model->adapter_parameters()) p.add_(torch::randn_like(p) * 0.05);
  return model;
}

// The gradients of `batches` accumulated with loss / batches.size(), flattened into one tensor.
torch::Tensor gradients(h::Model& model, const std::vector<size_t>& batches) {
  const h::Tier tier = h::parse_tier("sdpa-auto/loop");
  model.zero_grad();
  for (size_t b : batches) {
    const h::Batch batch = h::make_batch(kRowsOfRank[b], kWidth, model.shape().vocab_size, 100 + b, torch::kCPU);
    model.step(batch, tier, 1.0 / static_cast<double>(batches.size()));
  }
  std::vector<torch::Tensor> flat;
  for (const auto& p : model.adapter_parameters()) flat.push_back(p.grad().reshape({-1}));
  return torch::cat(flat);
}

// Runs `body(rank)` in `world` forked processes; true when every one exits 0.
bool run_ranks(int world, const std::function<int(int)>& body) {
  std::vector<pid_t> children;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      int rc = 1;
      try {
        torch::set_num_threads(1);
        rc = body(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      std::_Exit(rc);
    }
    children.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

// Elements of the decoder layers' parameters (what FSDP shards; the root's embedding and norm stay whole).
int64_t layer_elements(const h::Model& model) {
  int64_t n = 0;
  for (const auto& [name, t] : model.named_parameters()) n += name.find("layers.") != std::string::npos ? t.numel() : 0;
  return n;
}

int64_t layer_tensors(const h::Model& model) {
  int64_t n = 0;
  for (const auto& [name, t] : model.named_parameters()) n += name.find("layers.") != std::string::npos ? 1 : 0;
  return n;
}

torch::Tensor flat_adapters(const h::Model& model) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : model.adapter_parameters()) flat.push_back(p.detach().reshape({-1}));
  return torch::cat(flat);
}

constexpr double kLearningRate = 1e-2;  // large enough that one AdamW step moves every adapter visibly

// FSDP over two Gloo ranks, one micro-batch each, one optimizer step; then one process with both micro-batches
// accumulated: each rank's loss is the one process's loss on that micro-batch, and every rank's updated adapters
// are the one process's.
void check_fsdp_matches_one_process(const std::string& config) {
  stepcast::testing::TempFile store("", ".store");
  std::filesystem::remove(store.path());
  const std::string out = store.path() + ".fsdp";
  const bool ok = run_ranks(2, [&](int rank) {
    h::ProcessGroupHandle group({rank, 2, store.path(), "gloo"});
    auto model = tiny_model(config);
    const int64_t whole = layer_elements(*model);
    model->shard_layers(h::fsdp_sharding(group));
    const int64_t kept = layer_elements(*model);
    // Each tensor's shard is ceil(numel / 2): half the layers, plus at most one padding element per tensor.
    if (whole == 0 || kept * 2 < whole || kept * 2 > whole + layer_tensors(*model)) return 6;
    h::ShardedAdamW optimizer(group, model->adapter_parameters(), kLearningRate, 1.0);
    model->zero_grad();
    const h::Batch batch =
        h::make_batch(kRowsOfRank[rank], kWidth, model->shape().vocab_size, 100 + rank, torch::kCPU);
    const torch::Tensor loss = model->step(batch, h::parse_tier("sdpa-auto/loop"));
    optimizer.step(model->adapter_parameters());
    torch::save(std::vector<torch::Tensor>{loss, flat_adapters(*model)}, out + std::to_string(rank));
    return 0;
  });
  REQUIRE(ok);
  auto model = tiny_model(config);
  const auto params = model->adapter_parameters();
  const torch::Tensor before = flat_adapters(*model);
  torch::optim::AdamW adamw(params, torch::optim::AdamWOptions(kLearningRate).weight_decay(0.0));
  model->zero_grad();
  std::vector<torch::Tensor> losses;
  for (size_t b = 0; b < 2; ++b) {
    const h::Batch batch = h::make_batch(kRowsOfRank[b], kWidth, model->shape().vocab_size, 100 + b, torch::kCPU);
    losses.push_back(model->step(batch, h::parse_tier("sdpa-auto/loop"), 0.5));
  }
  torch::nn::utils::clip_grad_norm_(params, 1.0);
  adamw.step();
  const torch::Tensor single = flat_adapters(*model);
  REQUIRE((single - before).abs().max().item<double>() > 1e-3);  // the step moved the adapters
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<torch::Tensor> saved;
    torch::load(saved, out + std::to_string(rank));
    std::filesystem::remove(out + std::to_string(rank));
    CAPTURE(rank, (saved[1] - single).abs().max().item<double>());
    CHECK(std::abs(saved[0].item<double>() - losses[static_cast<size_t>(rank)].item<double>()) < 1e-5);
    CHECK(torch::allclose(saved[1], single, 0.0, 1e-5));
  }
}

}  // namespace

TEST_CASE("FSDP over two Gloo processes: the tiny Llama's losses and updated adapters are one process's",
          "[harness][distributed]") {
  check_fsdp_matches_one_process("tiny-llama");
}

TEST_CASE("FSDP over two Gloo processes: the tiny Gemma-4's losses and updated adapters are one process's",
          "[harness][distributed]") {
  check_fsdp_matches_one_process("tiny-gemma4");
}

TEST_CASE("DDP over two Gloo processes: every rank gets one process's gradients", "[harness][distributed]") {
  stepcast::testing::TempFile store("", ".store");
  std::filesystem::remove(store.path());
  const std::string out = store.path() + ".grad";
  const bool ok = run_ranks(2, [&](int rank) {
    h::ProcessGroupHandle group({rank, 2, store.path(), "gloo"});
    auto model = tiny_model();
    model->zero_grad();
    gradients(*model, {static_cast<size_t>(rank)});
    // Four-kilobyte buckets: the tiny model's adapters span several, as a real model's span several 25 MiB ones.
    const int64_t buckets = group.all_reduce_mean(model->adapter_parameters(), 4096);
    std::vector<torch::Tensor> flat;
    for (const auto& p : model->adapter_parameters()) flat.push_back(p.grad().reshape({-1}));
    torch::save(torch::cat(flat), out + std::to_string(rank));
    return buckets > 1 ? 0 : 3;
  });
  REQUIRE(ok);
  auto model = tiny_model();
  const torch::Tensor single = gradients(*model, {0, 1});  // one process, both micro-batches accumulated
  REQUIRE(single.abs().sum().item<double>() > 0);
  for (int rank = 0; rank < 2; ++rank) {
    torch::Tensor ddp;
    torch::load(ddp, out + std::to_string(rank));
    std::filesystem::remove(out + std::to_string(rank));
    CAPTURE(rank, (ddp - single).abs().max().item<double>());
    CHECK(torch::allclose(ddp, single, 1e-5, 1e-7));
  }
}

TEST_CASE("FSDP shards gather back into the full weight", "[harness][distributed]") {
  stepcast::testing::TempFile store("", ".store");
  std::filesystem::remove(store.path());
  const bool ok = run_ranks(3, [&](int rank) {
    h::ProcessGroupHandle group({rank, 3, store.path(), "gloo"});
    torch::manual_seed(11);
    const torch::Tensor weight = torch::randn({7, 5});  // 35 elements: not a multiple of 3, so the last pads
    const torch::Tensor shard = h::shard_of(weight, rank, 3);
    if (shard.numel() != 12) return 4;
    const torch::Tensor full = group.all_gather_flat(shard, weight.numel()).view_as(weight);
    return torch::equal(full, weight) ? 0 : 5;
  });
  CHECK(ok);
}

TEST_CASE("a bad rank or backend is refused before any rendezvous", "[harness][distributed]") {
  CHECK_THROWS_WITH(h::ProcessGroupHandle({2, 2, "/tmp/x", "gloo"}), Catch::Matchers::Contains("0 <= rank < world size"));
  CHECK_THROWS_WITH(h::ProcessGroupHandle({0, 2, "/tmp/x", "mpi"}), Catch::Matchers::Contains("gloo"));
}
