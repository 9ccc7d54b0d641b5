#pragma once
// Several GPUs: what data parallelism (DDP), fully sharded data parallelism (FSDP full shard / ZeRO-3),
// ZeRO-1/2 and expert parallelism add to a step and take from a rank's memory. Pure arithmetic, no I/O.
//
// A collective of S bytes over n ranks costs, by the alpha-beta model of a ring (docs/planner.md,
// "Several GPUs"):
//   t = hops * alpha + S * bus_factor(n) / bus_bandwidth
// with NCCL's bus-bandwidth factors (nccl-tests' PERFORMANCE.md): all-reduce 2(n-1)/n (hops 2(n-1));
// all-gather, reduce-scatter and all-to-all (n-1)/n (hops n-1). S is the full buffer: the all-reduced
// gradients, the gathered (unsharded) weights, the scattered gradients, the tokens one rank sends and receives.
// bus_bandwidth is what NCCL reaches on the link (GpuSpec's per-direction figure times an efficiency).
//
// Per optimizer step (accumulation micro-batches on every rank):
//   DDP   gradients all-reduced once (the last micro-batch of a window, the others under no_sync) in
//         buckets of 25 MiB as backward produces them; every bucket but the last overlaps the backward.
//   FSDP  every micro-batch: a per-layer all-gather of the sharded weights in forward, again in the
//         recompute and in backward (prefetched one layer ahead, so all but the first overlap the layer's
//         compute), and a reduce-scatter of the trainable gradients (overlapped with backward like DDP's).
//   EP    every micro-batch: an all-to-all dispatch and an all-to-all combine per MoE layer, in forward and
//         in backward (and the recompute), on the critical path (the next layer needs its tokens).
// Hidden communication slows the compute it overlaps by `overlap_slowdown` of the hidden seconds (both use
// SMs and HBM); measured on one H200 (docs/planner.md, "Several GPUs"). FSDP's gather also pays the local
// assembly of the gathered shards into the full layer, at a measured fraction of the GPU's HBM bandwidth.
#include <cstdint>
#include <string>

#include "model/adapters.hpp"
#include "model/counts.hpp"
#include "model/gpus.hpp"

namespace stepcast::model {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all };
enum class ParallelStrategy { ddp, fsdp, ep };

std::string strategy_name(ParallelStrategy s);  // "ddp", "fsdp", "ep"
// "ddp", "fsdp" or "ep"; throws stepcast::InputError naming the three for anything else.
ParallelStrategy parse_strategy(const std::string& name);

// NCCL's bus-bandwidth factor: bytes each rank moves per byte of the buffer (nccl-tests' PERFORMANCE.md).
double bus_factor(Collective c, int64_t ranks);
// Sequential ring hops, each paying the latency alpha.
int64_t ring_hops(Collective c, int64_t ranks);

// The link a collective runs over.
struct Link {
  double bus_gbps = 0;   // bus bandwidth NCCL reaches, GB/s (10^9 bytes) per direction
  double alpha_s = 0;    // latency per ring hop, seconds
  double assembly_gbps = 0;  // FSDP: GB/s written copying gathered shards into the full layer (0: free)
};

// NCCL reaches about 80 % of the per-direction NVLink figure as bus bandwidth on large all-reduces; a default
// until several H200s measure it (docs/planner.md, "Several GPUs"; the script for it is history, docs/campaigns.md).
inline constexpr double kDefaultBusEfficiency = 0.80;
// Latency per hop of NCCL's ring on NVLink, seconds: a default of the order of nccl-tests' small-message
// times (tens of microseconds for an 8-rank all-reduce), until measured.
inline constexpr double kDefaultHopLatencyS = 5e-6;
// Fraction of the hidden communication seconds that the overlapped compute loses (SMs and HBM shared with the
// collective's kernels): 0.90 measured on one H200, 8192^3 bf16 GEMMs beside a stream of 1 GiB device copies
// (docs/planner.md, "Several GPUs"). A copy stream stands in for NCCL's kernels, which also take SMs.
inline constexpr double kDefaultOverlapSlowdown = 0.90;
// FSDP's local assembly of a gathered layer (the shards copied into the full buffer) writes at this fraction
// of the GPU's HBM bandwidth: 1.55-2.00 TB/s written of the H200's 4.8 TB/s for 1 to 8 shards of a 1.6 GiB
// layer, 0.86-1.11 ms (docs/planner.md, "Several GPUs"); the slower half of those, rounded.
inline constexpr double kLocalAssemblyHbmFraction = 0.35;
// DDP's and FSDP's gradient bucket (torch DistributedDataParallel's bucket_cap_mb = 25), bytes.
inline constexpr double kBucketBytes = 25.0 * 1024 * 1024;

// The link from a GPU's interconnect figures: NVLink when the card has it, else PCIe; 0 GB/s when neither
// is known (the caller refuses to plan several GPUs without a link).
Link link_for(const Interconnect& ic, double efficiency = kDefaultBusEfficiency,
              double alpha_s = kDefaultHopLatencyS);
// The same with FSDP's local assembly rate from the card's HBM bandwidth (kLocalAssemblyHbmFraction).
Link link_for(const GpuSpec& gpu);
// Seconds to copy `bytes` of gathered shards into the full layer (0 when the link has no assembly rate).
double assembly_s(double bytes, const Link& link);

// Seconds of one collective of `bytes` over `ranks` (0 for one rank or no bytes).
double collective_s(Collective c, double bytes, int64_t ranks, const Link& link);

