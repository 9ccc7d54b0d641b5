#include "report/report_html.hpp"

#include "io/atomic_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "planner/batching.hpp"
#include "report/format.hpp"

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
      case '\'': out += "&#39;"; break;
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

// Decimals for tick labels of an axis up to `axis`: enough that five ticks differ.
int tick_digits(double axis) {
  if (axis >= 50) return 0;
  if (axis >= 5) return 1;
  if (axis >= 0.5) return 2;
  return 3;
}

struct Bar {
  std::string label;
  double value = 0;
  bool highlight = false;  // the baseline
  bool bad = false;        // misses the window / out of memory
};

// Charts are drawn in a 1000-unit-wide coordinate space and scale to the page (viewBox, width 100 %).
constexpr int kChartWidth = 1000;
constexpr int kLabelWidth = 330;
// A window more than this many times the longest plan is left off the wall-clock chart (said in its title).
constexpr double kWindowOnChart = 3.0;

std::string svg_open(int height, const std::string& title) {
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << kChartWidth << " " << height
    << "' preserveAspectRatio='xMinYMin meet' role='img' aria-label='" << escape(title) << "'>\n"
    << "<text x='10' y='22' class='title'>" << escape(title) << "</text>\n";
  return s.str();
}

// Horizontal bars, one per plan, with an optional reference line (the window).
std::string bar_chart(const std::string& title, const std::vector<Bar>& bars, const std::string& unit,
                      double reference = -1, const std::string& reference_label = "") {
  const int row = 24, top = 40, bottom = 36;
  const int height = top + row * static_cast<int>(bars.size()) + bottom;
  double max_v = reference;
  for (const auto& b : bars) max_v = std::max(max_v, b.value);
  const double axis = nice_ceiling(max_v * 1.05);
  const int digits = tick_digits(axis);
  const double plot_w = kChartWidth - kLabelWidth - 80;
  auto x = [&](double v) { return kLabelWidth + plot_w * v / axis; };
  std::ostringstream s;
  s << svg_open(height, title);
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
      << "<text x='" << x(b.value) + 6 << "' y='" << y + 16 << "' class='value'>" << num(b.value, digits + 1)
      << "</text>\n";
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
  s << svg_open(height, title);
  for (int i = 0; i <= 5; ++i) {
    const double vx = ax * i / 5, vy = ay * i / 5;
    s << "<line x1='" << px(vx) << "' y1='" << top << "' x2='" << px(vx) << "' y2='" << top + ph << "' class='grid'/>"
      << "<text x='" << px(vx) << "' y='" << top + ph + 16 << "' class='tick'>" << num(vx, tick_digits(ax)) << "</text>"
      << "<line x1='" << left << "' y1='" << py(vy) << "' x2='" << left + pw << "' y2='" << py(vy) << "' class='grid'/>"
      << "<text x='" << left - 6 << "' y='" << py(vy) + 4 << "' class='label'>" << num(vy, tick_digits(ay))
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

// Time per token reads best in µs, ms or s; picked from the largest value of a chart.
struct PerTokenUnit {
  std::string name;
  double scale;  // multiplies seconds
};
PerTokenUnit per_token_unit(double max_seconds) {
  if (max_seconds < 1e-3) return {"µs", 1e6};
  if (max_seconds < 1) return {"ms", 1e3};
  return {"s", 1};
}

std::string per_token_text(double seconds) {
  const PerTokenUnit u = per_token_unit(seconds);
  return num(seconds * u.scale, 1) + " " + u.name;
}

std::string table(const PlanOutput& o) {
  const auto& r = o.result;
  std::ostringstream s;
  s << "<div class='scroll'><table><tr><th>#</th><th>plan</th><th>wall clock</th><th>vs baseline</th>"
       "<th>per token</th><th>padding</th><th>pad to multiple of</th><th>steps</th><th>distinct shapes</th>"
       "<th>first-seen s</th><th>optimizer step s</th><th>peak GiB</th><th>truncated tokens</th><th>roots / window</th>"
       "<th>fits</th></tr>\n";
  auto row = [&](const std::string& rank, const planner::PlanResult& p) {
    s << "<tr" << (p.fits_memory && p.fits_window ? "" : " class='badrow'") << "><td>" << rank << "</td><td>"
      << escape(plan_label(p)) << "</td><td>" << duration(p.wall_clock_s) << "</td><td>"
      << (&p == &r.baseline ? std::string("-") : change_vs_baseline(saving_vs_baseline(p, r.baseline))) << "</td><td>"
      << per_token_text(seconds_per_token(p)) << "</td><td>" << percent(p.padding_fraction, 2) << "</td><td>"
      << p.batching.pad_to_multiple_of << "</td><td>" << with_commas(p.steps) << "</td><td>"
      << with_commas(p.distinct_shapes) << "</td><td>" << num(p.first_seen_s, 1) << "</td><td>"
      << num(p.optimizer.step_s, 4) << "</td><td>" << num(p.peak_gib, 1) << "</td><td>" << with_commas(p.truncated.tokens)
      << "</td><td>" << (p.roots_per_window < 0 ? std::string("-") : num(p.roots_per_window, 1)) << "</td><td>"
      << fits_text(p) << "</td></tr>\n";
  };
  row("baseline", r.baseline);
  std::string group;
  for (size_t i = 0; i < r.recommendations.size(); ++i) {
    const std::string title = group_title(r.recommendations[i], r.baseline);
    if (title != group) s << "<tr class='group'><td colspan='15'>" << escape(group = title) << "</td></tr>\n";
    row(std::to_string(i + 1), r.recommendations[i]);
  }
  s << "</table></div>\n";
  return s.str();
}

// good (fits), risk (fits only at the point estimate), bad (out of memory or past the window).
std::string headline_class(const PlanOutput& o) {
  if (baseline_fits(o)) return "good";
  const planner::MemoryVerdict v = o.parallel ? o.parallel->baseline.memory.verdict : o.result.baseline.memory.verdict;
  const bool late = o.parallel ? !o.parallel->baseline.fits_window : !o.result.baseline.fits_window;
  return v == planner::MemoryVerdict::at_risk && !late ? "risk" : "bad";
}

std::vector<std::string> facts(const PlanOutput& o) {
  const auto& b = o.result.baseline;
  const planner::Corpus& corpus = *o.corpus;
  return {"GPU: " + o.gpu_name + ", " + fixed(o.gpu_memory_gib, 1) + " GiB" +
              (o.memory_cap_gib > 0 ? ", cap " + fixed(o.memory_cap_gib, 1) + " GiB" : "") + "; window " +
              (o.window_hours > 0 ? fixed(o.window_hours, 1) + " h" : "none"),
          "Corpus: " + with_commas(corpus.size()) + " samples, " + with_commas(corpus.total_tokens()) + " tokens (" +
              o.corpus_source + ")",
          "Predictor: " + o.predictor,
          "Baseline: " + plan_label(b) + ", " + wall_clock_text(o, b.wall_clock_s) + ", padding " + percent(b.padding_fraction, 2) +
              ", " + with_commas(b.distinct_shapes) + " distinct shapes, first-seen " + fixed(b.first_seen_s, 1) + " s",
          "Optimizer step: " + fixed(b.optimizer.step_s, 4) + " s (" + optimizer_source_text(b, o.optimizer_step_source) +
              ")",
          "Memory: " + memory_text(b) + " (" + fits_text(b) + ")" +
              (b.memory.risks.empty() ? std::string() : "; at risk: " + b.memory.risks.front()),
          "Live at the peak: " + live_text(b.memory_peak),
          "Ranked: " + planner::ranking_rule() + "."};
}

const char* kStyle = R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; max-width: 1280px; }
h1 { font-size: 22px; margin-bottom: 4px; } p.fact { margin: 2px 0; color: #444; }
p.headline { font-size: 16px; font-weight: 600; padding: 8px 12px; border-radius: 4px; }
p.headline.good { background: #e8f5e9; border-left: 6px solid #27ae60; }
p.headline.bad { background: #fdecea; border-left: 6px solid #c0392b; color: #8e1b10; }
p.headline.risk { background: #fff4e0; border-left: 6px solid #e67e22; color: #7a4100; }
p.legend-text { margin: 8px 0; color: #444; font-size: 13px; }
svg { display: block; width: 100%; height: auto; margin: 18px 0; background: #fff; border: 1px solid #ddd; }
.title { font-size: 15px; font-weight: 600; } .tick { font-size: 11px; text-anchor: middle; fill: #555; }
.label { font-size: 12px; text-anchor: end; fill: #333; } .value { font-size: 11px; fill: #333; }
.axis { font-size: 12px; text-anchor: middle; fill: #333; } .legend { font-size: 12px; fill: #333; }
.grid { stroke: #eee; } .ref { stroke: #c0392b; stroke-width: 2; stroke-dasharray: 6 4; }
.reflabel { font-size: 12px; fill: #c0392b; }
.bar { fill: #4a90d9; } .base { fill: #8e8e8e; } .bad { fill: #e67e22; }
.pbase { fill: #8e8e8e; fill-opacity: 0.7; } .pbest { fill: #27ae60; fill-opacity: 0.7; }
div.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; } td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
td { white-space: nowrap; }
td:nth-child(2) { text-align: left; white-space: nowrap; } tr.badrow td { background: #fdf2e9; }
tr.group td { text-align: left; font-weight: 600; background: #f4f6f8; }
</style>)";

std::string charts(const ReportInput& in) {
  const PlanOutput& o = *in.plan;
  const auto& r = o.result;
  std::vector<const planner::PlanResult*> plans{&r.baseline};
  for (const auto& p : r.recommendations) plans.push_back(&p);
  double max_wall = 0, max_per_token = 0;
  for (const auto* p : plans) {
    max_wall = std::max(max_wall, p->wall_clock_s);
    max_per_token = std::max(max_per_token, seconds_per_token(*p));
  }
  // The unit follows the plans, not the window: a 36 s check run in a 14 h window reads in seconds, and the
  // window line is drawn only when it is near enough to the bars to say something.
  const double window_s = o.window_hours * 3600;
  const bool window_on_chart = window_s > 0 && window_s <= kWindowOnChart * max_wall;
  const TimeUnit unit = time_unit_for(std::max(max_wall, window_on_chart ? window_s : 0.0));
  const PerTokenUnit token_unit = per_token_unit(max_per_token);
  std::vector<Bar> wall, per_token, padding;
  for (size_t i = 0; i < plans.size(); ++i) {
    const auto& p = *plans[i];
    const std::string label = (i == 0 ? "baseline: " : std::to_string(i) + ". ") + plan_label(p);
    const bool bad = !p.fits_window || !p.fits_memory;
    wall.push_back({label, p.wall_clock_s / unit.seconds, i == 0, bad});
    per_token.push_back({label, seconds_per_token(p) * token_unit.scale, i == 0, bad});
    padding.push_back({label, 100 * p.padding_fraction, i == 0, false});
  }
  std::ostringstream s;
  std::string wall_axis = unit.long_name;
  if (window_s > 0 && !window_on_chart) wall_axis += " (the window, " + duration(window_s) + ", is far beyond the bars)";
  s << bar_chart("Wall clock by plan (grey: baseline; orange: out of memory or misses the window)", wall, wall_axis,
                 window_on_chart ? window_s / unit.seconds : -1, "window " + duration(window_s));
  s << bar_chart("Time per trained token (wall clock / real tokens after truncation, all epochs)", per_token,
                 token_unit.name + " per token");
  s << bar_chart("Padding by plan", padding, "% of processed tokens that are padding");
  const std::string baseline_name = "baseline: " + plan_label(r.baseline);
  std::vector<Series> steps{{baseline_name, "pbase", points(in.baseline_points, false)}};
  std::vector<Series> memory{{baseline_name, "pbase", points(in.baseline_points, true)}};
  if (!r.recommendations.empty()) {
    const std::string best = "best: " + plan_label(r.recommendations.front());
    steps.push_back({best, "pbest", points(in.best_points, false)});
    memory.push_back({best, "pbest", points(in.best_points, true)});
  }
  s << scatter("Predicted step time vs padded width (sampled micro-batches)", steps, "width (tokens per row)",
               "step time (s)");
  s << scatter("Predicted allocated peak vs tokens per micro-batch (rows x width; the run's state included)", memory,
               "tokens per micro-batch", "peak memory (GiB)", r.baseline.memory.usable_gib,
               "usable " + num(r.baseline.memory.usable_gib, 1) + " GiB");
  return s.str();
}

}  // namespace

double seconds_per_token(const planner::PlanResult& p) {
  const double tokens = static_cast<double>(p.real_tokens) * static_cast<double>(p.epochs);
  return tokens > 0 ? p.wall_clock_s / tokens : 0;
}

std::string report_html(const ReportInput& in) {
  const PlanOutput& o = *in.plan;
  const std::string title = "stepcast plan: " + o.scenario;
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
    << "<meta name='viewport' content='width=device-width, initial-scale=1'><title>" << escape(title) << "</title>\n"
    << kStyle << "</head><body>\n<h1>" << escape(title) << "</h1>\n";
  if (!o.transfer.empty()) s << "<p>" << escape(o.transfer) << "</p>\n";
  s << "<p class='headline " << headline_class(o) << "'>" << escape(headline(o)) << "</p>\n";
  for (const auto& f : facts(o)) s << "<p class='fact'>" << escape(f) << "</p>\n";
  if (o.parallel)
    s << "<p class='fact'>" << escape("On " + std::to_string(o.parallel->baseline.parallel.gpus) + " GPUs (" +
                                      parallel_label(o.parallel->baseline) + "): " +
                                      duration(o.parallel->baseline.wall_clock_s) + ", straggler " +
                                      straggler_text(o.parallel->baseline) + "; " + batch_semantics_text(*o.parallel))
      << "</p>\n";
  s << "<p class='legend-text'><b>Plan labels:</b> " << escape(plan_label_legend()) << ".</p>\n";
  s << charts(in) << table(o) << "</body></html>\n";
  return s.str();
}

void write_report(const std::string& path, const ReportInput& input) {
  const std::string html = report_html(input);
  io::write_file_atomically(path, html, "report");
}

}  // namespace stepcast::report
