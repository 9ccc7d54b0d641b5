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
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// Library generations, as data: category C has kernels built for arch G (NVIDIA compute capability x10)
// from the libraries PyTorch ships. A kernel built for arch A on a device of arch D is "older arch" only
// when some generation G of its category has A < G <= D: then a kernel made for this device exists, and
// the one that ran is a fallback. Below sm80, cuBLAS / cuDNN name their kernels volta_ / turing_ and pick
// volta_ kernels on Turing (sm75) as their normal choice (the RTX 2080 Ti traces of docs/kernels.md), so
// no generation sits between 70 and 80.
struct Generation {
  std::string_view category;
  int arch;
  std::string_view kernels;  // which, in the message
};
constexpr Generation kGenerations[] = {
    {"attention", 80, "sm80 FlashAttention 2 / mem-efficient"},
    {"attention", 90, "sm90 cuDNN SDPA / FlashAttention 3"},
    {"attention", 100, "sm100 cuDNN SDPA"},
    {"gemm", 80, "sm80 cuBLAS (ampere_, sm80_xmma) / CUTLASS"},
    {"gemm", 90, "sm90 cuBLAS (sm90_xmma, nvjet) / CUTLASS 3.x"},
    {"gemm", 100, "sm100 cuBLAS / CUTLASS"},
    {"grouped_gemm", 90, "sm90 CUTLASS 3.x grouped / DeepGEMM"},
    {"grouped_gemm", 100, "sm100 CUTLASS / DeepGEMM"},
    {"convolution", 80, "sm80 cuDNN (ampere_scudnn, sm80_xmma)"},
    {"convolution", 90, "sm90 cuDNN"},
};

bool newer_generation_exists(std::string_view category, int kernel_arch, int device_arch) {
  return std::any_of(std::begin(kGenerations), std::end(kGenerations), [&](const Generation& g) {
    return g.category == category && kernel_arch < g.arch && g.arch <= device_arch;
  });
}

// "sm90 cuDNN SDPA / FlashAttention 3, sm100 cuDNN SDPA": the generations newer than `oldest` that the device runs.
std::string newer_generations(std::string_view category, int oldest, int device_arch) {
  std::string out;
  for (const Generation& g : kGenerations)
    if (g.category == category && oldest < g.arch && g.arch <= device_arch)
      out += (out.empty() ? "" : ", ") + std::string(g.kernels);
  return out;
}

std::string device_words(const Report& r) {
  std::string arch = r.device_arch;
  const std::string words = "an sm_" + arch.substr(2) + " device";
  return r.table.device.name.empty() ? words : words + " (" + r.table.device.name + ")";
}

