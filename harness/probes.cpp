#include "harness/probes.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "calibrate/records.hpp"
#include "kernels/cupti_table.hpp"
#include "model/errors.hpp"

namespace stepcast::harness {
namespace {

namespace fs = std::filesystem;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const std::set<std::string>& known_probes() {
  static const std::set<std::string> probes = {"scaling", "padding", "ce", "kernels", "host-floor", "first-seen"};
  return probes;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream ss;
  ss << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return ss.str();
}

std::string kernel_dir(const SweepOptions& o) {
  if (!o.kernel_dir.empty()) return o.kernel_dir;
  std::string base = o.out;
  if (base.size() > 6 && base.substr(base.size() - 6) == ".jsonl") base.resize(base.size() - 6);
  return base + ".kernels";
}

nlohmann::json tier_details(const Tier& tier, const Model& model) {
  nlohmann::json layers = nlohmann::json::object();
  for (const auto& [type, info] : model.layer_info())
    layers[type] = {{"mask_path", info.mask_path}, {"sdpa_backend", info.backend}, {"kv_expanded", info.gqa_expanded}};
  return {{"attention", model::attention_name(tier)},
          {"experts", model::experts_name(tier)},
          {"cross_entropy", tier.ce_chunked ? "chunked" : "full"},
          {"mask", tier.mask_always ? "explicit" : "hf"},
          {"gqa", model::gqa_name(tier.gqa)},
          {"layer_types", layers}};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct PointResult {
  std::vector<double> times_s;
  std::vector<double> host_times_s;  // host wall clock of each timed step, before synchronising
  double first_step_s = -1;          // first-seen: host wall clock of the first step, synchronised
  double first_step_event_s = -1;    // first-seen: the same step between CUDA events
  double first_step_host_s = -1;     // first-seen: the same step's host wall clock before synchronising
  bool first_in_process = false;
  int64_t launches_per_step = -1;    // host-floor: kernels of one step under CUPTI (-1: no activity source)
  nlohmann::json launch_counts;
  std::vector<double> ce_times_s;
  double loss = 0;
  int64_t peak_bytes = 0;
  nlohmann::json kernels;  // launch counts + table file, kernels probe only
};

// One step between CUDA events; `host_s` gets the host's wall clock from before the forward is issued to the
// return of backward, before synchronising.
double timed_step(Model& model, const Batch& batch, const Tier& tier, StepTimer& timer, double* loss,
                  double* host_s = nullptr) {
  model.zero_grad();
  timer.start();
  const auto h0 = std::chrono::steady_clock::now();
  torch::Tensor l = model.step(batch, tier);
  const double host = seconds_since(h0);
  timer.stop();
  const double s = timer.seconds();
  if (host_s != nullptr) *host_s = host;
  if (loss != nullptr) *loss = l.item<double>();
  return s;
}

// The very first step at a shape: the host waits for the device before and after, so the wall clock holds
// everything the step costs (plans, workspaces, the device work), and CUDA events time the device side.
void first_step(Model& model, const Batch& batch, const Tier& tier, StepTimer& timer, PointResult& r) {
  const torch::Device device = model.options().device;
  model.zero_grad();
  synchronize(device);
  r.first_in_process = model.forwards() == 0;
  const auto h0 = std::chrono::steady_clock::now();
  timer.start();
  model.step(batch, tier);
  r.first_step_host_s = seconds_since(h0);
  timer.stop();
  synchronize(device);
  r.first_step_s = seconds_since(h0);
  r.first_step_event_s = timer.seconds();
  model.zero_grad();
}

// Kernel launches of one step under the activity source (no table: only the counts).
void count_step_launches(Model& model, const Batch& batch, const Tier& tier, ActivitySource& activity,
                         PointResult& r) {
  model.zero_grad();
  activity.start();
  model.step(batch, tier);
  const LaunchCounts c = count_launches(activity.stop());
  model.zero_grad();
  r.launches_per_step = c.kernels;
  r.launch_counts = {{"kernel", c.kernels}, {"memcpy", c.memcpy}, {"memset", c.memset}, {"short_kernels", c.short_kernels}};
}

// The CE alone on the final hidden states of this batch: forward (fp32 logits, softcap, CE) + backward.
std::vector<double> time_ce(Model& model, const Batch& batch, const Tier& tier, const SweepOptions& o,
                            StepTimer& timer) {
  torch::Tensor hidden = model.hidden(batch, tier).detach().requires_grad_(true);
  std::vector<double> times;
  for (int64_t i = 0; i < o.warmup + o.repetitions; ++i) {
    hidden.mutable_grad().reset();
    timer.start();
    model.ce_loss(hidden, batch.labels, tier).backward();
    timer.stop();
    const double s = timer.seconds();
    if (i >= o.warmup) times.push_back(s);
  }
  model.zero_grad();
  return times;
}

}  // namespace

std::string rows_text(const std::vector<int64_t>& rows) {
  std::string s;
  for (int64_t r : rows) {
    if (!s.empty()) s += ',';
    s += std::to_string(r);  // append, not "," + ...: GCC 12 warns falsely (-Wrestrict) on the concatenation
  }
  return s;
}

std::string file_safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return s;
}

std::vector<ActivityRecord> write_step_kernel_table(Model& model, const Batch& batch, const Tier& tier,
                                                    const DeviceInfo& dev, ActivitySource& activity,
                                                    const std::string& label, const std::string& file) {
  model.zero_grad();
  activity.start();
  model.step(batch, tier);
  std::vector<ActivityRecord> records = activity.stop();
  model.zero_grad();
  kernels::CuptiTableHeader header;
  header.device = dev.name;
  header.compute_major = dev.compute_major;
  header.compute_minor = dev.compute_minor;
  header.num_sms = dev.num_sms;
  header.steps = 1;
  header.label = label;
  kernels::write_cupti_table(build_kernel_table(records, header), file);
  return records;
}

namespace {

nlohmann::json capture_kernels(Model& model, const Batch& batch, const Tier& tier, const PointSpec& p,
                               const SweepOptions& o, const DeviceInfo& dev, ActivitySource& activity) {
  const std::string label = o.model_label + " " + std::to_string(p.rows.size()) + "x" + std::to_string(p.width) +
                            " rows=" + rows_text(p.rows) + " " + p.tier;
  const fs::path dir = kernel_dir(o);
  fs::create_directories(dir);
  const fs::path file = dir / (file_safe(p.probe + "_" + p.tier + "_" + std::to_string(p.rows.size()) + "x" +
                                         std::to_string(p.width) + "_" + rows_text(p.rows)) + ".jsonl");
  const std::vector<ActivityRecord> records =
      write_step_kernel_table(model, batch, tier, dev, activity, label, file.string());
  const LaunchCounts c = count_launches(records);
  return {{"kernel_table", file.filename().string()},
          {"launches", {{"kernel", c.kernels}, {"memcpy", c.memcpy}, {"memset", c.memset}, {"short_kernels", c.short_kernels}}},
          {"kernel_time_s", static_cast<double>(c.kernel_ns) * 1e-9},
          {"copy_time_s", static_cast<double>(c.copy_ns) * 1e-9}};
}

PointResult measure_point(Model& model, const PointSpec& p, const Tier& tier, const SweepOptions& o,
                          const DeviceInfo& dev, ActivitySource* activity) {
  const torch::Device device = model.options().device;
  PointResult r;
  Batch batch = make_batch(p.rows, p.width, model.shape().vocab_size, o.seed, device);
  StepTimer timer(device);
  if (p.probe == "first-seen") first_step(model, batch, tier, timer, r);
  for (int64_t i = 0; i < o.warmup; ++i) timed_step(model, batch, tier, timer, nullptr);
  model.zero_grad();
  synchronize(device);
  reset_peak(device);
  for (int64_t i = 0; i < o.repetitions; ++i) {
    double host = 0;
    r.times_s.push_back(timed_step(model, batch, tier, timer, &r.loss, &host));
    r.host_times_s.push_back(host);
  }
  r.peak_bytes = peak_allocated_bytes(device);
  model.zero_grad();
  if (p.probe == "ce") r.ce_times_s = time_ce(model, batch, tier, o, timer);
  if (p.probe == "kernels" && activity != nullptr) r.kernels = capture_kernels(model, batch, tier, p, o, dev, *activity);
  if (p.probe == "host-floor" && activity != nullptr) count_step_launches(model, batch, tier, *activity, r);
  return r;
}

}  // namespace

calibrate::Record point_record(const PointSpec& p, const SweepOptions& o, const DeviceInfo& dev, const Model& model,
                               const Tier& tier) {
  calibrate::Record rec;
  rec.model = o.model_label;
  rec.gpu = dev.name;
  rec.tier = p.tier;
  rec.rows = p.rows;
  rec.width = p.width;
  int64_t kept = 0;
  for (int64_t r : p.rows) kept += r - 1;
  rec.kept_tokens = kept;
  const auto& lora = model.options().lora;
  rec.extra = {{"probe", p.probe},
               {"source", "stepcast measure (harness, LibTorch " + dev.torch_version + "): " + o.command},
               {"padding_frac", p.padding_frac},
               {"torch_version", dev.torch_version},
               {"cuda_runtime", dev.cuda_runtime},
               {"cuda_driver", dev.cuda_driver},
               {"driver_version", dev.driver_version},
               {"gpu_arch", dev.arch},
               {"num_sms", dev.num_sms},
               {"tier_details", tier_details(tier, model)},
               {"lora", {{"rank", lora.rank}, {"alpha", lora.alpha}, {"dropout", lora.dropout}, {"targets", lora.targets},
                         {"modules", model.lora_modules()}, {"dtype", lora.fp32 ? "float32" : "model"}}},
               {"gradient_checkpointing", model.options().checkpointing},
               {"dtype", model.options().dtype == torch::kBFloat16 ? "bfloat16" : "other"},
               {"warmup", o.warmup},
               {"repetitions", o.repetitions},
               {"seed", o.seed},
               {"measured_at", utc_now()}};
  return rec;
}

namespace {

void add_result(const PointResult& r, calibrate::Record& rec) {
  rec.step_s = median(r.times_s);
  rec.extra["times_s"] = r.times_s;
  rec.extra["host_wall_s"] = median(r.host_times_s);
  rec.extra["host_wall_times_s"] = r.host_times_s;
  rec.extra["loss"] = r.loss;
  if (r.first_step_s >= 0) {
    rec.extra["first_seen"] = true;
    rec.extra["first_step_s"] = r.first_step_s;
    rec.extra["first_step_event_s"] = r.first_step_event_s;
    rec.extra["first_step_host_wall_s"] = r.first_step_host_s;
    rec.extra["first_in_process"] = r.first_in_process;
  }
  if (r.launches_per_step >= 0) {
    rec.extra["launches_per_step"] = r.launches_per_step;
    rec.extra["launch_counts"] = r.launch_counts;
  }
  if (!r.ce_times_s.empty()) {
    rec.extra["ce_s"] = median(r.ce_times_s);
    rec.extra["ce_times_s"] = r.ce_times_s;
  }
  if (!r.kernels.is_null()) rec.extra["kernels"] = r.kernels;
}

void print_progress(size_t index, size_t total, const PointSpec& p, const std::string& outcome) {
  std::cerr << "[" << index << "/" << total << "] " << p.probe << " " << p.tier << " " << p.rows.size() << "x"
            << p.width << " (rows " << rows_text(p.rows) << "): " << outcome << std::endl;
}

// The primer's width: 256 unless a first-seen point needs 1 x 256 new, then the next free multiple of 64.
int64_t primer_width(const std::vector<PointSpec>& points) {
  std::set<int64_t> taken;
  for (const auto& p : points)
    if (p.probe == "first-seen" && p.rows.size() == 1) taken.insert(p.width);
  int64_t width = 256;
  while (taken.count(width)) width += 64;
  return width;
}

// One short step per tier still to measure (errors are left for the points themselves to report).
void prime(Model& model, const std::vector<PointSpec>& points, const std::set<std::string>& done) {
  std::set<std::string> tiers;
  for (const auto& p : points)
    if (!done.count(p.key())) tiers.insert(p.tier);
  const int64_t width = primer_width(points);
  for (const auto& t : tiers) {
    try {
      Batch b = make_batch({width}, width, model.shape().vocab_size, 1, model.options().device);
      model.step(b, parse_tier(t));
    } catch (const std::exception&) {
    }
    model.zero_grad();
  }
}

std::string fixed(double v, int digits) {
  std::ostringstream ss;
  ss << std::fixed << std::setprecision(digits) << v;
  return ss.str();
}

PointSpec make_point(const std::string& probe, const std::string& tier, int64_t rows, int64_t width, double pad) {
  PointSpec p{probe, model::tier_label(parse_tier(tier)), padded_rows(rows, width, pad), width, 0.0};
  int64_t real = 0;
  for (int64_t r : p.rows) real += r;
  p.padding_frac = 1.0 - static_cast<double>(real) / static_cast<double>(rows * width);
  return p;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, sep)) parts.push_back(part);
  return parts;
}

