// Several GPUs (model/parallel.hpp): the alpha-beta collectives, the overlap rules and the memory per rank.
#include "catch.hpp"
#include "model/errors.hpp"
#include "model/gpus.hpp"
#include "model/parallel.hpp"

using namespace stepcast;
using namespace stepcast::model;

namespace {
const Link kLink{100.0, 0.0};  // 100 GB/s bus bandwidth, no latency: times are bytes x factor / 1e11
constexpr double kGiB = 1073741824.0;
}  // namespace

TEST_CASE("bus factors are NCCL's", "[parallel]") {
  CHECK(bus_factor(Collective::all_reduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(bus_factor(Collective::all_gather, 4) == Approx(0.75));
  CHECK(bus_factor(Collective::reduce_scatter, 2) == Approx(0.5));
  CHECK(bus_factor(Collective::all_to_all, 8) == Approx(7.0 / 8));
  CHECK(bus_factor(Collective::all_reduce, 1) == 0);
  CHECK(ring_hops(Collective::all_reduce, 4) == 6);
  CHECK(ring_hops(Collective::all_gather, 4) == 3);
}

TEST_CASE("a collective is latency plus bytes over bus bandwidth", "[parallel]") {
  // 1 GB all-reduced over 8 ranks at 100 GB/s: 1.75 GB on the bus, 17.5 ms, plus 14 hops of 5 us.
  const Link link{100.0, 5e-6};
  CHECK(collective_s(Collective::all_reduce, 1e9, 8, link) == Approx(0.0175 + 14 * 5e-6));
  CHECK(collective_s(Collective::all_gather, 1e9, 2, link) == Approx(0.005 + 5e-6));
  CHECK(collective_s(Collective::all_reduce, 1e9, 1, link) == 0);
  CHECK_THROWS_AS(collective_s(Collective::all_reduce, 1e9, 2, Link{}), InputError);
}

TEST_CASE("the H200's link is NVLink 4 at 450 GB/s per direction", "[parallel][gpus]") {
  const GpuSpec* h200 = find_gpu(known_gpus(), "NVIDIA H200");
  REQUIRE(h200 != nullptr);
  CHECK(h200->interconnect.nvlink_generation == 4);
  CHECK(h200->interconnect.nvlink_gbps == Approx(450));
  CHECK(h200->interconnect.pcie_generation == 5);
  CHECK(link_for(h200->interconnect).bus_gbps == Approx(450 * kDefaultBusEfficiency));
  // A PCIe-only card falls back to PCIe; an unknown one has no link.
  CHECK(link_for(find_gpu(known_gpus(), "NVIDIA L40S")->interconnect, 1.0).bus_gbps == Approx(32));
  CHECK(link_for(find_gpu(known_gpus(), "NVIDIA H200 NVL")->interconnect).bus_gbps == 0);
}

TEST_CASE("DDP hides every bucket but the last behind a long backward", "[parallel]") {
  ParallelWorkload w;
  w.gradient_bytes = 4 * kBucketBytes;  // four full buckets
  ParallelConfig c{ParallelStrategy::ddp, 4, 0, 0.1, kBucketBytes};
  const double bucket = collective_s(Collective::all_reduce, kBucketBytes, 4, kLink);
  const CommCost slow_comm = optimizer_step_comm(c, w, ComputeSplit{1.0, 10.0, 0}, kLink);
  CHECK(slow_comm.total_s == Approx(4 * bucket));
  CHECK(slow_comm.exposed_s == Approx(bucket));  // ready at the end of backward
  CHECK(slow_comm.slowdown_s == Approx(0.1 * 3 * bucket));
  // A backward shorter than the buckets exposes what it cannot hide.
  const CommCost fast = optimizer_step_comm(c, w, ComputeSplit{0, 1e-6, 0}, kLink);
  CHECK(fast.exposed_s == Approx(4 * bucket).epsilon(1e-3));
  // FSDP reduces its gradients per micro-batch instead.
  c.strategy = ParallelStrategy::fsdp;
  CHECK(optimizer_step_comm(c, w, ComputeSplit{1.0, 10.0, 0}, kLink).total_s == 0);
}

TEST_CASE("FSDP gathers every layer in forward and backward, the first exposed", "[parallel]") {
  ParallelWorkload w;
  w.weight_bytes = 10e9;
  w.layers = 10;
  ParallelConfig c{ParallelStrategy::fsdp, 2, 0, 0.0, kBucketBytes};
  const double layer = collective_s(Collective::all_gather, 1e9, 2, kLink);  // 5 ms
  // Compute per layer (0.1 s forward) longer than a gather: only the first of each pass shows.
  const CommCost hidden = micro_batch_comm(c, w, ComputeSplit{1.0, 2.0, 0}, kLink);
  CHECK(hidden.total_s == Approx(20 * layer));
  CHECK(hidden.exposed_s == Approx(2 * layer));
  // Checkpointing gathers a third time.
  w.recompute = true;
  CHECK(micro_batch_comm(c, w, ComputeSplit{1.0, 2.0, 0}, kLink).total_s == Approx(30 * layer));
  // No compute: every gather is exposed.
  w.recompute = false;
  CHECK(micro_batch_comm(c, w, ComputeSplit{0, 0, 0}, kLink).exposed_s == Approx(20 * layer));
}

TEST_CASE("FSDP's gather adds the local assembly of the layer at a fraction of HBM bandwidth", "[parallel]") {
  const GpuSpec* h200 = find_gpu(known_gpus(), "NVIDIA H200");
  REQUIRE(h200 != nullptr);
  const Link link = link_for(*h200);
  CHECK(link.bus_gbps == Approx(link_for(h200->interconnect).bus_gbps));
  CHECK(link.assembly_gbps == Approx(kLocalAssemblyHbmFraction * h200->peaks.memory_gbs));
  // A 1.6 GiB layer: the measured 0.86-1.11 ms on one H200 (1 to 8 shards).
  CHECK(assembly_s(1.6 * kGiB, link) * 1e3 == Approx(1.0).margin(0.15));
  ParallelWorkload w;
  w.weight_bytes = 10e9;
  w.layers = 10;
  ParallelConfig c{ParallelStrategy::fsdp, 2, 0, 0.0, kBucketBytes};
  Link with_assembly = kLink;
  with_assembly.assembly_gbps = 200;  // 1 GB layer: 5 ms on top of the 5 ms on the link
  const double on_link = micro_batch_comm(c, w, ComputeSplit{1.0, 2.0, 0}, kLink).total_s;
  CHECK(micro_batch_comm(c, w, ComputeSplit{1.0, 2.0, 0}, with_assembly).total_s == Approx(2 * on_link));
  CHECK(assembly_s(1e9, kLink) == 0);  // no rate: free, as before it was measured
}

TEST_CASE("the overlap slowdown is the measured 0.90 of the hidden seconds", "[parallel]") {
  CHECK(kDefaultOverlapSlowdown == Approx(0.90));
  ParallelWorkload w;
  w.gradient_bytes = 4 * kBucketBytes;
  const ParallelConfig c{ParallelStrategy::ddp, 4, 0, kDefaultOverlapSlowdown, kBucketBytes};
  const double bucket = collective_s(Collective::all_reduce, kBucketBytes, 4, kLink);
  CHECK(optimizer_step_comm(c, w, ComputeSplit{1.0, 10.0, 0}, kLink).slowdown_s == Approx(0.9 * 3 * bucket));
}

TEST_CASE("expert parallelism pays two all-to-alls per MoE layer and pass", "[parallel]") {
  ParallelWorkload w;
  w.moe_layers = 30;
  w.hidden_size = 2816;
  w.top_k = 8;
  ParallelConfig c{ParallelStrategy::ep, 8, 0, 0.1, kBucketBytes};
  const int64_t tokens = 4096;
  const double one = collective_s(Collective::all_to_all, 4096.0 * 8 * 2816 * 2, 8, kLink);
  const CommCost cost = micro_batch_comm(c, w, ComputeSplit{1, 2, tokens}, kLink);
  CHECK(cost.total_s == Approx(one * 2 * 2 * 30));
  CHECK(cost.exposed_s == Approx(cost.total_s));
}

TEST_CASE("memory per rank: FSDP shards, ZeRO shards the optimizer, EP the experts", "[parallel]") {
  ParallelWorkload w;
  w.weight_bytes = 48 * kGiB;
  w.layers = 30;
  w.gradient_bytes = 1 * kGiB;
  w.trainable_bytes = 1 * kGiB;
  w.optimizer_state_bytes = 2 * kGiB;
  w.expert_weight_bytes = 40 * kGiB;
  ParallelConfig c{ParallelStrategy::fsdp, 4, 0, 0.1, kBucketBytes};
  const RankMemory fsdp = rank_memory(c, w, 0);
  CHECK(fsdp.saved_bytes == Approx((48 + 1 + 1 + 2) * kGiB * 0.75));
  CHECK(fsdp.added_bytes == Approx(2 * 48 * kGiB / 30));
  c.strategy = ParallelStrategy::ddp;
  CHECK(rank_memory(c, w, 0).delta_gib() == Approx(1.0));  // the bucket copy of the gradients
  c.zero_stage = 1;
  CHECK(rank_memory(c, w, 0).delta_gib() == Approx(1.0 - 1.5));
  c.zero_stage = 2;
  CHECK(rank_memory(c, w, 0).delta_gib() == Approx(1.0 - 1.5 - 0.75));
  c.zero_stage = 0;
  c.strategy = ParallelStrategy::ep;
  w.top_k = 8;
  w.hidden_size = 1024;
  CHECK(rank_memory(c, w, 1024).saved_bytes == Approx(30 * kGiB));
  CHECK(rank_memory(c, w, 1024).added_bytes == Approx(2.0 * 1024 * 8 * 1024 * 2 + kGiB));
  c.ranks = 1;
  CHECK(rank_memory(c, w, 1024).delta_gib() == 0);
}

TEST_CASE("a full fine-tune's weights are its trainable parameters: FSDP shards them once", "[parallel]") {
  ParallelWorkload w;
  w.weight_bytes = w.trainable_bytes = w.gradient_bytes = 8 * kGiB;
  w.trains_weights = true;
  w.optimizer_state_bytes = 16 * kGiB;
  w.layers = 16;
  ParallelConfig c{ParallelStrategy::fsdp, 8, 0, 0.1, kBucketBytes};
  const RankMemory fsdp = rank_memory(c, w, 0);
  CHECK(fsdp.saved_bytes == Approx((8 + 8 + 16) * kGiB * 7 / 8));
  // At the optimizer step the gathered layers are gone and AdamW runs over an eighth of the parameters.
  CHECK(fsdp.step_delta_gib() == Approx(-32.0 * 7 / 8));
  CHECK(fsdp.optimizer_shard_share == Approx(1.0 / 8));
  c.strategy = ParallelStrategy::ddp;
  CHECK(rank_memory(c, w, 0).step_delta_gib() == Approx(8.0));  // the bucket copy stays
  CHECK(rank_memory(c, w, 0).optimizer_shard_share == 1.0);
  c.zero_stage = 1;
  CHECK(rank_memory(c, w, 0).optimizer_shard_share == Approx(1.0 / 8));
}

TEST_CASE("strategy names parse, others are refused", "[parallel]") {
  CHECK(parse_strategy("fsdp") == ParallelStrategy::fsdp);
  CHECK(strategy_name(ParallelStrategy::ep) == "ep");
  CHECK_THROWS_WITH(parse_strategy("zero3"), Catch::Matchers::Contains("one of ddp, fsdp, ep"));
}
