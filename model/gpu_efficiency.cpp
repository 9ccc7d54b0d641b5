#include "model/gpu_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace stepcast::model {

const std::vector<PublicPoint>& public_points() {
  // Generated from measurements/public/*.csv by stepcast_public_table (io/public_measurements_main.cpp).
  static const std::vector<PublicPoint> points{
#include "public_points.inc"
  };
  return points;
}

namespace {

bool is_rate_kind(const std::string& kind) { return kind == "gemm" || kind == "attention" || kind == "memory"; }

const GpuSpec* find_spec(const std::vector<GpuSpec>& gpus, const std::string& name) {
  for (const auto& g : gpus)
    if (g.name == name || std::find(g.aliases.begin(), g.aliases.end(), name) != g.aliases.end()) return &g;
  return nullptr;
}

GpuInfo info_of(const GpuSpec& g) { return GpuInfo{g.name, g.vendor, g.sm, g.arch, g.capacity_gib, g.peaks}; }

// The datasheet figure a point's value is a fraction of: bandwidth for memory, dense BF16 (= FP16) otherwise.
double peak_of(const GpuPeaks& p, bool memory) { return memory ? p.memory_gbs : p.bf16_tflops; }

bool native(const std::vector<ArchSpec>& archs, const std::string& arch, const std::string& path) {
  const ArchSpec* a = find_arch(archs, arch);
  return path.empty() || (a != nullptr && a->native_path == path);
}

void add_file(std::vector<std::string>& files, const std::string& f) {
  if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// ln of the saturation x / (x + h); 0 for an unstated size (large).
double log_saturation(double x, double h) { return x > 0 && h > 0 ? std::log(x / (x + h)) : 0.0; }

struct Sample {
  double x, y;  // size, ln(value / (peak x path factor))
  const PublicPoint* point;
};

// ln E and h by least squares in ln(rate): h on a log grid over the sizes seen (0 when fewer than three
// distinct sizes say nothing about saturation), ln E the mean residual for that h.
Curve fit_curve(const std::vector<Sample>& s) {
  std::set<double> sizes;
  for (const auto& p : s)
    if (p.x > 0) sizes.insert(p.x);
  std::vector<double> hs{0.0};
  if (sizes.size() >= 3)
    for (double h = *sizes.begin() / 64; h <= *sizes.rbegin() * 4; h *= std::pow(2.0, 0.25)) hs.push_back(h);
  Curve best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (double h : hs) {
    std::vector<double> r;
    for (const auto& p : s) r.push_back(p.y - log_saturation(p.x, h));
    const double log_e = mean(r);
    double sse = 0;
    for (double v : r) sse += (v - log_e) * (v - log_e);
    if (sse < best_sse - 1e-12) {
      best_sse = sse;
      best.log_e = log_e;
      best.half_x = h;
    }
  }
  best.points = static_cast<int>(s.size());
  for (const auto& p : s) add_file(best.files, p.point->file);
  return best;
}

// E at a level: the family's curve shifted by the mean residual of the level's points.
Curve level_curve(const Curve& all, const std::vector<Sample>& s) {
  Curve c = all;
  std::vector<double> r;
  c.files.clear();
  for (const auto& p : s) {
    r.push_back(p.y - all.log_e - log_saturation(p.x, all.half_x));
    add_file(c.files, p.point->file);
  }
  c.log_e = all.log_e + mean(r);
  c.points = static_cast<int>(s.size());
  return c;
}

template <class T>
const T* lookup(const std::vector<std::pair<std::string, T>>& v, const std::string& key) {
  for (const auto& [k, x] : v)
    if (k == key) return &x;
  return nullptr;
}

}  // namespace

// The same silicon at the same clock with another memory (A100-SXM4 40GB and 80GB: GA100, 108 SMs, 312 dense BF16
// TFLOP/s; 1.56 against 2.04 TB/s): a compute kernel runs at the same efficiency on both, so a card's compute curve
// takes its twins' points too, and one best-of-sweep point on one of them no longer stands against at-size runs on
// the other (docs/gpus.md, "The model"). Memory-bound curves stay each card's own.
bool compute_twins(const std::vector<GpuSpec>& gpus, const std::string& a, const std::string& b) {
  if (a == b) return true;
  const GpuSpec* x = find_spec(gpus, a);
  const GpuSpec* y = find_spec(gpus, b);
  return x != nullptr && y != nullptr && x->arch == y->arch && x->peaks.sms > 0 && x->peaks.sms == y->peaks.sms &&
         x->peaks.bf16_tflops > 0 && x->peaks.bf16_tflops == y->peaks.bf16_tflops;
}

double point_size(const PublicPoint& p) {
  if (p.kind == "gemm") return std::cbrt(p.m * p.n * p.k);
  if (p.kind == "attention") return p.seqlen;
  if (p.kind == "memory") return p.bytes;
  return 0;
}

EfficiencyModel::EfficiencyModel(const std::vector<PublicPoint>& points, const std::vector<GpuSpec>& gpus,
                                 const std::vector<ArchSpec>& archs, const std::string& without_gpu)
    : gpus_(gpus), archs_(archs) {
  // The points that can be turned into efficiencies: rates of a GPU of the table that has the peak.
  std::vector<const PublicPoint*> usable;
  for (const auto& p : points) {
    if (!without_gpu.empty() && p.gpu == without_gpu) continue;
    const GpuSpec* g = find_spec(gpus, p.gpu);
    if (is_rate_kind(p.kind) && g != nullptr && peak_of(g->peaks, p.kind == "memory") > 0) usable.push_back(&p);
  }
  const auto raw = [&](const PublicPoint& p) {
    return std::log(p.value / peak_of(find_spec(gpus, p.gpu)->peaks, p.kind == "memory"));
  };
  // Path factors: probes first, then the same family's points off and on their native paths.
  std::set<std::pair<std::string, std::string>> off_native;
  for (const auto* p : usable)
    if (!native(archs, p->arch, p->path)) off_native.insert({p->arch, p->path});
  for (const auto& p : points)
    if (p.kind == "tensor_path" && !native(archs, p.arch, p.path) && (without_gpu.empty() || p.gpu != without_gpu))
      off_native.insert({p.arch, p.path});
  for (const auto& [arch, path] : off_native) {
    PathFactor f;
    std::vector<double> logs;
    for (const auto& p : points) {
      if (p.kind != "tensor_path" || p.arch != arch || p.path != path || (!without_gpu.empty() && p.gpu == without_gpu))
        continue;
      const GpuSpec* g = find_spec(gpus, p.gpu);
      const double fraction = p.unit == "fraction_of_peak" ? p.value
                              : (g != nullptr && g->peaks.bf16_tflops > 0) ? p.value / g->peaks.bf16_tflops
                                                                            : 0;
      if (fraction > 0) {
        logs.push_back(std::log(fraction));
        add_file(f.files, p.file);
      }
    }
    f.how = "probe";
    if (logs.empty()) {
      f.how = "family pairs";
      for (const auto* p : usable) {
        if (p->arch != arch || p->path != path) continue;
        std::vector<double> on_native;
        for (const auto* q : usable)
          if (q->family == p->family && q->kind == p->kind && native(archs, q->arch, q->path)) on_native.push_back(raw(*q));
        if (on_native.empty()) continue;
        logs.push_back(raw(*p) - mean(on_native));
        add_file(f.files, p->file);
      }
    }
    if (logs.empty()) f.how = "unmeasured";
    f.value = logs.empty() ? 1.0 : std::exp(mean(logs));
    f.points = static_cast<int>(logs.size());
    factors_.push_back({arch + "/" + path, f});
  }
  // Curves per family, then the arch and GPU levels.
  std::vector<std::string> names;
  for (const auto* p : usable)
    if (std::find(names.begin(), names.end(), p->family) == names.end()) names.push_back(p->family);
  for (const auto& name : names) {
    std::vector<Sample> s;
    for (const auto* p : usable)
      if (p->family == name)
        s.push_back({point_size(*p), raw(*p) - std::log(path_factor(p->arch, p->path).value), p});
    Family fam;
    fam.all = fit_curve(s);
    std::vector<std::string> arch_keys, gpu_keys;
    for (const auto& x : s) {
      if (std::find(arch_keys.begin(), arch_keys.end(), x.point->arch) == arch_keys.end()) arch_keys.push_back(x.point->arch);
      if (std::find(gpu_keys.begin(), gpu_keys.end(), x.point->gpu) == gpu_keys.end()) gpu_keys.push_back(x.point->gpu);
    }
    for (const auto& a : arch_keys) {
      std::vector<Sample> sub;
      for (const auto& x : s)
        if (x.point->arch == a) sub.push_back(x);
      fam.by_arch.push_back({a, level_curve(fam.all, sub)});
    }
    for (const auto& g : gpu_keys) {
      std::vector<Sample> sub;
      for (const auto& x : s)
        if (x.point->gpu == g || (x.point->kind != "memory" && compute_twins(gpus, g, x.point->gpu))) sub.push_back(x);
      fam.by_gpu.push_back({g, level_curve(fam.all, sub)});
    }
    families_.push_back({name, fam});
  }
}

PathFactor EfficiencyModel::path_factor(const std::string& arch, const std::string& path) const {
  if (native(archs_, arch, path)) return {1.0, 0, "native", {}};
  if (const PathFactor* f = lookup(factors_, arch + "/" + path)) return *f;
  return {1.0, 0, "unmeasured", {}};
}

// Per-SM rate of the path's ceiling (TFLOP/s per SM) or per-SM bandwidth; 0 when the SM count is unknown.
static double per_sm(const GpuPeaks& p, double factor, bool memory) {
  return p.sms > 0 ? peak_of(p, memory) * factor / p.sms : 0;
}

const Curve* EfficiencyModel::sibling_curve(const Family& f, const GpuInfo& gpu, const std::string& path, bool memory,
                                            std::string& name) const {
  // The closest card of the same arch whose SMs are as dense (within 25 %): the same silicon at another clock
  // or power (RTX PRO 6000 Max-Q for the Workstation Edition; not the GeForce RTX 5090, whose FP32-accumulate
  // tensor rate per SM is half), so the same kernels run at the same efficiency.
  const double mine = per_sm(gpu.peaks, memory ? 1.0 : path_factor(gpu.arch, path).value, memory);
  const Curve* best = nullptr;
  double best_gap = std::log(1.25);
  for (const auto& [other, curve] : f.by_gpu) {
    const GpuSpec* g = find_spec(gpus_, other);
    if (g == nullptr || g->arch != gpu.arch || mine <= 0) continue;
    const double theirs = per_sm(g->peaks, memory ? 1.0 : path_factor(g->arch, path).value, memory);
    if (theirs <= 0) continue;
    const double gap = std::abs(std::log(theirs / mine));
    if (gap <= best_gap) {
      best_gap = gap;
      best = &curve;
      name = other;
    }
  }
  return best;
}

Achieved EfficiencyModel::rate_of(const GpuInfo& gpu, const std::string& family, const std::string& path,
                                  bool memory, double x) const {
  Achieved a;
  a.family = family;
  a.path = path;
  a.peak = peak_of(gpu.peaks, memory);
  a.path_factor = memory ? PathFactor{1.0, 0, "native", {}} : path_factor(gpu.arch, path);
  a.level = "none";
  if (const Family* f = lookup(families_, family)) {
    std::string sibling;
    if (const Curve* c = lookup(f->by_gpu, gpu.name)) {
      a.curve = *c;
      a.level = "gpu";
    } else if (const Curve* c1 = sibling_curve(*f, gpu, path, memory, sibling)) {
      a.curve = *c1;
      a.level = "sibling " + sibling;
    } else if (const Curve* c2 = lookup(f->by_arch, gpu.arch)) {
      a.curve = *c2;
      a.level = "arch";
    } else {
      a.curve = f->all;
      a.level = "family";
    }
    a.efficiency = std::exp(a.curve.log_e + log_saturation(x, a.curve.half_x));
  }
  a.rate = a.peak * a.path_factor.value * a.efficiency;
  return a;
}

Achieved EfficiencyModel::achieved(const GpuInfo& gpu, KernelCategory category, double x) const {
  const ArchSpec* arch = find_arch(archs_, gpu.arch);
  if (arch == nullptr) return rate_of(gpu, "", "", category == KernelCategory::memory, x);
  const KernelChoice& k = arch->kernel(category);
  return rate_of(gpu, k.family, k.path, category == KernelCategory::memory, x);
}

Achieved EfficiencyModel::achieved(const GpuInfo& gpu, KernelCategory category, const KernelChoice& choice,
                                   double x) const {
  return rate_of(gpu, choice.family, choice.path, category == KernelCategory::memory, x);
}

Achieved EfficiencyModel::achieved(const PublicPoint& p) const {
  const GpuSpec* g = find_spec(gpus_, p.gpu);
  return g == nullptr ? Achieved{} : rate_of(info_of(*g), p.family, p.path, p.kind == "memory", point_size(p));
}

std::vector<std::string> EfficiencyModel::families() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : families_) out.push_back(name);
  return out;
}

