#include "model/parallel.hpp"

#include <algorithm>
#include <cmath>

#include "model/counts.hpp"
#include "model/errors.hpp"

namespace stepcast::model {
namespace {

constexpr double kGB = 1e9;

// `total_s` of communication of which `exposed_s` is on the critical path: the rest is hidden behind compute,
// which it slows by `slowdown` of those hidden seconds.
CommCost overlapped(double total_s, double exposed_s, double slowdown) {
  const double hidden = std::max(0.0, total_s - exposed_s);
  return {total_s, exposed_s, slowdown * hidden};
}

CommCost& operator+=(CommCost& a, const CommCost& b) {
  a.total_s += b.total_s;
  a.exposed_s += b.exposed_s;
  a.slowdown_s += b.slowdown_s;
  return a;
}

// Gradients reduced in buckets while backward runs (torch DDP's Reducer): the buckets become ready evenly
// through the backward, one collective at a time runs on the communication stream, and whatever is still
// running when the backward ends is exposed (at least the last bucket, which is ready only then).
CommCost bucketed(Collective c, double bytes, double backward_s, const ParallelConfig& config, const Link& link) {
  if (bytes <= 0 || config.ranks <= 1) return {};
  const auto buckets = static_cast<int64_t>(std::ceil(bytes / config.bucket_bytes));
  double finish = 0, total = 0;
  for (int64_t i = 0; i < buckets; ++i) {
    const double size = std::min(config.bucket_bytes, bytes - static_cast<double>(i) * config.bucket_bytes);
    const double ready = backward_s * static_cast<double>(i + 1) / static_cast<double>(buckets);
    const double t = collective_s(c, size, config.ranks, link);
    finish = std::max(finish, ready) + t;
    total += t;
  }
  return overlapped(total, std::max(0.0, finish - backward_s), config.overlap_slowdown);
}

// One pass over the layers with a per-layer gather prefetched one layer ahead: the first gather is exposed,
// then each layer waits for the longer of its compute and the next gather.
CommCost gathered_pass(double gather_s, int64_t layers, double pass_compute_s, double slowdown) {
  if (gather_s <= 0) return {};
  const double per_layer = pass_compute_s / static_cast<double>(layers);
  const double exposed = gather_s + static_cast<double>(layers - 1) * std::max(0.0, gather_s - per_layer);
  return overlapped(gather_s * static_cast<double>(layers), exposed, slowdown);
}

// One all-to-all's buffer on one rank: its tokens, each sent to top_k experts, hidden_size wide.
double all_to_all_bytes(const ParallelWorkload& w, int64_t tokens) {
  return static_cast<double>(tokens) * static_cast<double>(w.top_k) * static_cast<double>(w.hidden_size) *
         static_cast<double>(w.activation_bytes);
}

double sharded_away(double bytes, int64_t ranks) {
  return bytes * static_cast<double>(ranks - 1) / static_cast<double>(ranks);
}

}  // namespace

std::string strategy_name(ParallelStrategy s) {
  switch (s) {
    case ParallelStrategy::ddp: return "ddp";
    case ParallelStrategy::fsdp: return "fsdp";
    case ParallelStrategy::ep: return "ep";
  }
  return "ddp";
}

ParallelStrategy parse_strategy(const std::string& name) {
  for (auto s : {ParallelStrategy::ddp, ParallelStrategy::fsdp, ParallelStrategy::ep})
    if (strategy_name(s) == name) return s;
  throw InputError("strategy '" + name + "'. Violated constraint: one of ddp, fsdp, ep");
}

double bus_factor(Collective c, int64_t ranks) {
  if (ranks <= 1) return 0;
  const double n = static_cast<double>(ranks);
  return c == Collective::all_reduce ? 2 * (n - 1) / n : (n - 1) / n;
}

int64_t ring_hops(Collective c, int64_t ranks) {
  if (ranks <= 1) return 0;
  return c == Collective::all_reduce ? 2 * (ranks - 1) : ranks - 1;
}

Link link_for(const Interconnect& ic, double efficiency, double alpha_s) {
  const double per_direction = ic.nvlink_gbps > 0 ? ic.nvlink_gbps : ic.pcie_gbps;
  return {per_direction * efficiency, alpha_s};
}

Link link_for(const GpuSpec& gpu) {
  Link link = link_for(gpu.interconnect);
  link.assembly_gbps = kLocalAssemblyHbmFraction * gpu.peaks.memory_gbs;
  return link;
}

double assembly_s(double bytes, const Link& link) {
  return link.assembly_gbps > 0 && bytes > 0 ? bytes / (link.assembly_gbps * kGB) : 0;
}

double collective_s(Collective c, double bytes, int64_t ranks, const Link& link) {
  if (ranks <= 1 || bytes <= 0) return 0;
  if (link.bus_gbps <= 0)
    throw InputError("no link bandwidth for a collective over " + std::to_string(ranks) +
                     " ranks. Violated constraint: the GPU's interconnect in scenarios/gpus.yaml (nvlink_gbps or "
                     "pcie_gbps)");
  return static_cast<double>(ring_hops(c, ranks)) * link.alpha_s + bytes * bus_factor(c, ranks) / (link.bus_gbps * kGB);
}

ComputeSplit split_step(double step_s, int64_t tokens) { return {step_s / 3.0, step_s * 2.0 / 3.0, tokens}; }

CommCost micro_batch_comm(const ParallelConfig& config, const ParallelWorkload& w, const ComputeSplit& compute,
                          const Link& link) {
  CommCost cost;
  if (config.ranks <= 1) return cost;
  if (config.strategy == ParallelStrategy::fsdp) {
    const int64_t layers = std::max<int64_t>(1, w.layers);
    const double layer_bytes = w.gathered_bytes() / static_cast<double>(layers);
    const double gather = collective_s(Collective::all_gather, layer_bytes, config.ranks, link) +
                          assembly_s(layer_bytes, link);
    cost += gathered_pass(gather, layers, compute.forward_s, config.overlap_slowdown);
    // Backward gathers each layer again, and a third time for the recompute under checkpointing.
    const double backward_gather = gather * (w.recompute ? 2.0 : 1.0);
    cost += gathered_pass(backward_gather, layers, compute.backward_s, config.overlap_slowdown);
    cost += bucketed(Collective::reduce_scatter, w.gradient_bytes, compute.backward_s, config, link);
  } else if (config.strategy == ParallelStrategy::ep && w.moe_layers > 0) {
    const double one = collective_s(Collective::all_to_all, all_to_all_bytes(w, compute.tokens), config.ranks, link);
    const double passes = w.recompute ? 3.0 : 2.0;  // forward, backward, and the recompute's forward
    const double t = one * 2.0 * passes * static_cast<double>(w.moe_layers);  // dispatch + combine
    cost += CommCost{t, t, 0};
  }
  return cost;
}

CommCost optimizer_step_comm(const ParallelConfig& config, const ParallelWorkload& w, const ComputeSplit& last,
                             const Link& link) {
  CommCost cost;
  if (config.ranks <= 1 || config.strategy == ParallelStrategy::fsdp) return cost;
  // ZeRO-2 reduce-scatters the gradients (each rank keeps its shard); DDP, EP's dense part and ZeRO-1
  // all-reduce them.
  const Collective reduce = config.zero_stage >= 2 ? Collective::reduce_scatter : Collective::all_reduce;
  cost += bucketed(reduce, w.gradient_bytes, last.backward_s, config, link);
  if (config.zero_stage >= 1) {
    // After the sharded update every rank gathers the updated parameters: nothing left to hide behind.
    const double t = collective_s(Collective::all_gather, w.trainable_bytes, config.ranks, link);
    cost += CommCost{t, t, 0};
  }
  return cost;
}

ParallelWorkload lora_workload(const ModelShape& shape, int64_t lora_rank, bool recompute) {
  const ModuleTable modules = expand_modules(shape);
  return lora_workload(shape, modules, plan_lora(modules, default_lora_targets(), lora_rank), recompute);
}

ParallelWorkload lora_workload(const ModelShape& shape, const ModuleTable& modules, const LoraPlan& lora_plan,
                               bool recompute, AdapterDtype adapter_dtype) {
  ParallelWorkload w;
  const ParamCounts params = count_params(shape, modules);
  const auto dtype = static_cast<double>(dtype_bytes(shape.dtype));
  w.weight_bytes = static_cast<double>(params.total) * dtype;
  const auto experts = params.by_component.find("experts");
  if (experts != params.by_component.end()) w.expert_weight_bytes = static_cast<double>(experts->second) * dtype;
  const auto lora = static_cast<double>(lora_plan.params);
  const double bytes = adapter_param_bytes(adapter_dtype);
  w.trainable_bytes = bytes * lora;
  w.gradient_bytes = bytes * lora;
  w.optimizer_state_bytes = 2.0 * bytes * lora;
  w.layers = std::max<int64_t>(1, shape.num_layers());
  w.moe_layers = shape.moe.num_experts > 0 ? shape.num_layers() : 0;
  w.hidden_size = shape.hidden_size;
  w.top_k = shape.moe.top_k;
  w.recompute = recompute;
  return w;
}

ParallelWorkload full_workload(const ModelShape& shape, const ModuleTable& modules, bool recompute, bool autocast) {
  ParallelWorkload w = lora_workload(shape, modules, LoraPlan{}, recompute);
  if (autocast)  // bf16 copies of the weights: 2 bytes a parameter
    w.gathered_weight_bytes = w.weight_bytes * 2.0 / static_cast<double>(dtype_bytes(shape.dtype));
  w.trainable_bytes = w.weight_bytes;
  w.trains_weights = true;
  w.gradient_bytes = w.weight_bytes;
  w.optimizer_state_bytes = 2 * w.weight_bytes;
  return w;
}

RankMemory rank_memory(const ParallelConfig& config, const ParallelWorkload& w, int64_t tokens) {
  RankMemory m;
  const int64_t n = config.ranks;
  if (n <= 1) return m;
  switch (config.strategy) {
    case ParallelStrategy::ddp:
      // The Reducer's buckets hold a second copy of the gradients (gradient_as_bucket_view off, the default).
      m.added_bytes = m.step_added_bytes = w.gradient_bytes;
      if (config.zero_stage >= 1) {
        m.saved_bytes += sharded_away(w.optimizer_state_bytes, n);
        m.optimizer_shard_share = 1.0 / static_cast<double>(n);
      }
      if (config.zero_stage >= 2) m.saved_bytes += sharded_away(w.gradient_bytes, n);
      break;
    case ParallelStrategy::fsdp: {
      // A full fine-tune's trainable parameters are the weights: counted once.
      const double params = w.weight_bytes + (w.trains_weights ? 0.0 : w.trainable_bytes);
      m.saved_bytes = sharded_away(params + w.gradient_bytes + w.optimizer_state_bytes, n);
      // The layer running and the one prefetched are whole (freed before the optimizer step).
      m.added_bytes = 2.0 * w.gathered_bytes() / static_cast<double>(std::max<int64_t>(1, w.layers));
      m.optimizer_shard_share = 1.0 / static_cast<double>(n);
      break;
    }
    case ParallelStrategy::ep:
      m.saved_bytes = sharded_away(w.expert_weight_bytes, n);
      // Dispatch's send and receive buffers, and DDP's bucket copy of the dense gradients.
      m.added_bytes = 2.0 * all_to_all_bytes(w, tokens) + w.gradient_bytes;
      m.step_added_bytes = w.gradient_bytes;
      break;
  }
  return m;
}

}  // namespace stepcast::model