// "cuDNN 52.3 %, CUTLASS 2.x 1.0 %": a category's time by library, largest first.
std::string library_breakdown(const Report& r, std::string_view category) {
  std::unordered_map<std::string, double> libs;
  for (const auto& k : r.kernels)
    if (k.cls.category == category) libs[k.cls.library] += k.stat.time_s;
  std::vector<std::pair<std::string, double>> v(libs.begin(), libs.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
  std::string out;
  for (const auto& [lib, t] : v) out += (out.empty() ? "" : ", ") + lib + " " + percent(share_of(t, r.device_time_s)) + " %";
  return out;
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
    const bool any_arch = std::any_of(r.kernels.begin(), r.kernels.end(), [](const KernelRow& k) { return arch_number(k.cls.arch) > 0; });
    if (any_arch && r.device_arch.empty())
      r.diagnostics.push_back({"no_device_arch",
                               "the trace names no device arch (no deviceProperties), so kernels built for an older "
                               "arch cannot be flagged",
                               0.0});
    return;
  }
  for (const char* category : kCategoryNames) {
    double time = 0;
    int oldest = device;
    std::unordered_map<std::string, double> archs, libs, dirs;
    for (const auto& k : r.kernels) {
      const int a = arch_number(k.cls.arch);
      if (k.cls.category != category || a == 0 || !newer_generation_exists(category, a, device)) continue;
      oldest = std::min(oldest, a);
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
    msg += " runs " + joined_by_time(archs) + " " + joined_by_time(libs) + " kernels on " + device_words(r) +
           "; newer " + category + " kernels exist for it (" + newer_generations(category, oldest, device) + ")";
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
  if (share_of(time, r.device_time_s) < 0.001) return;  // below 0.1 % it would print as noise
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
  const Share& conv = r.categories["convolution"];
  if (conv.time_s > 0)
    r.diagnostics.push_back({"convolution_share",
                             "convolution " + percent(conv.share) + " % of device time (" +
                                 library_breakdown(r, "convolution") + ")",
                             conv.share});
}

// Kernels no rule names: the largest, so that a reader sees what is behind the share.
void add_other(Report& r) {
  const Share& other = r.categories["other"];
  if (other.time_s <= 0) return;
  const KernelRow* top = nullptr;
  for (const auto& k : r.kernels)
    if (k.cls.category == "other" && (top == nullptr || k.stat.time_s > top->stat.time_s)) top = &k;
  r.diagnostics.push_back({"other_share",
                           "other (kernels no rule classifies) " + percent(other.share) +
                               " % of device time; the largest is " + kernel_signature(top->stat.name) + " (" +
                               percent(top->share) + " %)",
                           other.share});
}

// "41.0 % of device time in NCCL all_reduce 30.1 %, send_recv 10.9 %; not overlapped with compute for
// 30.2 % of it".
void add_communication(Report& r) {
  const Share& comm = r.categories["communication"];
  if (comm.time_s <= 0) return;
  std::unordered_map<std::string, double> libs;
  for (const auto& k : r.kernels)
    if (k.cls.category == "communication") libs[k.cls.library] += k.stat.time_s;
  std::string msg = "communication " + percent(comm.share) + " % of device time in " + joined_by_time(libs) + " (";
  std::string parts;
  for (const auto& [op, s] : r.communication_by_collective)
    if (s.time_s > 0)
      parts += (parts.empty() ? "" : ", ") + (op == "unknown" ? std::string("collective not named") : op) + " " +
               percent(s.share) + " %";
  msg += parts + ")";
  if (r.communication_exposed_s >= 0)
    msg += "; not overlapped with compute for " +
           percent(share_of(r.communication_exposed_s, r.communication_union_s)) + " % of it (" +
           fixed(r.communication_exposed_s * 1e3, 1) + " ms with no other kernel running)";
  r.diagnostics.push_back({"communication", msg, comm.share});
}

}  // namespace

std::string percent(double share) { return fixed(share * 100.0, 1); }

std::string device_arch(const DeviceInfo& device) {
  if (device.vendor != "AMD") return arch_label(device.compute_major, device.compute_minor);
  if (!device.gcn_arch.empty()) return device.gcn_arch.substr(0, device.gcn_arch.find(':'));
  // hipDeviceProp's major.minor per AMD ISA (ROCm's gfx names): 9.0 is both gfx908 (MI100) and gfx90a (MI200).
  static constexpr struct {
    int major, minor;
    const char* gfx;
  } kAmd[] = {{9, 0, "gfx908/gfx90a"}, {9, 4, "gfx942"}, {9, 5, "gfx950"}, {10, 3, "gfx103x"}, {11, 0, "gfx110x"}, {12, 0, "gfx120x"}};
  for (const auto& a : kAmd)
    if (a.major == device.compute_major && a.minor == device.compute_minor) return a.gfx;
  return device.compute_major > 0 ? "gfx" + std::to_string(device.compute_major) + "." + std::to_string(device.compute_minor) : "";
}

namespace {

// Measure of the union of intervals (sorted and merged in place).
std::vector<std::pair<double, double>> merged(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& x : iv) {
    if (!out.empty() && x.first <= out.back().second) out.back().second = std::max(out.back().second, x.second);
    else out.push_back(x);
  }
  return out;
}

double length(const std::vector<std::pair<double, double>>& merged_iv) {
  double t = 0;
  for (const auto& [a, b] : merged_iv) t += b - a;
  return t;
}

// Time in `a` not covered by `b` (both merged).
double uncovered(const std::vector<std::pair<double, double>>& a, const std::vector<std::pair<double, double>>& b) {
  double out = 0;
  size_t j = 0;
  for (const auto& [s, e] : a) {
    double cur = s;
    while (j < b.size() && b[j].second <= cur) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e; ++k) {
      if (b[k].first > cur) out += b[k].first - cur;
      cur = std::max(cur, b[k].second);
      if (cur >= e) break;
    }
    if (cur < e) out += e - cur;
  }
  return out;
}