const Curve* EfficiencyModel::curve(const std::string& family, const std::string& level, const std::string& key) const {
  const Family* f = lookup(families_, family);
  if (f == nullptr) return nullptr;
  if (level == "family") return &f->all;
  return lookup(level == "arch" ? f->by_arch : f->by_gpu, key);
}

Distance gpu_distance(const GpuInfo& a, const GpuInfo& b) {
  if (a.name == b.name) return Distance::same_gpu;
  if (a.vendor != b.vendor) return Distance::another_vendor;
  if (a.arch.empty() || a.arch != b.arch) return Distance::another_arch;
  // The same arch at another tensor rate per SM (GeForce halves it for FP32 accumulate) runs its kernels at
  // another efficiency (docs/gpus.md): as far as another arch. Unknown SM counts: the arch decides.
  const double da = per_sm(a.peaks, 1.0, false), db = per_sm(b.peaks, 1.0, false);
  if (da > 0 && db > 0 && std::abs(std::log(da / db)) > std::log(1.25)) return Distance::another_arch;
  return Distance::same_arch;
}

const char* distance_name(Distance d) {
  switch (d) {
    case Distance::same_gpu: return "the same GPU";
    case Distance::same_arch: return "the same arch and SM density";
    case Distance::another_arch: return "another arch";
    case Distance::another_vendor: return "another vendor";
  }
  return "the same GPU";
}

