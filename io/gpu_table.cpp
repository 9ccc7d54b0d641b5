#include "io/gpu_table.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <sstream>

#include "io/document.hpp"

namespace stepcast::io {
namespace {

// "9.0" → 90, "12.0" → 120; -1 when malformed.
int parse_compute_capability(const std::string& s) {
  const size_t dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 2 != s.size()) return -1;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != dot && !std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
  return std::stoi(s.substr(0, dot)) * 10 + (s[dot + 1] - '0');
}

void read_sources(MapReader& entry, const std::vector<std::string>& figures) {
  if (figures.empty()) {
    if (entry.has("sources")) entry.node("sources");
    return;
  }
  if (!entry.has("sources")) {
    entry.problem("no sources for " + figures.front() + ". Violated constraint: every figure has a source");
    return;
  }
  MapReader sources = entry.child("sources");
  for (const auto& figure : figures) {
    std::string text;
    if (sources.read(figure, text, true) && text.empty())
      sources.problem(sources.node(figure), "sources." + figure + " is empty. Violated constraint: a citation");
  }
  sources.finish();
}

// The optional compute and memory figures (scenarios/gpus.yaml's header), each > 0 and each with a source.
void read_peaks(MapReader& entry, model::GpuPeaks& p, std::vector<std::string>& figures) {
  const std::pair<const char*, double*> rates[] = {{"peak_bf16_tflops", &p.bf16_tflops},
                                                   {"peak_fp32_tflops", &p.fp32_tflops},
                                                   {"memory_bandwidth_gbs", &p.memory_gbs},
                                                   {"memory_gb", &p.memory_gb},
                                                   {"l2_mb", &p.l2_mb}};
  for (const auto& [key, out] : rates)
    if (entry.has(key)) {
      entry.read(key, *out, false, 0.0);
      figures.push_back(key);
    }
  if (entry.has("sms")) {
    int64_t sms = 0;
    entry.read("sms", sms, false, 1, 100000);
    p.sms = static_cast<int>(sms);
    figures.push_back("sms");
  }
}

// NVLink and PCIe: a generation and a per-direction bandwidth each, both or neither (model/parallel.hpp).
void read_interconnect(MapReader& entry, model::Interconnect& ic, std::vector<std::string>& figures) {
  const auto link = [&](const std::string& prefix, int& generation, double& gbps) {
    const std::string gen_key = prefix + "_generation", gbps_key = prefix + "_gbps";
    if (entry.has(gen_key) != entry.has(gbps_key)) {
      entry.problem(gen_key + " and " + gbps_key + " go together. Violated constraint: both or neither");
      return;
    }
    if (!entry.has(gen_key)) return;
    int64_t gen = 0;
    entry.read(gen_key, gen, false, 1, 9);
    entry.read(gbps_key, gbps, false, 0.0);
    generation = static_cast<int>(gen);
    figures.push_back(gbps_key);
  };
  link("nvlink", ic.nvlink_generation, ic.nvlink_gbps);
  link("pcie", ic.pcie_generation, ic.pcie_gbps);
}

// `default_coefficients`, a file relative to the table's folder (scenarios/) that must exist: the build fails at
// the key otherwise, so every front end finds the default predictor it names.
void read_default_coefficients(MapReader& entry, std::string& out) {
  if (!entry.read("default_coefficients", out, false)) return;
  std::error_code ec;
  const auto file = std::filesystem::path(entry.file()).parent_path() / out;
  if (out.empty() || std::filesystem::path(out).is_absolute() || !std::filesystem::is_regular_file(file, ec))
    entry.problem(entry.node("default_coefficients"),
                  entry.path() + ".default_coefficients = '" + out + "'. Violated constraint: an existing coefficient "
                  "file, relative to the folder of this table");
}

// AMD devices name their arch (gfx942); an NVIDIA device's is its compute capability's ("sm" + digits).
void read_arch(MapReader& entry, model::GpuSpec& g, std::vector<std::string>& figures) {
  if (!entry.has("arch")) {
    if (g.vendor == "amd") entry.problem("no arch. Violated constraint: an AMD device names its gfx arch (gfx942)");
    return;
  }
  entry.read("arch", g.arch, false);
  figures.push_back("arch");
  if (g.vendor != "amd")
    entry.problem(entry.node("arch"), "arch on an NVIDIA device. Violated constraint: AMD devices only (an NVIDIA "
                                      "device's arch is its compute_capability's, sm90 for 9.0)");
  else if (g.arch.rfind("gfx", 0) != 0)
    entry.problem(entry.node("arch"), "arch = '" + g.arch + "'. Violated constraint: a gfx name, e.g. gfx942");
}

model::GpuSpec read_entry(MapReader& entry) {
  model::GpuSpec g;
  entry.read("name", g.name, true);
  if (entry.has("aliases")) entry.read_list("aliases", g.aliases, false);
  entry.read_choice("vendor", g.vendor, {"nvidia", "amd"}, true);
  std::vector<std::string> figures;
  read_arch(entry, g, figures);
  if (entry.has("compute_capability")) {
    std::string cc;
    entry.read("compute_capability", cc, false);
    g.sm = parse_compute_capability(cc);
    if (g.vendor == "amd")
      entry.problem(entry.node("compute_capability"),
                    "compute_capability on an AMD device. Violated constraint: NVIDIA devices only (an AMD GPU has no "
                    "CUDA compute capability, so it is never sm90)");
    else if (g.sm < 0)
      entry.problem(entry.node("compute_capability"),
                    "compute_capability = '" + cc + "'. Violated constraint: <major>.<minor>, e.g. \"9.0\"");
    figures.push_back("compute_capability");
  }
  if (entry.has("usable_memory_gib")) {
    entry.read("usable_memory_gib", g.capacity_gib, false, 0.0);
    figures.push_back("usable_memory_gib");
  }
  read_peaks(entry, g.peaks, figures);
  read_interconnect(entry, g.interconnect, figures);
  read_default_coefficients(entry, g.default_coefficients);
  read_sources(entry, figures);
  entry.finish();
  if (g.sm < 0) g.sm = 0;
  if (g.vendor == "nvidia" && g.sm > 0) g.arch = "sm" + std::to_string(g.sm);
  return g;
}

const std::vector<std::string> kPaths = {"mma", "wgmma", "tcgen05", "mfma"};

// "family/path" (a tensor category) or "family" (memory).
void read_kernel(MapReader& kernels, model::KernelCategory category, model::KernelChoice& out) {
  const std::string key = model::kernel_category_name(category);
  std::string text;
  if (!kernels.read(key, text, true)) return;
  const size_t slash = text.find('/');
  const bool memory = category == model::KernelCategory::memory;
  if (memory) {
    if (slash != std::string::npos || text.empty())
      kernels.problem(kernels.node(key), key + " = '" + text + "'. Violated constraint: a family name alone (copy)");
    out.family = text;
    return;
  }
  out.family = text.substr(0, slash);
  out.path = slash == std::string::npos ? "" : text.substr(slash + 1);
  if (slash == std::string::npos || out.family.empty() ||
      std::find(kPaths.begin(), kPaths.end(), out.path) == kPaths.end())
    kernels.problem(kernels.node(key), key + " = '" + text +
                                           "'. Violated constraint: family/path with path one of mma, wgmma, tcgen05, mfma");
}

model::ArchSpec read_arch_entry(MapReader& entry) {
  model::ArchSpec a;
  entry.read("name", a.name, true);
  entry.read_choice("vendor", a.vendor, {"nvidia", "amd"}, true);
  entry.read_choice("native_path", a.native_path, kPaths, true);
  MapReader kernels = entry.child("kernels");
  for (int c = 0; c < model::kKernelCategories; ++c)
    read_kernel(kernels, static_cast<model::KernelCategory>(c), a.kernels[c]);
  kernels.finish();
  if (entry.has("fp32_lanes_per_sm")) {
    int64_t lanes = 0;
    entry.read("fp32_lanes_per_sm", lanes, false, 1, 1024);
    a.fp32_lanes_per_sm = static_cast<int>(lanes);
  }
  if (entry.has("sources")) entry.node("sources");  // free text: why each family runs there
  entry.finish();
  return a;
}

std::vector<model::ArchSpec> read_archs(MapReader& top, const std::string& path, Diagnostics& diagnostics) {
  std::vector<model::ArchSpec> archs;
  YAML::Node list = top.node("archs");
  if (!list.IsSequence() || list.size() == 0) {
    top.problem("archs is missing or empty. Violated constraint: a list of architectures (docs/gpus.md)");
    return archs;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    MapReader entry(list[i], path, "archs[" + std::to_string(i) + "]", diagnostics);
    model::ArchSpec a = read_arch_entry(entry);
    if (model::find_arch(archs, a.name) != nullptr)
      entry.problem("arch '" + a.name + "' is listed twice. Violated constraint: each arch once");
    archs.push_back(a);
  }
  return archs;
}

}  // namespace

