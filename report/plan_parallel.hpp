#pragma once
// `stepcast plan` on several GPUs (planner/distributed.hpp): the scenario's N-GPU run, with its straggler time
// per step, and the sweep over N and strategies ranked by wall clock and by GPU-hours, as text and as JSON.
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "planner/distributed.hpp"

namespace stepcast::report {

struct ParallelOutput {
  std::string gpu_name;
  std::string link;                                 // the link in words, e.g. "NVLink 4, 360 GB/s bus bandwidth"
  planner::DistributedPlan baseline;                // the scenario's (or the flags') N-GPU run
  std::vector<planner::DistributedPlan> by_wall_clock;  // empty without a sweep
  std::vector<planner::DistributedPlan> by_gpu_hours;
  int64_t skipped = 0;                              // GPU counts that do not divide the rows per step
  int64_t one_gpu_rows_per_step = 0;                // the scenario's micro_batch x accumulation on one GPU
};

// What the N-GPU plan trains per optimizer step, in words: micro-batch and accumulation are per rank, so a step
// trains N x R x accumulation rows; when that differs from the one-GPU plan's R x accumulation, the line says by
// how much and which per-rank accumulation would keep the one-GPU rows per step.
std::string batch_semantics_text(const ParallelOutput& o);

// "ddp x4 distributed": strategy, GPUs, sampler.
std::string parallel_label(const planner::DistributedPlan& p);
// The straggler time per step, in words: "0.42 s per step (12.3 % of a 3.41 s step)".
std::string straggler_text(const planner::DistributedPlan& p);

void print_parallel_text(std::ostream& out, const ParallelOutput& o);
nlohmann::json parallel_json(const ParallelOutput& o);

}  // namespace stepcast::report