namespace {

// Points comparable across GPUs: the same measurement at a size within 1.5x.
bool comparable(const PublicPoint& a, const PublicPoint& b) {
  if (a.kind != b.kind || a.family != b.family || a.direction != b.direction || a.head_dim != b.head_dim ||
      a.causal != b.causal)
    return false;
  const double xa = point_size(a), xb = point_size(b);
  if (xa == 0 || xb == 0) return xa == xb || a.kind == "memory";
  return std::abs(std::log(xa / xb)) <= std::log(1.5);
}

}  // namespace

std::vector<HeldOutPair> held_out_pairs(const std::vector<PublicPoint>& points, const std::vector<GpuSpec>& gpus,
                                        const std::vector<ArchSpec>& archs) {
  std::vector<HeldOutPair> pairs;
  std::vector<std::string> names;
  for (const auto& p : points)
    if (is_rate_kind(p.kind) && find_spec(gpus, p.gpu) != nullptr &&
        std::find(names.begin(), names.end(), p.gpu) == names.end())
      names.push_back(p.gpu);
  for (const auto& held : names) {
    const EfficiencyModel m(points, gpus, archs, held);
    const GpuInfo target = info_of(*find_spec(gpus, held));
    for (const auto& t : points) {
      if (t.gpu != held || !is_rate_kind(t.kind)) continue;
      for (const auto& s : points) {
        const GpuSpec* sg = find_spec(gpus, s.gpu);
        if (s.gpu == held || sg == nullptr || !comparable(t, s)) continue;
        const Achieved to_a = m.achieved(t);
        if (to_a.path_factor.how == "unmeasured") continue;  // no evidence left for the path: not a transfer
        const double to = to_a.rate, from = m.achieved(s).rate;
        if (!(to > 0 && from > 0)) continue;
        pairs.push_back({t, s, s.value * to / from, gpu_distance(info_of(*sg), target)});
      }
    }
  }
  return pairs;
}

ErrorBand error_band(const std::vector<HeldOutPair>& pairs, Distance d) {
  std::vector<double> e;
  std::set<std::string> gpus;
  for (const auto& p : pairs)
    if (p.distance == d) {
      const double r = p.predicted / p.target.value;
      e.push_back(std::max(r, 1 / r) - 1);
      gpus.insert(p.target.gpu);
    }
  ErrorBand b;
  b.pairs = static_cast<int>(e.size());
  b.gpus = static_cast<int>(gpus.size());
  if (e.empty()) return b;
  std::sort(e.begin(), e.end());
  const size_t at = e.size() < 10 ? e.size() - 1 : static_cast<size_t>(std::ceil(0.9 * static_cast<double>(e.size()))) - 1;
  b.half_width = e[at];
  return b;
}

const EfficiencyModel& shipped_efficiency() {
  static const EfficiencyModel m(public_points(), known_gpus(), known_archs());
  return m;
}

ErrorBand shipped_band(Distance d) {
  static const std::vector<HeldOutPair> pairs = held_out_pairs(public_points(), known_gpus(), known_archs());
  return error_band(pairs, d);
}

}  // namespace stepcast::model
