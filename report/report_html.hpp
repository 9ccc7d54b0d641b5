#pragma once
// `stepcast plan --report FILE.html`: one self-contained HTML file (no scripts, no external files)
// with inline SVG charts: wall clock by plan, padding by plan, step time vs width, memory vs tokens
// per micro-batch, and a table with every plan's pad multiple, distinct shapes, first-seen seconds and
// optimizer step. Written atomically (temp file + rename).
#include <string>
#include <vector>

#include "planner/simulate.hpp"

namespace stepcast::report {

struct ReportInput {
  std::string title;
  std::vector<std::string> facts;                    // lines under the title (scenario, corpus, predictor)
  planner::PlanResult baseline;
  std::vector<planner::PlanResult> recommendations;  // ranked
  std::vector<planner::BatchPoint> baseline_points;  // sampled micro-batches of the baseline
  std::vector<planner::BatchPoint> best_points;      // of the first recommendation
  double window_hours = 0;
};

std::string plan_label(const planner::PlanResult& p);
std::string report_html(const ReportInput& input);
void write_report(const std::string& path, const ReportInput& input);

}  // namespace stepcast::report
