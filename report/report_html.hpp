#pragma once
// `stepcast plan --report FILE.html`: one self-contained HTML file (no scripts, no external files) with
// the plan's headline (DOES NOT FIT first when the baseline does not), a legend of the plan labels, and
// inline SVG charts that scale to the window (viewBox): wall clock by plan in s, min or h by magnitude,
// time per trained token (plans that truncate more train on less), padding by plan, step time vs width,
// memory vs tokens per micro-batch; then a table with every plan's group, vs-baseline saving, pad multiple,
// distinct shapes, first-seen seconds and optimizer step. Written atomically (temp file + rename).
#include <string>
#include <vector>

#include "planner/simulate.hpp"
#include "report/plan_output.hpp"

namespace stepcast::report {

struct ReportInput {
  const PlanOutput* plan = nullptr;
  std::vector<planner::BatchPoint> baseline_points;  // sampled micro-batches of the baseline
  std::vector<planner::BatchPoint> best_points;      // of the first recommendation
};

std::string report_html(const ReportInput& input);
void write_report(const std::string& path, const ReportInput& input);

// Seconds per trained token (the real tokens of every epoch after truncation); 0 for a plan with none.
double seconds_per_token(const planner::PlanResult& p);

}  // namespace stepcast::report
