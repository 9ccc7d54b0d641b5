// `stepcast plan --format csv`: one row per plan, the baseline first, then the recommendations in rank order.
#include "report/plan_output.hpp"

namespace stepcast::report {
namespace {

std::string integer(int64_t n) { return std::to_string(n); }
std::string yes_no(bool b) { return b ? "true" : "false"; }

std::vector<std::string> plan_row(const std::string& rank, const std::string& group, const planner::PlanResult& p,
                                  const planner::PlanResult& baseline) {
  return {rank,
          group,
          plan_label(p),
          planner::policy_name(p.batching.policy),
          integer(p.batching.micro_batch),
          integer(p.accumulation),
          integer(p.batching.max_length),
          p.batching.policy == planner::Policy::sorted_buckets ? integer(p.batching.bucket_size) : "",
          integer(p.batching.pad_to_multiple_of),
          integer(p.distinct_shapes),
          integer(p.steps),
          csv_number(p.wall_clock_s),
          csv_number(saving_vs_baseline(p, baseline)),
          csv_number(p.padding_fraction),
          csv_number(p.peak_gib),
          csv_number(p.memory_limit_gib),
          yes_no(p.fits_memory),
          planner::verdict_name(p.memory.verdict),
          csv_number(p.memory.margin_gib),
          csv_number(p.reserved_peak_gib),
          yes_no(p.fits_window),
          integer(p.truncated.tokens),
          integer(planner::extra_truncated_tokens(p, baseline.truncated.tokens)),
          csv_number(p.first_seen_s),
          csv_number(p.optimizer.step_s),
          p.roots_per_window < 0 ? "" : csv_number(p.roots_per_window)};
}

}  // namespace

Table plan_table(const PlanOutput& o) {
  const auto& r = o.result;
  Table t;
  t.columns = {"rank",          "group",       "label",          "policy",          "micro_batch",      "accumulation",
               "max_length",    "bucket_size", "pad_to_multiple_of", "distinct_shapes", "steps",        "wall_clock_s",
               "saving_vs_baseline", "padding_fraction", "peak_gib", "memory_limit_gib", "fits_memory",  "memory_verdict", "margin_gib", "reserved_peak_gib", "fits_window",
               "truncated_tokens", "extra_truncated_tokens", "first_seen_s", "optimizer_step_s", "roots_per_window"};
  t.rows.push_back(plan_row("baseline", "baseline", r.baseline, r.baseline));
  for (size_t i = 0; i < r.recommendations.size(); ++i)
    t.rows.push_back(plan_row(std::to_string(i + 1), group_key(r.recommendations[i], r.baseline), r.recommendations[i],
                              r.baseline));
  return t;
}

}  // namespace stepcast::report