void parse_point(const std::string& text, const SweepOptions& o, std::vector<PointSpec>& out, Diagnostics& d);

// "host-floor[:TIER]": the preset grid, widths outer.
void expand_host_floor(const std::vector<std::string>& f, const SweepOptions& o, std::vector<PointSpec>& out,
                       Diagnostics& d) {
  const std::string tier = f.size() == 2 ? ":" + f[1] : "";
  for (int64_t w : kHostFloorWidths)
    for (int64_t r : kHostFloorRows)
      parse_point("host-floor:" + std::to_string(r) + "x" + std::to_string(w) + tier, o, out, d);
}

// "PROBE:RxW[:PADDING][:TIER]"; problems go to `d`.
void parse_point(const std::string& text, const SweepOptions& o, std::vector<PointSpec>& out, Diagnostics& d) {
  const std::vector<std::string> f = split(text, ':');
  const std::string bad = "--points '" + text + "'. Violated constraint: PROBE:ROWSxWIDTH[:PADDING][:TIER]";
  if (!f.empty() && f[0] == "host-floor" && (f.size() == 1 || (f.size() == 2 && f[1].find('x') == std::string::npos)))
    return expand_host_floor(f, o, out, d);
  if (f.size() < 2 || f.size() > 4 || !known_probes().count(f[0])) return d.add(bad);
  try {
    const auto x = f[1].find('x');
    if (x == std::string::npos) return d.add(bad);
    const int64_t rows = std::stoll(f[1].substr(0, x));
    const int64_t width = std::stoll(f[1].substr(x + 1));
    double pad = 0;
    std::string tier = o.tiers.empty() ? std::string(kDefaultTier) : o.tiers.front();
    if (f.size() >= 3) {
      if (f[2].find('/') != std::string::npos && f.size() == 3) {
        tier = f[2];
      } else {
        pad = std::stod(f[2]);
        if (f.size() == 4) tier = f[3];
      }
    }
    if (rows < 1 || width < 2 || pad < 0 || pad >= 1) return d.add(bad);
    if (f[0] == "first-seen" && pad != 0)
      return d.add("--points '" + text + "'. Violated constraint: a first-seen point is unpadded (PADDING 0)");
    out.push_back(make_point(f[0], tier, rows, width, pad));
  } catch (const InputError& e) {
    for (const auto& line : e.problems()) d.add("--points '" + text + "': " + line);
  } catch (const std::exception&) {
    d.add(bad);
  }
}