// Communication kernels that ran while no compute kernel (any other kernel; memcpy / memset run on the
// copy engines, not the SMs) ran on any stream.
void measure_exposure(Report& r, const std::vector<KernelClass>& classes) {
  if (r.table.activity.empty()) return;
  std::vector<std::pair<double, double>> comm, compute;
  for (const auto& a : r.table.activity) {
    const KernelClass& c = classes[a.kernel];
    if (c.category == "communication") comm.emplace_back(a.start_s, a.end_s);
    else if (r.table.kernels[a.kernel].kind == "kernel") compute.emplace_back(a.start_s, a.end_s);
  }
  r.communication_exposed_s = 0;
  if (comm.empty()) return;
  const auto comm_union = merged(std::move(comm));
  r.communication_union_s = length(comm_union);
  r.communication_exposed_s = uncovered(comm_union, merged(std::move(compute)));
}

}  // namespace

Report analyze(KernelTable table, const AnalyzeOptions& options) {
  Report r;
  r.device_arch = device_arch(table.device);
  for (const char* c : kCategoryNames) r.categories[c] = {};
  for (const char* d : {"forward", "backward", "unknown"}) r.attention_by_direction[d] = {};
  int64_t short_launches = 0;
  double short_time = 0;
  std::vector<KernelClass> classes;  // by table row, for the timeline
  for (const auto& k : table.kernels) {
    KernelRow row{k, k.kind == "kernel" ? classify_kernel(k.name) : classify_copy(k.name), 0};
    row.stat.name = demangle(k.name);  // CUPTI tables may hold mangled names; traces hold demangled ones
    if (const std::string op = collective_from_arg(k.collective); !op.empty()) row.cls.collective = op;
    // A GEMM kernel a convolution operator launched is that convolution's work (cuDNN's GEMM algorithms).
    if (k.launched_by == "convolution" && (row.cls.category == "gemm" || row.cls.category == "other"))
      row.cls.category = "convolution";
    // RCCL is NCCL's port to ROCm and keeps its kernel names; the device tells them apart.
    if (row.cls.library == "NCCL" && table.device.vendor == "AMD") row.cls.library = "RCCL";
    classes.push_back(row.cls);
    r.device_time_s += k.time_s;
    r.categories[row.cls.category].time_s += k.time_s;
    if (row.cls.category == "attention")
      r.attention_by_direction[row.cls.direction.empty() ? "unknown" : row.cls.direction].time_s += k.time_s;
    if (row.cls.category == "communication")
      r.communication_by_collective[row.cls.collective.empty() ? "unknown" : row.cls.collective].time_s += k.time_s;
    if (k.kind == "kernel") {
      r.launches += k.count;
      short_launches += k.short_count;
      short_time += k.short_time_s;
    }
    r.kernels.push_back(std::move(row));
  }
  for (auto& [name, s] : r.categories) s.share = share_of(s.time_s, r.device_time_s);
  for (auto& [name, s] : r.attention_by_direction) s.share = share_of(s.time_s, r.device_time_s);
  for (auto& [name, s] : r.communication_by_collective) s.share = share_of(s.time_s, r.device_time_s);
  for (auto& k : r.kernels) k.share = share_of(k.stat.time_s, r.device_time_s);
  std::sort(r.kernels.begin(), r.kernels.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.stat.time_s > b.stat.time_s || (a.stat.time_s == b.stat.time_s && a.stat.name < b.stat.name);
  });
  r.steps = table.steps > 0 ? table.steps : 1;
  r.launches_per_step = static_cast<double>(r.launches) / static_cast<double>(r.steps);
  r.short_time_share = share_of(short_time, r.device_time_s);
  r.short_launch_share = share_of(static_cast<double>(short_launches), static_cast<double>(r.launches));
  r.table = std::move(table);
  measure_exposure(r, classes);
  r.table.activity = {};  // only the timeline measures above need it
  r.table.activity.shrink_to_fit();
  if (r.kernels.empty()) {
    r.diagnostics.push_back({"no_device_activity",
                             r.table.host_events > 0
                                 ? "a CPU-only trace: " + with_commas(r.table.host_events) +
                                       " host events and no device kernels, memcpys or memsets (profile with "
                                       "ProfilerActivity.CUDA to record them)"
                                 : std::string("the trace holds no events at all"),
                             0.0});
    return r;
  }
  add_communication(r);
  add_older_arch(r);
  add_fallback_tier(r);
  add_fp32_gemm(r);
  add_launch_bound(r, options);
  add_shares(r);
  add_attention_tiers(r);
  add_other(r);
  return r;
}

