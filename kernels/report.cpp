#include "kernels/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

namespace stepcast::kernels {
namespace {

double share_of(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return (n < 0 ? "-" : "") + s;
}

std::string device_words(const Report& r) {
  std::string arch = r.device_arch;
  const std::string words = "an sm_" + arch.substr(2) + " device";
  return r.table.device.name.empty() ? words : words + " (" + r.table.device.name + ")";
}

// Names joined by '/', ordered by the time they carry.
std::string joined_by_time(const std::unordered_map<std::string, double>& times) {
  std::vector<std::pair<std::string, double>> v(times.begin(), times.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
  std::string out;
  for (const auto& [name, t] : v) out += (out.empty() ? "" : "/") + name;
  return out;
}

void add_older_arch(Report& r) {
  const int device = arch_number(r.device_arch);
  if (device == 0) {
    const bool any_arch = std::any_of(r.kernels.begin(), r.kernels.end(), [](const KernelRow& k) { return !k.cls.arch.empty(); });
    if (any_arch)
      r.diagnostics.push_back({"no_device_arch",
                               "the trace names no device arch (no deviceProperties), so kernels built for an older "
                               "arch cannot be flagged",
                               0.0});
    return;
  }
  for (const char* category : kCategoryNames) {
    double time = 0;
    std::unordered_map<std::string, double> archs, libs, dirs;
    for (const auto& k : r.kernels) {
      const int a = arch_number(k.cls.arch);
      if (k.cls.category != category || a == 0 || a >= device) continue;
      time += k.stat.time_s;
      archs[k.cls.arch] += k.stat.time_s;
      libs[k.cls.library] += k.stat.time_s;
      if (!k.cls.direction.empty()) dirs[k.cls.direction] += k.stat.time_s;
    }
    if (time <= 0) continue;
    std::string msg = std::string(category) + " " + percent(share_of(time, r.device_time_s)) + " % of device time";
    if (!dirs.empty()) {
      std::string parts;
      for (const char* d : {"forward", "backward"})
        if (dirs.count(d) != 0)
          parts += std::string(parts.empty() ? "" : ", ") + d + " " + percent(share_of(dirs[d], r.device_time_s)) + " %";
      msg += " (" + parts + ")";
    }
    msg += " runs " + joined_by_time(archs) + " " + joined_by_time(libs) + " kernels on " + device_words(r);
    r.diagnostics.push_back({"older_arch", msg, share_of(time, r.device_time_s)});
  }
}

void add_fallback_tier(Report& r) {
  for (const char* direction : {"forward", "backward"}) {
    double time = 0;
    const KernelRow* top = nullptr;
    for (const auto& k : r.kernels) {
      if (k.cls.category != "attention" || k.cls.direction != direction || k.cls.tier.empty()) continue;
      time += k.stat.time_s;
      if (top == nullptr || k.stat.time_s > top->stat.time_s) top = &k;
    }
    if (top == nullptr) continue;
    std::string name = top->stat.name.substr(0, top->stat.name.find('('));
    r.diagnostics.push_back({"fallback_tier",
                             std::string("the attention ") + direction + " runs the " + top->cls.tier +
                                 " fallback tier (" + name + ": " + percent(share_of(time, r.device_time_s)) +
                                 " % of device time)",
                             share_of(time, r.device_time_s)});
  }
}

void add_launch_bound(Report& r, const AnalyzeOptions& o) {
  if (r.launches == 0) return;
  const std::string steps_words =
      r.table.steps > 0 ? (with_commas(r.steps) + (r.steps == 1 ? " step" : " steps") +
                           (r.table.format == "chrome_trace" ? " from ProfilerStep markers" : " in the table header"))
                        : std::string("the whole trace counted as one step");
  std::string msg = with_commas(static_cast<int64_t>(std::llround(r.launches_per_step))) + " kernel launches per step (" +
                    steps_words + "); " + percent(r.short_time_share) + " % of device time (" +
                    percent(r.short_launch_share) + " % of launches) is in kernels shorter than " +
                    fixed(r.table.short_threshold_s * 1e6, 0) + " µs";
  if (r.table.window_s > 0)
    msg += "; the device was busy " + percent(share_of(r.table.busy_s, r.table.window_s)) + " % of the " +
           fixed(r.table.window_s, 3) + " s between its first and last kernel";
  msg += r.short_time_share >= o.launch_bound_share ? ": a launch-bound signal" : ": no launch-bound signal";
  r.diagnostics.push_back({"launch_bound", msg, r.short_time_share});
}

// Which attention implementations run, by library and arch: "cuDNN sm90 28.4 %, CUTLASS 2.x sm80 19.3 %".
void add_attention_tiers(Report& r) {
  std::unordered_map<std::string, double> tiers;
  for (const auto& k : r.kernels)
    if (k.cls.category == "attention")
      tiers[k.cls.library + (k.cls.arch.empty() ? "" : " " + k.cls.arch) + (k.cls.tier.empty() ? "" : " " + k.cls.tier)] +=
          k.stat.time_s;
  if (tiers.empty()) return;
  std::vector<std::pair<std::string, double>> v(tiers.begin(), tiers.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
  std::string msg = "attention runs ";
  for (size_t i = 0; i < v.size(); ++i)
    msg += (i == 0 ? "" : ", ") + v[i].first + " " + percent(share_of(v[i].second, r.device_time_s)) + " %";
  msg += " of device time";
  r.diagnostics.push_back({"attention_tiers", msg, r.categories["attention"].share});
}

// GEMMs on CUDA cores in fp32 (cuBLAS "ffma", CUTLASS "simt_sgemm"): no tensor cores. On the harness's H200
// tables (sdpa-auto vs sdpa-efficient, Gemma-4 at 2x4096) these kernels and the fp32 softmax vanished when the
// math attention tier did, so in a bf16 model they usually are the attention scores computed on the math tier.
void add_fp32_gemm(Report& r) {
  double time = 0;
  for (const auto& k : r.kernels) {
    if (k.cls.category != "gemm") continue;
    const std::string& n = k.stat.name;
    if (n.find("ffma") != std::string::npos || n.find("simt_sgemm") != std::string::npos ||
        n.find("f32f32_f32f32_f32") != std::string::npos)
      time += k.stat.time_s;
  }
  if (time <= 0) return;
  r.diagnostics.push_back({"fp32_gemm",
                           "GEMMs in fp32 on CUDA cores (ffma / simt sgemm, no tensor cores) take " +
                               percent(share_of(time, r.device_time_s)) +
                               " % of device time; in a bf16 model that is attention on the math tier (scores and "
                               "softmax in fp32) or LoRA adapters kept in fp32 (peft casts bf16 adapters to fp32 by "
                               "default), counted under gemm",
                           share_of(time, r.device_time_s)});
}

void add_shares(Report& r) {
  const Share& att = r.categories["attention"];
  std::string msg = "attention " + percent(att.share) + " % of device time";
  if (att.time_s > 0) {
    msg += " (forward " + percent(r.attention_by_direction["forward"].share) + " %, backward " +
           percent(r.attention_by_direction["backward"].share) + " %";
    if (r.attention_by_direction["unknown"].time_s > 0)
      msg += ", direction not in the name " + percent(r.attention_by_direction["unknown"].share) + " %";
    msg += ")";
  }
  r.diagnostics.push_back({"attention_share", msg, att.share});
  const Share& gemm = r.categories["gemm"];
  const Share& grouped = r.categories["grouped_gemm"];
  std::string g = "dense GEMM " + percent(gemm.share) + " % of device time";
  if (grouped.time_s > 0) g += ", grouped GEMM (experts) " + percent(grouped.share) + " %";
  r.diagnostics.push_back({"gemm_share", g, gemm.share});
}

}  // namespace

std::string percent(double share) { return fixed(share * 100.0, 1); }

Report analyze(KernelTable table, const AnalyzeOptions& options) {
  Report r;
  r.device_arch = arch_label(table.device.compute_major, table.device.compute_minor);
  for (const char* c : kCategoryNames) r.categories[c] = {};
  for (const char* d : {"forward", "backward", "unknown"}) r.attention_by_direction[d] = {};
  int64_t short_launches = 0;
  double short_time = 0;
  for (const auto& k : table.kernels) {
    KernelRow row{k, k.kind == "kernel" ? classify_kernel(k.name) : classify_copy(k.name), 0};
    row.stat.name = demangle(k.name);  // CUPTI tables may hold mangled names; traces hold demangled ones
    r.device_time_s += k.time_s;
    r.categories[row.cls.category].time_s += k.time_s;
    if (row.cls.category == "attention")
      r.attention_by_direction[row.cls.direction.empty() ? "unknown" : row.cls.direction].time_s += k.time_s;
    if (k.kind == "kernel") {
      r.launches += k.count;
      short_launches += k.short_count;
      short_time += k.short_time_s;
    }
    r.kernels.push_back(std::move(row));
  }
  for (auto& [name, s] : r.categories) s.share = share_of(s.time_s, r.device_time_s);
  for (auto& [name, s] : r.attention_by_direction) s.share = share_of(s.time_s, r.device_time_s);
  for (auto& k : r.kernels) k.share = share_of(k.stat.time_s, r.device_time_s);
  std::sort(r.kernels.begin(), r.kernels.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.stat.time_s > b.stat.time_s || (a.stat.time_s == b.stat.time_s && a.stat.name < b.stat.name);
  });
  r.steps = table.steps > 0 ? table.steps : 1;
  r.launches_per_step = static_cast<double>(r.launches) / static_cast<double>(r.steps);
  r.short_time_share = share_of(short_time, r.device_time_s);
  r.short_launch_share = share_of(static_cast<double>(short_launches), static_cast<double>(r.launches));
  r.table = std::move(table);
  if (r.kernels.empty()) {
    r.diagnostics.push_back({"no_device_activity",
                             "the trace holds no device kernels, memcpys or memsets (a CPU-only trace?)", 0.0});
    return r;
  }
  add_older_arch(r);
  add_fallback_tier(r);
  add_fp32_gemm(r);
  add_launch_bound(r, options);
  add_shares(r);
  add_attention_tiers(r);
  return r;
}

Comparison compare(const Report& before, const Report& after) {
  Comparison c;
  c.before_device_time_s = before.device_time_s;
  c.after_device_time_s = after.device_time_s;
  std::map<std::string, Change> by_name;
  std::map<std::string, std::pair<bool, bool>> seen;  // in before, in after
  for (const auto& k : before.kernels) {
    Change& ch = by_name[k.stat.name];
    seen[k.stat.name].first = true;
    ch.before_s += k.stat.time_s;
    ch.category = k.cls.category;
    ch.direction = k.cls.direction;
  }
  for (const auto& k : after.kernels) {
    Change& ch = by_name[k.stat.name];
    seen[k.stat.name].second = true;
    ch.after_s += k.stat.time_s;
    ch.category = k.cls.category;
    ch.direction = k.cls.direction;
  }
  std::map<std::string, Change> by_group;
  for (auto& [name, ch] : by_name) {
    ch.name = name;
    ch.delta_s = ch.after_s - ch.before_s;
    const auto [in_before, in_after] = seen[name];
    ch.status = !in_before ? "appeared" : !in_after ? "vanished" : "changed";
    std::string group = ch.category;
    if (group == "attention") group += " " + (ch.direction.empty() ? std::string("(direction not in the name)") : ch.direction);
    Change& g = by_group[group];
    g.name = group;
    g.category = ch.category;
    g.direction = ch.direction;
    g.before_s += ch.before_s;
    g.after_s += ch.after_s;
    c.changes.push_back(ch);
  }
  for (auto& [name, g] : by_group) {
    g.delta_s = g.after_s - g.before_s;
    g.status = g.before_s == 0 ? "appeared" : g.after_s == 0 ? "vanished" : "changed";
    c.category_changes.push_back(g);
  }
  const auto by_size = [](const Change& a, const Change& b) {
    const double da = std::fabs(a.delta_s), db = std::fabs(b.delta_s);
    return da > db || (da == db && a.name < b.name);
  };
  std::sort(c.changes.begin(), c.changes.end(), by_size);
  std::sort(c.category_changes.begin(), c.category_changes.end(), by_size);
  return c;
}

nlohmann::json to_json(const Report& r) {
  nlohmann::json j;
  j["source"] = r.table.source;
  j["format"] = r.table.format;
  j["device"] = {{"name", r.table.device.name},
                 {"arch", r.device_arch},
                 {"compute_major", r.table.device.compute_major},
                 {"compute_minor", r.table.device.compute_minor},
                 {"num_sms", r.table.device.num_sms}};
  j["device_time_s"] = r.device_time_s;
  nlohmann::json cats = nlohmann::json::object();
  for (const auto& [name, s] : r.categories) cats[name] = {{"time_s", s.time_s}, {"share", s.share}};
  for (const auto& [dir, s] : r.attention_by_direction) cats["attention"][dir] = {{"time_s", s.time_s}, {"share", s.share}};
  j["categories"] = cats;
  nlohmann::json ks = nlohmann::json::array();
  for (const auto& k : r.kernels)
    ks.push_back({{"name", k.stat.name},         {"kind", k.stat.kind},
                  {"count", k.stat.count},       {"time_s", k.stat.time_s},
                  {"share", k.share},            {"category", k.cls.category},
                  {"direction", k.cls.direction}, {"library", k.cls.library},
                  {"arch", k.cls.arch},          {"tier", k.cls.tier},
                  {"short_count", k.stat.short_count}, {"short_time_s", k.stat.short_time_s}});
  j["kernels"] = ks;
  j["launches"] = r.launches;
  j["steps"] = r.steps;
  j["steps_known"] = r.table.steps > 0;
  j["launches_per_step"] = r.launches_per_step;
  j["short_threshold_s"] = r.table.short_threshold_s;
  j["short_time_share"] = r.short_time_share;
  j["short_launch_share"] = r.short_launch_share;
  j["window_s"] = r.table.window_s;
  j["busy_s"] = r.table.busy_s;
  nlohmann::json ds = nlohmann::json::array();
  for (const auto& d : r.diagnostics) ds.push_back({{"kind", d.kind}, {"message", d.message}, {"share", d.share}});
  j["diagnostics"] = ds;
  return j;
}

nlohmann::json to_json(const Comparison& c) {
  const auto rows = [](const std::vector<Change>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& ch : v)
      a.push_back({{"name", ch.name},         {"before_s", ch.before_s}, {"after_s", ch.after_s},
                   {"delta_s", ch.delta_s},   {"status", ch.status},     {"category", ch.category},
                   {"direction", ch.direction}});
    return a;
  };
  return {{"changes", rows(c.changes)},
          {"category_changes", rows(c.category_changes)},
          {"before_device_time_s", c.before_device_time_s},
          {"after_device_time_s", c.after_device_time_s},
          {"delta_device_time_s", c.after_device_time_s - c.before_device_time_s}};
}

}  // namespace stepcast::kernels