std::vector<model::GpuSpec> load_gpu_table(const std::string& path) { return load_gpu_tables(path).gpus; }

GpuTable load_gpu_tables(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  Diagnostics diagnostics;
  MapReader top(root, path, "", diagnostics);
  std::vector<model::GpuSpec> table;
  std::vector<YAML::Mark> marks;
  YAML::Node list = top.node("gpus");
  if (!list.IsSequence() || list.size() == 0) {
    top.problem(list.IsDefined() ? list : root, "gpus is missing or empty. Violated constraint: a list of devices");
  } else {
    std::map<std::string, std::string> owner;  // every name and alias → the entry that has it
    for (size_t i = 0; i < list.size(); ++i) {
      MapReader entry(list[i], path, "gpus[" + std::to_string(i) + "]", diagnostics);
      model::GpuSpec g = read_entry(entry);
      std::vector<std::string> spellings = g.aliases;
      spellings.insert(spellings.begin(), g.name);
      for (const auto& s : spellings) {
        if (s.empty()) continue;
        auto [it, fresh] = owner.emplace(s, g.name);
        if (!fresh)
          entry.problem("'" + s + "' names '" + it->second + "' already. Violated constraint: names and aliases unique");
      }
      table.push_back(g);
      marks.push_back(list[i].Mark());
    }
  }
  std::vector<model::ArchSpec> archs = read_archs(top, path, diagnostics);
  for (size_t i = 0; i < table.size() && !archs.empty(); ++i)
    if (!table[i].arch.empty() && model::find_arch(archs, table[i].arch) == nullptr)
      diagnostics.add(where(path, marks[i]) + ": gpus[" + std::to_string(i) + "]: arch '" + table[i].arch + "' of '" +
                      table[i].name + "' is not in archs. Violated constraint: every GPU's arch listed once");
  top.finish();
  diagnostics.throw_if_any();
  return {table, archs};
}

