#include "report/plan_parallel.hpp"

#include <cstdio>
#include <ostream>

#include "report/format.hpp"

namespace stepcast::report {
namespace {

std::string fits_text(const planner::DistributedPlan& p) {
  if (p.memory.verdict == planner::MemoryVerdict::out_of_memory) return "OOM";
  if (!p.fits_window) return "late";
  return p.memory.verdict == planner::MemoryVerdict::at_risk ? "at risk" : "yes";
}

void print_row(std::ostream& out, size_t rank, const planner::DistributedPlan& p) {
  char buf[400];
  std::snprintf(buf, sizeof buf, "  %-4zu %-28s %4lld %9s %9s %9s %10s %8s %9s  %s\n", rank, parallel_label(p).c_str(),
                static_cast<long long>(p.accumulation), duration(p.wall_clock_s).c_str(), fixed(p.gpu_hours, 2).c_str(),
                fixed(p.mean_step_s, 2).c_str(), fixed(p.straggler_per_step_s, 3).c_str(),
                percent(p.padding_fraction, 2).c_str(), (fixed(p.peak_gib, 1) + (p.memory.verdict == planner::MemoryVerdict::out_of_memory ? "!" : "")).c_str(),
                fits_text(p).c_str());
  out << buf;
}

void print_ranking(std::ostream& out, const std::string& title, const std::vector<planner::DistributedPlan>& plans) {
  out << title << "\n";
  char buf[300];
  std::snprintf(buf, sizeof buf, "  %-4s %-28s %4s %9s %9s %9s %10s %8s %9s  %s\n", "rank", "strategy x gpus sampler",
                "acc", "wall", "GPU-h", "step s", "straggler", "padding", "peak GiB", "fits");
  out << buf;
  for (size_t i = 0; i < plans.size(); ++i) print_row(out, i + 1, plans[i]);
}

nlohmann::json plan_json(const planner::DistributedPlan& p) {
  return {{"label", parallel_label(p)},
          {"gpus", p.parallel.gpus},
          {"strategy", model::strategy_name(p.parallel.strategy)},
          {"sampler", planner::sampler_name(p.parallel.sampler)},
          {"micro_batch_per_rank", p.micro_batch},
          {"accumulation", p.accumulation},
          {"accumulation_per_rank", p.accumulation},
          {"rows_per_step", p.rows_per_step()},
          {"steps", p.steps},
          {"wall_clock_s", p.wall_clock_s},
          {"gpu_hours", p.gpu_hours},
          {"mean_step_s", p.mean_step_s},
          {"straggler_per_step_s", p.straggler_per_step_s},
          {"straggler_s", p.straggler_s},
          {"breakdown_s",
           {{"compute", p.compute_s}, {"collectives", p.comm_added_s}, {"optimizer", p.optimizer_s},
            {"first_seen", p.first_seen_s}}},
          {"padding_fraction", p.padding_fraction},
          {"peak_gib_per_rank", p.peak_gib},
          {"memory_limit_gib", p.memory_limit_gib},
          {"fits_memory", p.fits_memory},
          {"memory_verdict", planner::verdict_name(p.memory.verdict)},
          {"usable_gib", p.memory.usable_gib},
          {"margin_gib", p.memory.margin_gib},
          {"reserved_peak_gib_per_rank", p.reserved_peak_gib},
          {"memory_risks", p.memory.risks},
          {"fits_window", p.fits_window}};
}

}  // namespace

std::string parallel_label(const planner::DistributedPlan& p) {
  return model::strategy_name(p.parallel.strategy) + " x" + std::to_string(p.parallel.gpus) + " " +
         planner::sampler_name(p.parallel.sampler);
}

std::string straggler_text(const planner::DistributedPlan& p) {
  const double share = p.mean_step_s > 0 ? p.straggler_per_step_s / p.mean_step_s : 0;
  return fixed(p.straggler_per_step_s, 3) + " s per step (" + percent(share, 1) + " of a " + fixed(p.mean_step_s, 2) +
         " s step)";
}

std::string batch_semantics_text(const ParallelOutput& o) {
  const auto& b = o.baseline;
  const int64_t n = b.parallel.gpus;
  std::string text = "micro-batch and accumulation are per rank: " + std::to_string(b.micro_batch) + " rows x " +
                     std::to_string(b.accumulation) + " micro-batch" + (b.accumulation == 1 ? "" : "es") + " x " +
                     std::to_string(n) + " ranks = " + with_commas(b.rows_per_step()) + " rows per optimizer step";
  const int64_t one = o.one_gpu_rows_per_step;
  if (one <= 0 || one == b.rows_per_step()) return text;
  text += ", " + fixed(static_cast<double>(b.rows_per_step()) / static_cast<double>(one), 2) + "x the " +
          with_commas(one) + " that R" + std::to_string(b.micro_batch) + "x" + std::to_string(b.accumulation) +
          " trains on one GPU";
  const int64_t per_accumulation = b.micro_batch * n;
  if (per_accumulation > 0 && one % per_accumulation == 0)
    text += "; --accumulation " + std::to_string(one / per_accumulation) + " keeps " + with_commas(one) +
            " rows per step on " + std::to_string(n) + " GPUs";
  return text;
}

void print_parallel_text(std::ostream& out, const ParallelOutput& o) {
  const auto& b = o.baseline;
  out << "on " << b.parallel.gpus << " GPUs (" << o.gpu_name << ", " << o.link << "): " << parallel_label(b) << ", "
      << b.accumulation << " micro-batch" << (b.accumulation == 1 ? "" : "es") << " per rank per step -> " << duration(b.wall_clock_s) << ", " << fixed(b.gpu_hours, 2)
      << " GPU-hours, peak " << fixed(b.peak_gib, 1) << " GiB per rank of " << fixed(b.memory.usable_gib, 1)
      << " usable, margin " << fixed(b.memory.margin_gib, 1) << " GiB ("
      << (b.memory.verdict == planner::MemoryVerdict::out_of_memory ? "OUT OF MEMORY" : fits_text(b)) << ")\n";
  out << "  " << batch_semantics_text(o) << "\n";
  out << "  " << with_commas(b.steps) << " optimizer steps; straggler " << straggler_text(b) << "; collectives "
      << duration(b.comm_added_s) << " not hidden (with the overlap slowdown), compute " << duration(b.compute_s)
      << ", padding " << percent(b.padding_fraction, 2) << "\n";
  if (o.by_wall_clock.empty()) return;
  out << "\n";
  print_ranking(out, "several GPUs, same rows per optimizer step, by wall clock:", o.by_wall_clock);
  print_ranking(out, "the same plans by GPU-hours:", o.by_gpu_hours);
  if (o.skipped > 0) out << "  (" << o.skipped << " GPU counts skipped: they do not divide the rows per step)\n";
}

nlohmann::json parallel_json(const ParallelOutput& o) {
  nlohmann::json j{{"gpu", o.gpu_name},
                   {"link", o.link},
                   {"batch_semantics", "per_rank"},
                   {"batch_semantics_text", batch_semantics_text(o)},
                   {"one_gpu_rows_per_step", o.one_gpu_rows_per_step},
                   {"baseline", plan_json(o.baseline)}};
  j["by_wall_clock"] = nlohmann::json::array();
  for (const auto& p : o.by_wall_clock) j["by_wall_clock"].push_back(plan_json(p));
  j["by_gpu_hours"] = nlohmann::json::array();
  for (const auto& p : o.by_gpu_hours) j["by_gpu_hours"].push_back(plan_json(p));
  j["skipped_gpu_counts"] = o.skipped;
  return j;
}

}  // namespace stepcast::report