// A first-seen point's rows x width must not have run earlier in the sweep (any probe, any tier).
void check_first_seen(const std::vector<PointSpec>& points) {
  Diagnostics d;
  std::set<std::pair<int64_t, int64_t>> earlier;
  for (const auto& p : points) {
    const std::pair<int64_t, int64_t> shape{static_cast<int64_t>(p.rows.size()), p.width};
    if (p.probe == "first-seen" && earlier.count(shape))
      d.add("--points 'first-seen:" + std::to_string(shape.first) + "x" + std::to_string(shape.second) +
            "'. Violated constraint: a shape new to the process (an earlier point of this sweep runs " +
            std::to_string(shape.first) + "x" + std::to_string(shape.second) + "; put the first-seen point first)");
    earlier.insert(shape);
  }
  d.throw_if_any();
}

}  // namespace

std::string point_key(const std::string& probe, const std::string& tier, const std::vector<int64_t>& rows,
                      int64_t width) {
  return probe + "|" + tier + "|" + rows_text(rows) + "|" + std::to_string(width);
}

std::string PointSpec::key() const { return point_key(probe, tier, rows, width); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<PointSpec> plan_points(const SweepOptions& o) {
  Diagnostics d;
  for (const auto& probe : o.probes)
    if (!known_probes().count(probe))
      d.add("--probe '" + probe + "'. Violated constraint: one of scaling, padding, ce, kernels, host-floor, first-seen");
  for (const auto& t : o.tiers) {
    try {
      parse_tier(t);
    } catch (const InputError& e) {
      for (const auto& line : e.problems()) d.add("--tiers: " + line);
    }
  }
  if (o.shapes.empty() && o.points.empty())
    d.add("no shapes. Violated constraint: --shapes RxW,..., --widths with --rows, or --points");
  for (const auto& s : o.shapes)
    if (s.rows < 1 || s.width < 2)
      d.add("shape " + std::to_string(s.rows) + "x" + std::to_string(s.width) + ". Violated constraint: rows >= 1, width >= 2");
  for (double p : o.padding)
    if (p < 0 || p >= 1) d.add("--padding " + std::to_string(p) + ". Violated constraint: 0 <= padding < 1");
  if (o.repetitions < 1) d.add("--repetitions = " + std::to_string(o.repetitions) + ". Violated constraint: >= 1");
  if (o.warmup < 0) d.add("--warmup = " + std::to_string(o.warmup) + ". Violated constraint: >= 0");
  std::vector<PointSpec> points;
  std::vector<PointSpec> explicit_points;
  for (const auto& text : o.points) parse_point(text, o, explicit_points, d);
  d.throw_if_any();
  for (const auto& tier : o.tiers) {
    for (const auto& probe : o.probes) {
      for (const auto& s : o.shapes) {
        if (o.max_tokens > 0 && s.rows * s.width > o.max_tokens) continue;
        std::vector<double> pads = probe == "padding" ? o.padding : std::vector<double>{0.0};
        for (double pad : pads) points.push_back(make_point(probe, tier, s.rows, s.width, pad));
      }
    }
  }
  for (const auto& p : explicit_points)
    if (o.max_tokens <= 0 || static_cast<int64_t>(p.rows.size()) * p.width <= o.max_tokens) points.push_back(p);
  check_first_seen(points);
  return points;
}

std::vector<std::string> measured_keys(const std::string& path) {
  std::vector<std::string> keys;
  if (!fs::exists(path)) return keys;
  for (const auto& r : calibrate::read_records(path)) {
    const std::string probe = r.extra.contains("probe") && r.extra["probe"].is_string() ? r.extra["probe"].get<std::string>()
                                                                                        : "scaling";
    keys.push_back(point_key(probe, r.tier, r.rows, r.width));
  }
  return keys;
}

namespace {

// The baseline of allocated memory every point must start and end at, taken after the primer.
int64_t take_baseline(Model& model, const std::vector<PointSpec>& points, const std::set<std::string>& done,
                      bool primer) {
  const torch::Device device = model.options().device;
  if (primer) prime(model, points, done);
  model.zero_grad();
  synchronize(device);
  release_cached(device);
  return allocated_bytes(device);
}

// A file whose last line lacks its newline (edited by hand) would glue the next record onto it.
void end_with_newline(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;  // a new file: append_record creates it
  char last = '\n';
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const bool unterminated = size > 0 && ::pread(fd, &last, 1, size - 1) == 1 && last != '\n';
  const bool ok = !unterminated || (::write(fd, "\n", 1) == 1 && ::fsync(fd) == 0);
  ::close(fd);
  if (!ok) throw Error(path + ": cannot end the last record with a newline before appending");
}

// After an OOM: the allocated memory must be back at the baseline, or every later peak is wrong.
void reverify_baseline(int64_t after, int64_t baseline, size_t point, const SweepOptions& o) {
  if (after == baseline) return;
  throw CheckFailed("after the out-of-memory error at point " + std::to_string(point) + ", allocated memory is " +
                    std::to_string(after - baseline) + " bytes off the baseline (" + std::to_string(baseline) +
                    " bytes), so every later peak would be wrong. The sweep stopped; the finished points are in " +
                    o.out + ": run the same command again to resume in a fresh process (docs/harness.md)");
}

std::string outcome_text(const calibrate::Record& rec, const SweepOptions& o, const DeviceInfo& dev) {
  std::string outcome = "step " + fixed(*rec.step_s, 3) + " s (median of " + std::to_string(o.repetitions) + ")" +
                        (dev.cuda ? ", peak " + fixed(*rec.peak_gib, 2) + " GiB" : "");
  if (rec.extra.contains("ce_s")) outcome += ", CE " + fixed(rec.extra["ce_s"].get<double>() * 1e3, 1) + " ms";
  if (rec.extra.contains("first_step_s"))
    outcome += ", first step " + fixed(rec.extra["first_step_s"].get<double>(), 3) + " s" +
               (rec.extra["first_in_process"].get<bool>() ? " (first in process)" : "");
  if (rec.extra.contains("launches_per_step"))
    outcome += ", " + std::to_string(rec.extra["launches_per_step"].get<int64_t>()) + " launches";
  outcome += ", host " + fixed(rec.extra["host_wall_s"].get<double>(), 3) + " s";
  return outcome;
}

}  // namespace

Faults faults_from_env() {
  const char* value = std::getenv(kFaultVariable);
  if (value == nullptr || *value == '\0') return {};
  const std::string text = value;
  const size_t at = text.find('@');
  const std::string kind = text.substr(0, at);
  int64_t n = 0;
  try {
    size_t used = 0;
    n = at == std::string::npos ? 0 : std::stoll(text.substr(at + 1), &used);
    if (used != text.size() - at - 1) n = 0;
  } catch (const std::exception&) {
    n = 0;
  }
  Faults f;
  if (n >= 1 && kind == "kill") f.kill_at = n;
  else if (n >= 1 && (kind == "oom" || kind == "leak")) f.oom_at = n;
  else
    throw InputError(std::string(kFaultVariable) + " = '" + text + "'. Violated constraint: kill@N, oom@N or leak@N, N >= 1");
  if (kind == "leak") f.leaked_bytes = int64_t{1} << 20;
  return f;
}

SweepSummary run_sweep(Model& model, const SweepOptions& o, const DeviceInfo& dev, ActivitySource* activity) {
  const Faults faults = faults_from_env();
  const std::vector<PointSpec> points = plan_points(o);
  const std::vector<std::string> done_list = measured_keys(o.out);
  end_with_newline(o.out);
  const std::set<std::string> done(done_list.begin(), done_list.end());
  const torch::Device device = model.options().device;
  SweepSummary summary;
  const auto sweep_start = std::chrono::steady_clock::now();
  // A first-seen point that would be the process's first forward runs before the primer (the primer would
  // otherwise pay the process start for it); the primer and the baseline follow that point.
  size_t first_pending = 0;
  while (first_pending < points.size() && done.count(points[first_pending].key())) ++first_pending;
  const bool start_point = first_pending < points.size() && points[first_pending].probe == "first-seen" &&
                           model.forwards() == 0;
  int64_t baseline = start_point ? -1 : take_baseline(model, points, done, o.primer);
  for (size_t i = 0; i < points.size(); ++i) {
    const PointSpec& p = points[i];
    if (done.count(p.key())) {
      ++summary.skipped;
      print_progress(i + 1, points.size(), p, "already measured, skipped");
      continue;
    }
    if (p.probe == "first-seen" && model.seen(static_cast<int64_t>(p.rows.size()), p.width)) {
      ++summary.failed;
      print_progress(i + 1, points.size(), p,
                     "FAILED (no record): refused, this process has already run " + std::to_string(p.rows.size()) +
                         "x" + std::to_string(p.width) + "; a first-seen point needs a shape new to the process");
      continue;
    }
    const Tier tier = parse_tier(p.tier);
    const int64_t before = allocated_bytes(device);
    calibrate::Record rec = point_record(p, o, dev, model, tier);
    // The process-start point starts below the baseline (no library workspaces yet): only its end is checked.
    bool ok = baseline < 0 || before == baseline;
    std::string outcome;
    const bool inject_oom = faults.oom_at == static_cast<int64_t>(i + 1);
    try {
      if (inject_oom) throw std::runtime_error("out of memory (injected by " + std::string(kFaultVariable) + ")");
      PointResult r = measure_point(model, p, tier, o, dev, activity);
      if (faults.kill_at == static_cast<int64_t>(i + 1)) ::raise(SIGKILL);  // measured, not yet recorded
      rec = point_record(p, o, dev, model, tier);  // again: layer_info now holds this point's backends
      add_result(r, rec);
      if (dev.cuda) rec.peak_gib = static_cast<double>(r.peak_bytes) / kGiB;
      outcome = outcome_text(rec, o, dev);
      ++summary.measured;
    } catch (const std::exception& e) {
      if (!is_oom(e)) {
        ++summary.failed;
        std::string what = e.what();
        print_progress(i + 1, points.size(), p, "FAILED (no record): " + what.substr(0, what.find('\n')));
        model.zero_grad();
        release_cached(device);
        if (baseline < 0) baseline = take_baseline(model, points, done, o.primer);
        continue;
      }
      rec.oom = true;
      ++summary.oom;
      outcome = "out of memory";
    }
    model.zero_grad();
    synchronize(device);
    release_cached(device);
    const int64_t after = allocated_bytes(device) + (inject_oom ? faults.leaked_bytes : 0);
    if (baseline < 0) baseline = take_baseline(model, points, done, o.primer);
    rec.extra["baseline_gib"] = static_cast<double>(baseline) / kGiB;
    // A peak is only trusted when the point started and ended at the baseline (after an OOM, leaked
    // blocks would inflate every later peak).
    ok = ok && after == baseline;
    rec.peak_valid = ok;
    if (!ok) {
      rec.extra["baseline_drift_bytes"] = {before - baseline, after - baseline};
      outcome += " (peak_valid: false, allocated memory off the baseline)";
    }
    if (rec.oom && ok) outcome += "; baseline re-verified";
    calibrate::append_record(o.out, rec);
    print_progress(i + 1, points.size(), p, outcome);
    if (rec.oom) reverify_baseline(after, baseline, i + 1, o);
  }
  summary.device_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sweep_start).count();
  return summary;
}

}  // namespace stepcast::harness
