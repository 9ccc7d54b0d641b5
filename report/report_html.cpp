#include "report/report_html.hpp"

#include "io/atomic_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "report/format.hpp"
#include "model/errors.hpp"
#include "planner/batching.hpp"

namespace stepcast::report {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, int digits = 1) { return fixed(v, digits); }

// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten, at least `v`.
double nice_ceiling(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

struct Bar {
  std::string label;
  double value = 0;
  bool highlight = false;  // the baseline
  bool bad = false;        // misses the window / out of memory
};

constexpr int kChartWidth = 1000;
constexpr int kLabelWidth = 330;

// Horizontal bars, one per plan, with an optional reference line (the window).
std::string bar_chart(const std::string& title, const std::vector<Bar>& bars, const std::string& unit, int digits,
                      double reference = -1, const std::string& reference_label = "") {
  const int row = 24, top = 40, bottom = 36;
  const int height = top + row * static_cast<int>(bars.size()) + bottom;
  double max_v = reference;
  for (const auto& b : bars) max_v = std::max(max_v, b.value);
  const double axis = nice_ceiling(max_v * 1.05);
  const double plot_w = kChartWidth - kLabelWidth - 80;
  auto x = [&](double v) { return kLabelWidth + plot_w * v / axis; };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kChartWidth << "' height='" << height << "' role='img'>\n"
    << "<text x='10' y='22' class='title'>" << escape(title) << "</text>\n";
  for (int i = 0; i <= 5; ++i) {
    const double v = axis * i / 5;
    s << "<line x1='" << x(v) << "' y1='" << top - 6 << "' x2='" << x(v) << "' y2='" << height - bottom
      << "' class='grid'/><text x='" << x(v) << "' y='" << height - bottom + 16 << "' class='tick'>" << num(v, digits)
      << "</text>\n";
  }
  s << "<text x='" << kLabelWidth + plot_w / 2 << "' y='" << height - 4 << "' class='axis'>" << escape(unit) << "</text>\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const int y = top + row * static_cast<int>(i);
    s << "<text x='" << kLabelWidth - 8 << "' y='" << y + 16 << "' class='label'>" << escape(b.label) << "</text>"
      << "<rect x='" << kLabelWidth << "' y='" << y + 4 << "' width='" << std::max(1.0, x(b.value) - kLabelWidth)
      << "' height='" << row - 8 << "' class='" << (b.bad ? "bad" : b.highlight ? "base" : "bar") << "'/>"
      << "<text x='" << x(b.value) + 6 << "' y='" << y + 16 << "' class='value'>" << num(b.value, digits) << "</text>\n";
  }
  if (reference > 0)
    s << "<line x1='" << x(reference) << "' y1='" << top - 10 << "' x2='" << x(reference) << "' y2='"
      << height - bottom << "' class='ref'/><text x='" << x(reference) + 4 << "' y='" << top - 12 << "' class='reflabel'>"
      << escape(reference_label) << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

struct Series {
  std::string name;
  std::string css;
  std::vector<std::pair<double, double>> xy;
};

std::string scatter(const std::string& title, const std::vector<Series>& series, const std::string& x_unit,
                    const std::string& y_unit, double reference_y = -1, const std::string& reference_label = "") {
  const int height = 400, left = 80, right = 30, top = 64, bottom = 50;
  double max_x = 0, max_y = reference_y;
  for (const auto& se : series)
    for (const auto& [vx, vy] : se.xy) {
      max_x = std::max(max_x, vx);
      max_y = std::max(max_y, vy);
    }
  const double ax = nice_ceiling(max_x * 1.02), ay = nice_ceiling(max_y * 1.05);
  const double pw = kChartWidth - left - right, ph = height - top - bottom;
  auto px = [&](double v) { return left + pw * v / ax; };
  auto py = [&](double v) { return top + ph - ph * v / ay; };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kChartWidth << "' height='" << height << "' role='img'>\n"
    << "<text x='10' y='22' class='title'>" << escape(title) << "</text>\n";
  for (int i = 0; i <= 5; ++i) {
    const double vx = ax * i / 5, vy = ay * i / 5;
    s << "<line x1='" << px(vx) << "' y1='" << top << "' x2='" << px(vx) << "' y2='" << top + ph << "' class='grid'/>"
      << "<text x='" << px(vx) << "' y='" << top + ph + 16 << "' class='tick'>" << num(vx, 0) << "</text>"
      << "<line x1='" << left << "' y1='" << py(vy) << "' x2='" << left + pw << "' y2='" << py(vy) << "' class='grid'/>"
      << "<text x='" << left - 6 << "' y='" << py(vy) + 4 << "' class='label'>" << num(vy, ay < 10 ? 1 : 0)
      << "</text>\n";
  }
  s << "<text x='" << left + pw / 2 << "' y='" << height - 8 << "' class='axis'>" << escape(x_unit) << "</text>"
    << "<text x='16' y='" << top + ph / 2 << "' class='axis' transform='rotate(-90 16 " << top + ph / 2 << ")'>"
    << escape(y_unit) << "</text>\n";
  if (reference_y > 0)
    s << "<line x1='" << left << "' y1='" << py(reference_y) << "' x2='" << left + pw << "' y2='" << py(reference_y)
      << "' class='ref'/><text x='" << left + 6 << "' y='" << py(reference_y) - 5 << "' class='reflabel'>"
      << escape(reference_label) << "</text>\n";
  int legend_x = left;
  for (const auto& se : series) {
    for (const auto& [vx, vy] : se.xy)
      s << "<circle cx='" << px(vx) << "' cy='" << py(vy) << "' r='3' class='" << se.css << "'/>";
    s << "\n<circle cx='" << legend_x << "' cy='40' r='5' class='" << se.css << "'/><text x='" << legend_x + 10
      << "' y='45' class='legend'>" << escape(se.name) << "</text>\n";
    legend_x += 420;
  }
  s << "</svg>\n";
  return s.str();
}

std::vector<std::pair<double, double>> points(const std::vector<planner::BatchPoint>& pts, bool memory) {
  std::vector<std::pair<double, double>> xy;
  for (const auto& p : pts)
    xy.emplace_back(memory ? static_cast<double>(p.rows * p.width) : static_cast<double>(p.width),
                    memory ? p.peak_gib : p.step_s);
  return xy;
}

std::string table(const ReportInput& in) {
  std::ostringstream s;
  s << "<table><tr><th>#</th><th>plan</th><th>pad to multiple of</th><th>steps</th><th>wall clock (h)</th><th>padding</th>"
       "<th>distinct shapes</th><th>first-seen s</th><th>optimizer step s</th><th>peak GiB</th>"
       "<th>truncated tokens</th><th>roots / window</th><th>fits window</th></tr>\n";
  auto row = [&](const std::string& rank, const planner::PlanResult& p) {
    s << "<tr><td>" << rank << "</td><td>" << escape(plan_label(p)) << "</td><td>" << p.batching.pad_to_multiple_of
      << "</td><td>" << with_commas(p.steps) << "</td><td>" << num(p.wall_clock_s / 3600, 2) << "</td><td>"
      << num(100 * p.padding_fraction, 2) << " %</td><td>" << with_commas(p.distinct_shapes) << "</td><td>"
      << num(p.first_seen_s, 1) << "</td><td>" << num(p.optimizer.step_s, 4) << "</td><td>" << num(p.peak_gib, 1) << (p.fits_memory ? "" : " (OOM)") << "</td><td>" << with_commas(p.truncated.tokens)
      << "</td><td>" << (p.roots_per_window < 0 ? std::string("-") : num(p.roots_per_window, 1)) << "</td><td>"
      << (p.fits_window ? "yes" : "no") << "</td></tr>\n";
  };
  row("baseline", in.baseline);
  for (size_t i = 0; i < in.recommendations.size(); ++i) row(std::to_string(i + 1), in.recommendations[i]);
  s << "</table>\n";
  return s.str();
}

const char* kStyle = R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1040px; }
h1 { font-size: 22px; margin-bottom: 4px; } p.fact { margin: 2px 0; color: #444; }
svg { display: block; margin: 18px 0; background: #fff; border: 1px solid #ddd; }
.title { font-size: 15px; font-weight: 600; } .tick { font-size: 11px; text-anchor: middle; fill: #555; }
.label { font-size: 12px; text-anchor: end; fill: #333; } .value { font-size: 11px; fill: #333; }
.axis { font-size: 12px; text-anchor: middle; fill: #333; } .legend { font-size: 12px; fill: #333; }
.grid { stroke: #eee; } .ref { stroke: #c0392b; stroke-width: 2; stroke-dasharray: 6 4; }
.reflabel { font-size: 12px; fill: #c0392b; }
.bar { fill: #4a90d9; } .base { fill: #8e8e8e; } .bad { fill: #e67e22; }
.pbase { fill: #8e8e8e; fill-opacity: 0.7; } .pbest { fill: #27ae60; fill-opacity: 0.7; }
table { border-collapse: collapse; font-size: 12px; } td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
td:nth-child(2) { text-align: left; }
</style>)";

}  // namespace

std::string plan_label(const planner::PlanResult& p) {
  std::string label = planner::policy_name(p.batching.policy) + " R" + std::to_string(p.batching.micro_batch) + "x" +
                      std::to_string(p.accumulation) + " L" + std::to_string(p.batching.max_length);
  if (p.batching.policy == planner::Policy::sorted_buckets) label += " k" + std::to_string(p.batching.bucket_size);
  if (p.batching.pad_to_multiple_of > 1) label += " m" + std::to_string(p.batching.pad_to_multiple_of);
  return label;
}

std::string report_html(const ReportInput& in) {
  std::vector<const planner::PlanResult*> plans{&in.baseline};
  for (const auto& p : in.recommendations) plans.push_back(&p);
  std::vector<Bar> wall, padding;
  for (size_t i = 0; i < plans.size(); ++i) {
    const auto& p = *plans[i];
    const std::string label = (i == 0 ? "baseline: " : std::to_string(i) + ". ") + plan_label(p);
    wall.push_back({label, p.wall_clock_s / 3600, i == 0, !p.fits_window || !p.fits_memory});
    padding.push_back({label, 100 * p.padding_fraction, i == 0, false});
  }
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>" << escape(in.title) << "</title>\n"
    << kStyle << "</head><body>\n<h1>" << escape(in.title) << "</h1>\n";
  for (const auto& f : in.facts) s << "<p class='fact'>" << escape(f) << "</p>\n";
  s << bar_chart("Wall clock by plan (grey: baseline, orange: misses the window or memory)", wall, "hours", 1,
                 in.window_hours > 0 ? in.window_hours : -1, "window " + num(in.window_hours, 1) + " h");
  s << bar_chart("Padding by plan", padding, "% of processed tokens that are padding", 1);
  const std::string best = in.recommendations.empty() ? "" : "best: " + plan_label(in.recommendations.front());
  std::vector<Series> steps{{"baseline: " + plan_label(in.baseline), "pbase", points(in.baseline_points, false)}};
  std::vector<Series> memory{{"baseline: " + plan_label(in.baseline), "pbase", points(in.baseline_points, true)}};
  if (!in.recommendations.empty()) {
    steps.push_back({best, "pbest", points(in.best_points, false)});
    memory.push_back({best, "pbest", points(in.best_points, true)});
  }
  s << scatter("Predicted step time vs padded width (sampled micro-batches)", steps, "width (tokens per row)",
               "step time (s)");
  s << scatter("Predicted peak memory vs tokens per micro-batch (rows x width)", memory, "tokens per micro-batch",
               "peak memory (GiB)", in.baseline.memory_limit_gib,
               "memory limit " + num(in.baseline.memory_limit_gib, 1) + " GiB");
  s << table(in) << "</body></html>\n";
  return s.str();
}

void write_report(const std::string& path, const ReportInput& input) {
  const std::string html = report_html(input);
  io::write_file_atomically(path, html, "report");
}

}  // namespace stepcast::report