std::string gpu_table_initialiser(const std::vector<model::GpuSpec>& table) {
  std::ostringstream out;
  out.precision(17);
  for (const auto& g : table) {
    out << "    {" << quoted(g.name) << ", {";
    for (size_t i = 0; i < g.aliases.size(); ++i) out << (i ? ", " : "") << quoted(g.aliases[i]);
    const model::GpuPeaks& p = g.peaks;
    const model::Interconnect& ic = g.interconnect;
    out << "}, " << quoted(g.vendor) << ", " << g.sm << ", " << g.capacity_gib << ", {" << p.bf16_tflops << ", "
        << p.fp32_tflops << ", " << p.memory_gbs << ", " << p.memory_gb << ", " << p.sms << ", " << p.l2_mb << "}, {"
        << ic.nvlink_generation << ", " << ic.nvlink_gbps << ", " << ic.pcie_generation << ", " << ic.pcie_gbps
        << "}, " << quoted(g.default_coefficients) << ", " << quoted(g.arch) << "},\n";
  }
  return out.str();
}

std::string arch_table_initialiser(const std::vector<model::ArchSpec>& archs) {
  std::ostringstream out;
  for (const auto& a : archs) {
    out << "    {" << quoted(a.name) << ", " << quoted(a.vendor) << ", " << quoted(a.native_path) << ", {";
    for (int c = 0; c < model::kKernelCategories; ++c)
      out << (c ? ", " : "") << "{" << quoted(a.kernels[c].family) << ", " << quoted(a.kernels[c].path) << "}";
    out << "}, " << a.fp32_lanes_per_sm << "},\n";
  }
  return out.str();
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace stepcast::io