// What the strategies move and keep, from the model and its trainable parameters, bytes.
struct ParallelWorkload {
  double weight_bytes = 0;          // every weight of the model (the frozen base and the trainable ones)
  double expert_weight_bytes = 0;   // the routed experts' part of weight_bytes (0: dense model)
  double trainable_bytes = 0;       // trainable parameters, in their own dtype
  bool trains_weights = false;      // a full fine-tune: the trainable parameters are the weights, not extra ones
  // What FSDP all-gathers: the weights in the compute dtype. Mixed precision (fp32 master weights under bf16
  // autocast) gathers bf16 copies, as FSDP's MixedPrecision(param_dtype=bf16) in Composer's and accelerate's
  // bf16 recipes does; 0: weight_bytes.
  double gathered_weight_bytes = 0;
  double gathered_bytes() const { return gathered_weight_bytes > 0 ? gathered_weight_bytes : weight_bytes; }
  double gradient_bytes = 0;        // their gradients (what DDP all-reduces, FSDP reduce-scatters)
  double optimizer_state_bytes = 0; // AdamW's states (and master weights) of the trainable parameters
  int64_t layers = 1;               // decoder layers (FSDP wraps and gathers one at a time)
  int64_t moe_layers = 0;           // layers with routed experts
  int64_t hidden_size = 0;
  int64_t top_k = 0;                // experts per token
  int64_t activation_bytes = 2;     // bytes per activation element (bf16)
  bool recompute = false;           // gradient checkpointing: FSDP gathers a third time, EP dispatches again
};

// A LoRA fine-tune's workload (peft's default targets at `lora_rank`): frozen weights in the config's dtype,
// adapters and their gradients in fp32 (as model/features.cpp charges them), AdamW's two fp32 states.
struct ModelShape;
ParallelWorkload lora_workload(const ModelShape& shape, int64_t lora_rank, bool recompute);
// The same for the adapters `lora` of the shape's module table, expanded once by the caller (model/modules.hpp);
// bf16 adapters (`dtype`) keep parameters, gradients and states in 2 bytes.
ParallelWorkload lora_workload(const ModelShape& shape, const ModuleTable& modules, const LoraPlan& lora, bool recompute,
                               AdapterDtype dtype = AdapterDtype::float32);

// A full fine-tune's workload: every weight trains in its dtype, with a gradient and AdamW's two states like it
// (torch.optim.AdamW keeps them in the parameter's dtype), as model/memory.cpp charges them.
// `autocast`: fp32 master weights under bf16 compute gather bf16 copies (gathered_weight_bytes).
ParallelWorkload full_workload(const ModelShape& shape, const ModuleTable& modules, bool recompute, bool autocast = false);

// The time one rank spends on a micro-batch, split as the collectives see it, seconds.
struct ComputeSplit {
  double forward_s = 0;
  double backward_s = 0;            // backward and the recompute
  int64_t tokens = 0;               // processed tokens of the micro-batch (rows x width)
};
// A micro-batch's step_s split one third forward, two thirds backward (the 1:2 FLOP ratio of a GEMM's
// forward and its two backward products; docs/planner.md, "Several GPUs").
ComputeSplit split_step(double step_s, int64_t tokens);

struct ParallelConfig {
  ParallelStrategy strategy = ParallelStrategy::ddp;
  int64_t ranks = 1;
  int zero_stage = 0;              // DDP only: 1 shards the optimizer states, 2 the gradients too
  double overlap_slowdown = kDefaultOverlapSlowdown;
  double bucket_bytes = kBucketBytes;
};

// Communication of one micro-batch on one rank, seconds.
struct CommCost {
  double total_s = 0;     // every collective, end to end
  double exposed_s = 0;   // the part on the critical path (not hidden behind compute)
  double slowdown_s = 0;  // compute lost to the hidden part (overlap_slowdown x hidden seconds)
  double added_s() const { return exposed_s + slowdown_s; }
};

// Per micro-batch, for FSDP and EP (their collectives run in every micro-batch).
CommCost micro_batch_comm(const ParallelConfig& config, const ParallelWorkload& w, const ComputeSplit& compute,
                          const Link& link);
// Once per optimizer step, for DDP (the gradient all-reduce of the window's last micro-batch) and for
// ZeRO-1/2's parameter all-gather after the update; `last` is that micro-batch's split.
CommCost optimizer_step_comm(const ParallelConfig& config, const ParallelWorkload& w, const ComputeSplit& last,
                             const Link& link);

// A rank's memory against the one-GPU run's, bytes: peak = one-GPU peak - saved + added.
struct RankMemory {
  double saved_bytes = 0;   // sharded weights, gradients and optimizer states a rank no longer holds
  double added_bytes = 0;   // gathered layers, gradient buckets, all-to-all buffers
  // At the optimizer step: what is still added then (DDP's bucket copy; FSDP's gathered layers are freed) and the
  // share of the trained parameters its optimizer step runs over (AdamW and the clip over its own shards only:
  // that share of the one-GPU temporaries and of the update seconds).
  double step_added_bytes = 0;
  double optimizer_shard_share = 1.0;
  double delta_gib() const { return (added_bytes - saved_bytes) / 1073741824.0; }
  double step_delta_gib() const { return (step_added_bytes - saved_bytes) / 1073741824.0; }
};
// `tokens` is the micro-batch's processed tokens (for EP's all-to-all buffers).
RankMemory rank_memory(const ParallelConfig& config, const ParallelWorkload& w, int64_t tokens);

}  // namespace stepcast::model
