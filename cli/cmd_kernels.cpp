// stepcast kernels: where the device time of a profiled step goes, which kernel tier runs, and what
// changed between two runs. Reads torch.profiler Chrome traces (.json / .json.gz) and the harness's
// CUPTI tables (kernels/cupti_table.hpp).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <map>
#include <optional>

#include "cli/app.hpp"
#include "report/json_output.hpp"
#include "kernels/report.hpp"
#include "kernels/trace_reader.hpp"
#include "model/errors.hpp"

namespace stepcast::cli {
namespace {

struct KernelsOptions {
  std::string trace;
  std::string vs;
  int top = 20;
  double short_us = 10.0;
  int64_t steps = 0;  // 0: from the trace
  Format format = Format::text;
};

std::string num(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string pad(std::string s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// Kernel names are long demangled templates; the table shows their head.
std::string short_name(const std::string& name, size_t width) {
  return name.size() <= width ? name : name.substr(0, width - 3) + "...";
}

kernels::Report load(const std::string& path, const KernelsOptions& o) {
  kernels::ReadOptions ro;
  ro.short_threshold_s = o.short_us * 1e-6;
  kernels::KernelTable t = kernels::read_kernel_table(path, ro);
  if (o.steps > 0) t.steps = o.steps;
  return kernels::analyze(std::move(t));
}

void print_header(const kernels::Report& r, std::ostream& out) {
  const auto& d = r.table.device;
  out << r.table.source << " (" << (r.table.format == "chrome_trace" ? "Chrome trace" : "CUPTI table") << ")\n";
  out << "  device       " << (d.name.empty() ? std::string("not named in the trace") : d.name);
  if (!d.vendor.empty() && d.name.find(d.vendor) == std::string::npos) out << " (" << d.vendor << ")";
  if (!r.device_arch.empty()) out << ", " << r.device_arch;
  if (d.num_sms > 0) out << ", " << d.num_sms << " SMs";
  out << "\n  device time  " << num(r.device_time_s * 1e3, 1) << " ms in " << r.launches << " kernel launches ("
      << num(r.launches_per_step, 0) << " per step)\n\n";
}

void print_categories(const kernels::Report& r, std::ostream& out) {
  out << "  category        time_ms   share\n";
  for (const char* c : kernels::kCategoryNames) {
    const auto& s = r.categories.at(c);
    out << "  " << pad(c, 14) << pad(num(s.time_s * 1e3, 1), 9, true) << pad(kernels::percent(s.share), 7, true) << " %\n";
    const auto sub = [&](const std::map<std::string, kernels::Share>& parts) {
      for (const auto& [part, a] : parts)
        if (a.time_s > 0)
          out << "    " << pad(part, 12) << pad(num(a.time_s * 1e3, 1), 9, true) << pad(kernels::percent(a.share), 7, true)
              << " %\n";
    };
    if (std::string(c) == "attention") sub(r.attention_by_direction);
    if (std::string(c) == "communication") sub(r.communication_by_collective);
  }
  out << "\n";
}

void print_kernels(const kernels::Report& r, int top, std::ostream& out) {
  const size_t n = std::min(r.kernels.size(), static_cast<size_t>(top));
  out << "  top " << n << " of " << r.kernels.size() << " kernels by time\n";
  out << "   time_ms   share    count  category           library           arch   name\n";
  for (size_t i = 0; i < n; ++i) {
    const auto& k = r.kernels[i];
    std::string cat = k.cls.category == "communication" ? "comm" : k.cls.category;
    cat += k.cls.direction.empty() ? "" : k.cls.direction == "forward" ? " F" : " B";
    if (!k.cls.collective.empty()) cat += " " + k.cls.collective;
    out << "  " << pad(num(k.stat.time_s * 1e3, 1), 9, true) << pad(kernels::percent(k.share), 7, true) << " %"
        << pad(std::to_string(k.stat.count), 9, true) << "  " << pad(cat, 18) << " " << pad(k.cls.library, 17) << " "
        << pad(k.cls.arch.empty() ? "-" : k.cls.arch, 6) << " " << short_name(k.stat.name, 90) << "\n";
  }
  out << "\n";
}

void print_diagnostics(const kernels::Report& r, std::ostream& out) {
  out << "  diagnosis\n";
  for (const auto& d : r.diagnostics) out << "    - " << d.message << "\n";
}

std::string signed_ms(double s) { return (s >= 0 ? "+" : "") + num(s * 1e3, 1); }

void print_comparison(const kernels::Comparison& c, int top, std::ostream& out) {
  for (const auto& w : c.warnings) out << "\nwarning: " << w;
  out << "\nbefore -> after: device time " << num(c.before_device_time_s * 1e3, 1) << " ms -> "
      << num(c.after_device_time_s * 1e3, 1) << " ms (" << signed_ms(c.after_device_time_s - c.before_device_time_s)
      << " ms)\n  by category         before_ms  after_ms  delta_ms\n";
  for (const auto& ch : c.category_changes)
    out << "    " << pad(ch.name, 18) << pad(num(ch.before_s * 1e3, 1), 10, true) << pad(num(ch.after_s * 1e3, 1), 10, true)
        << pad(signed_ms(ch.delta_s), 10, true) << "\n";
  const size_t n = std::min(c.changes.size(), static_cast<size_t>(top));
  out << "  kernels that changed most (" << n << " of " << c.changes.size() << ")\n";
  out << "   before_ms  after_ms  delta_ms  status    name\n";
  for (size_t i = 0; i < n; ++i) {
    const auto& ch = c.changes[i];
    out << "  " << pad(num(ch.before_s * 1e3, 1), 10, true) << pad(num(ch.after_s * 1e3, 1), 10, true)
        << pad(signed_ms(ch.delta_s), 10, true) << "  " << pad(ch.status, 9) << " " << short_name(ch.name, 90) << "\n";
  }
  if (!c.changes.empty()) {
    const auto& big = c.changes.front();
    const std::string what = big.category + (big.direction.empty() ? "" : " " + big.direction);
    out << "  largest change: the " << what << " kernel " << short_name(big.name, 90) << " " << big.status << " ("
        << signed_ms(big.delta_s) << " ms)\n";
  }
}

void run_kernels(const KernelsOptions& o) {
  if (o.short_us <= 0) throw InputError("--short-us = " + num(o.short_us, 3) + ". Violated constraint: > 0");
  const kernels::Report report = load(o.trace, o);
  std::optional<kernels::Report> other;
  if (!o.vs.empty()) other = load(o.vs, o);
  std::optional<kernels::Comparison> comparison;
  if (other) comparison = kernels::compare(report, *other);
  if (comparison)
    for (const auto& w : comparison->warnings) std::cerr << "warning: " << w << "\n";
  if (o.format == Format::json) {
    nlohmann::json j = kernels::to_json(report);
    if (other) {
      j["vs"] = kernels::to_json(*other);
      const nlohmann::json changes = kernels::to_json(*comparison);
      for (const auto& [key, value] : changes.items()) j[key] = value;
    }
    report::print_json(std::cout, "kernels", j);
    return;
  }
  const auto print = [&](const kernels::Report& r) {
    print_header(r, std::cout);
    print_categories(r, std::cout);
    print_kernels(r, o.top, std::cout);
    print_diagnostics(r, std::cout);
  };
  print(report);
  if (other) {
    std::cout << "\n";
    print(*other);
  }
  if (comparison) print_comparison(*comparison, o.top, std::cout);
}

}  // namespace

void add_kernels_command(CLI::App& app) {
  auto opts = std::make_shared<KernelsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "kernels", "Kernel table of a torch.profiler Chrome trace or a CUPTI table: categories, tiers, diagnosis");
  cmd->footer(
      "Examples:\n"
      "  stepcast kernels trace.json.gz\n"
      "  stepcast kernels unpadded.pt.trace.json --vs padded.pt.trace.json --top 10\n"
      "  stepcast kernels measurements/records/h200-gemma-4-26b-a4b.kernels/"
      "kernels_sdpa-efficient_grouped_2x4096_4096_4096.jsonl --format json\n"
      "TRACE is what torch.profiler's export_chrome_trace / tensorboard_trace_handler writes (.json or\n"
      ".json.gz, CUDA or ROCm), or a CUPTI table the harness wrote (docs/kernels.md). Execution traces,\n"
      "memory timelines and other JSON are refused (exit 2) with what they look like. With --vs, TRACE is\n"
      "'before' and OTHER is 'after': changes are after - before, sorted by their size; a warning says when\n"
      "the two ran on different devices.");
  cmd->add_option("TRACE", opts->trace, "Chrome trace (.json, .json.gz) or CUPTI table (.jsonl)")->required();
  cmd->add_option("--vs", opts->vs, "A second trace to compare against (the 'after')");
  cmd->add_option("--top", opts->top, "Kernels (and changes) shown in the text table; JSON has them all")
      ->check(CLI::PositiveNumber)
      ->default_str("20");
  cmd->add_option("--short-us", opts->short_us,
                  "Launches shorter than this many µs count as short (launch-bound signal); Chrome traces only")
      ->default_str("10");
  cmd->add_option("--steps", opts->steps, "Steps the trace covers, for launches per step (overrides ProfilerStep markers and the table header)")
      ->check(CLI::PositiveNumber);
  add_format_option(cmd, opts->format);
  cmd->callback([opts]() { run_kernels(*opts); });
}

}  // namespace stepcast::cli