Comparison compare(const Report& before, const Report& after) {
  Comparison c;
  const DeviceInfo& dev_before = before.table.device;
  const DeviceInfo& dev_after = after.table.device;
  const auto words = [](const DeviceInfo& d, const std::string& arch) {
    return (d.name.empty() ? std::string("unnamed") : d.name) + (arch.empty() ? "" : ", " + arch);
  };
  if (dev_before.name != dev_after.name || before.device_arch != after.device_arch)
    c.warnings.push_back("the two traces ran on different devices (" + words(dev_before, before.device_arch) + " vs " +
                         words(dev_after, after.device_arch) +
                         "): the changes mix the code change with the hardware change");
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
                 {"vendor", r.table.device.vendor},
                 {"arch", r.device_arch},
                 {"compute_major", r.table.device.compute_major},
                 {"compute_minor", r.table.device.compute_minor},
                 {"num_sms", r.table.device.num_sms}};
  j["device_time_s"] = r.device_time_s;
  nlohmann::json cats = nlohmann::json::object();
  for (const auto& [name, s] : r.categories) cats[name] = {{"time_s", s.time_s}, {"share", s.share}};
  for (const auto& [dir, s] : r.attention_by_direction) cats["attention"][dir] = {{"time_s", s.time_s}, {"share", s.share}};
  for (const char* op : kCollectiveNames) {
    const auto it = r.communication_by_collective.find(op);
    const Share s = it == r.communication_by_collective.end() ? Share{} : it->second;
    cats["communication"][op] = {{"time_s", s.time_s}, {"share", s.share}};
  }
  const auto unknown_op = r.communication_by_collective.find("unknown");
  const Share u = unknown_op == r.communication_by_collective.end() ? Share{} : unknown_op->second;
  cats["communication"]["unknown"] = {{"time_s", u.time_s}, {"share", u.share}};
  // Communication (union over streams) with no compute kernel running; null without a timeline.
  cats["communication"]["not_overlapped_s"] =
      r.communication_exposed_s >= 0 ? nlohmann::json(r.communication_exposed_s) : nlohmann::json(nullptr);
  j["categories"] = cats;
  nlohmann::json ks = nlohmann::json::array();
  for (const auto& k : r.kernels)
    ks.push_back({{"name", k.stat.name},         {"kind", k.stat.kind},
                  {"count", k.stat.count},       {"time_s", k.stat.time_s},
                  {"share", k.share},            {"category", k.cls.category},
                  {"direction", k.cls.direction}, {"library", k.cls.library},
                  {"arch", k.cls.arch},          {"tier", k.cls.tier},
                  {"collective", k.cls.collective},
                  {"launched_by", k.stat.launched_by},
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
  return {{"warnings", c.warnings},
          {"changes", rows(c.changes)},
          {"category_changes", rows(c.category_changes)},
          {"before_device_time_s", c.before_device_time_s},
          {"after_device_time_s", c.after_device_time_s},
          {"delta_device_time_s", c.after_device_time_s - c.before_device_time_s}};
}

}  // namespace stepcast::kernels
