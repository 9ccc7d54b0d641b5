#include "io/coefficients_io.hpp"

#include "io/atomic_file.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "io/document.hpp"
#include "model/limits.hpp"
#include "model/errors.hpp"
#include "model/features.hpp"
#include "model/gpus.hpp"

namespace stepcast::io {

namespace {

// Coefficients are seconds per TFLOP, per GB, per thousand launches, GiB, KiB per token or bytes per element:
// the shipped ones are below 5 000 in every unit (token_kib). 10^6 leaves room and keeps every memory term below 2^60 bytes at
// the largest micro-batch (2^30 tokens x 10^6 KiB), and every step time finite.
constexpr double kMaxCoefficient = 1e6;
constexpr double kMaxLaunchesPerStep = 1e9;
constexpr double kMaxOverlapExponent = 64;  // the p of the host/device p-norm: beyond, it is a max()

// Terms added after the first coefficient files were written: a file without one is read as "not selected".
bool added_later(const std::string& name) { return model::added_after_first_files(name); }

// A term this file lacks: a copy of the term it was folded into before the per-category split (converted,
// model/features.hpp absent_reads_as), otherwise not selected.
template <size_t N>
model::Term absent_term(const std::string& key, size_t i, const std::array<model::Term, N>& terms) {
  if (key == "step" && i < model::kStepTermTable.size()) {
    const int from = model::kStepTermTable[i].absent_reads_as;
    if (from >= 0 && static_cast<size_t>(from) < i) {
      model::Term t = terms[static_cast<size_t>(from)];
      t.reason = "converted: absent from this file (written before the per-category split); priced at " +
                 model::step_term_names()[static_cast<size_t>(from)] + " as the file's fit priced it";
      return t;
    }
  }
  return {0, 0, false, "not selected: absent from this file"};
}

// A file written before the adapters' roofline priced lora_gemm_s_per_tflop per FLOP: the same rate times
// 2r / (2r + 4 kappa) prices its own rank the same under the roofline's work (docs/method.md, "LoRA by rank").
void convert_lora_rate(model::Coefficients& c) {
  model::GpuInfo gpu;  // an unknown GPU: the H200's ridge (model::lora_gemm_ridge_flops_per_byte)
  try {
    gpu = model::gpu_info(c.gpu);
  } catch (const InputError&) {
  }
  const double f = model::lora_per_flop_to_roofline(c.lora_rank, gpu);
  model::Term& t = c.step[model::kLoraGemm];
  t.value *= f;
  t.std_error *= f;
  if (t.selected) {
    std::ostringstream s;
    s << "converted: per-FLOP rate of a file written before the adapters' roofline, x " << f << " (rank "
      << c.lora_rank << "); " << t.reason;
    t.reason = s.str();
  }
  c.lora_work = "roofline";
}

template <size_t N>
void read_terms(MapReader& parent, const std::string& key, const std::array<std::string, N>& names,
                std::array<model::Term, N>& terms, bool every_term_optional = false) {
  MapReader section = parent.child(key);
  for (size_t i = 0; i < N; ++i) {
    if ((every_term_optional || added_later(names[i])) && !section.has(names[i])) {
      terms[i] = absent_term(key, i, terms);
      continue;
    }
    MapReader term = section.child(names[i]);
    model::Term& t = terms[i];
    term.read("selected", t.selected, true);
    term.read("reason", t.reason, false);
    for (const char* field : {"value", "std_error"}) {
      double v = 0;
      const double max = std::string(field) == "value" ? kMaxCoefficient : 1e308;  // a std_error only finite
      if (!term.read(field, v, true, -1e308, max)) continue;
      if (v < 0) {
        term.problem(term.node(field), term.path() + "." + field + " = " + term.node(field).Scalar() +
                                           ". Violated constraint: >= 0 (coefficients are non-negative)");
        continue;
      }
      (std::string(field) == "value" ? t.value : t.std_error) = v;
    }
    term.finish();
  }
  section.finish();
}

template <size_t N>
void emit_terms(YAML::Emitter& out, const std::string& key, const std::array<std::string, N>& names,
                const std::array<model::Term, N>& terms) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (size_t i = 0; i < N; ++i) {
    out << YAML::Key << names[i] << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "value" << YAML::Value << terms[i].value;
    out << YAML::Key << "std_error" << YAML::Value << terms[i].std_error;
    out << YAML::Key << "selected" << YAML::Value << terms[i].selected;
    out << YAML::Key << "reason" << YAML::Value << YAML::DoubleQuoted << terms[i].reason;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

// The optional `domain:` block, one [min, max] pair per dimension; a file without it has an unknown domain.
constexpr std::array<std::pair<const char*, int64_t model::ShapeDomain::*>, 6> kDomainKeys{{
    {"rows_min", &model::ShapeDomain::rows_min},
    {"rows_max", &model::ShapeDomain::rows_max},
    {"width_min", &model::ShapeDomain::width_min},
    {"width_max", &model::ShapeDomain::width_max},
    {"tokens_min", &model::ShapeDomain::tokens_min},
    {"tokens_max", &model::ShapeDomain::tokens_max},
}};

void read_domain(MapReader& parent, model::ShapeDomain& d) {
  if (!parent.has("domain")) return;
  MapReader section = parent.child("domain");
  for (const auto& [key, field] : kDomainKeys) section.read(key, d.*field, true, 1);
  for (size_t i = 0; i < kDomainKeys.size(); i += 2) {  // each _min is followed by its _max
    const auto& [lo_key, lo] = kDomainKeys[i];
    const auto& [hi_key, hi] = kDomainKeys[i + 1];
    if (d.*lo > d.*hi)
      section.problem(section.node(hi_key), section.path() + "." + hi_key + " = " + std::to_string(d.*hi) +
                                                ". Violated constraint: >= " + lo_key + " (" + std::to_string(d.*lo) + ")");
  }
  section.finish();
  d.known = true;
}

// The optional `held_out:` block (model/coefficients.hpp HeldOut); a file without it has unknown held-out errors.
void read_held_out(MapReader& parent, model::HeldOut& h) {
  if (!parent.has("held_out")) return;
  MapReader section = parent.child("held_out");
  if (section.read("scheme", h.scheme, true) && h.scheme.empty())
    section.problem(section.node("scheme"), "held_out.scheme is empty. Violated constraint: leave-one-out or N-fold");
  for (auto [key, points, width] : {std::tuple{"unpadded", &h.points_unpadded, &h.half_width.unpadded},
                                    std::tuple{"padded", &h.points_padded, &h.half_width.padded}}) {
    MapReader part = section.child(key);
    part.read("points", *points, true, 0);
    part.read("half_width", *width, true, -1e-300, kMaxCoefficient);
    part.finish();
  }
  section.finish();
  h.known = true;
}

// The optional `peak_interval:` block (model/run_memory.hpp PeakInterval): ratios measured / predicted of held-out
// run micro-batches, 0 < low <= 1 <= high... within 10 (an interval wider than that is not a measurement).
constexpr double kMaxPeakRatio = 10;

void read_peak_interval(MapReader& parent, std::optional<model::PeakInterval>& out) {
  if (!parent.has("peak_interval")) return;
  MapReader section = parent.child("peak_interval");
  model::PeakInterval p;
  section.read("low", p.low, true, 0.0, kMaxPeakRatio);
  section.read("high", p.high, true, 0.0, kMaxPeakRatio);
  section.read("points", p.points, true, 1);
  section.read("runs", p.runs, true, 1);
  section.read("coverage", p.coverage, false, -1e-300, 1.0);
  section.read("source", p.source, true);
  if (p.low > p.high)
    section.problem(section.node("high"), section.path() + ".high = " + std::to_string(p.high) +
                                              ". Violated constraint: >= low (" + std::to_string(p.low) + ")");
  section.finish();
  out = p;
}

void emit_peak_interval(YAML::Emitter& out, const model::PeakInterval& p) {
  out << YAML::Key << "peak_interval" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "low" << YAML::Value << p.low << YAML::Key << "high" << YAML::Value << p.high;
  out << YAML::Key << "points" << YAML::Value << p.points << YAML::Key << "runs" << YAML::Value << p.runs;
  if (p.coverage >= 0) out << YAML::Key << "coverage" << YAML::Value << p.coverage;
  out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << p.source << YAML::EndMap;
}

}  // namespace

model::Coefficients load_coefficients(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  Diagnostics diagnostics;
  MapReader r(root, path, "", diagnostics);
  model::Coefficients c;
  r.read("model", c.model, true);
  if (r.has("model")) c.model_at = where(path, r.node("model").Mark());
  if (r.has("models")) r.read_list("models", c.models, true);
  if (c.model == model::kPooledModel && c.models.empty())
    r.problem("model = pooled without `models`. Violated constraint: a pooled file lists the models it was fitted on");
  r.read("gpu", c.gpu, true);
  r.read("tier", c.tier, true);
  r.read("points", c.points, true, 0);
  r.read("peak_points", c.peak_points, false, 0);
  r.read("tool_version", c.tool_version, true);
  r.read("date", c.date, true);
  r.read_choice("loss", c.loss, {"none", "huber", "cauchy"}, false);
  r.read("lora_rank", c.lora_rank, false, 0, limits::kMaxLoraRank);
  r.read("prior", c.prior, false);
  r.read("fitted_records", c.fitted_records, false);
  read_domain(r, c.domain);
  read_held_out(r, c.held_out);
  r.read("step_rms_rel", c.step_rms_rel, false, -1e-300);
  r.read("peak_rms_gib", c.peak_rms_gib, false, -1e-300);
  read_peak_interval(r, c.peak_interval);
  read_terms(r, "step", model::step_term_names(), c.step);
  read_terms(r, "memory", model::memory_term_names(), c.memory);
  if (r.has("host")) {
    MapReader host = r.child("host");
    host.read("launches_per_step", c.launches_per_step, true, -1e-300, kMaxLaunchesPerStep);
    host.read("overlap_exponent", c.overlap_exponent, true, 0.999999, kMaxOverlapExponent);
    host.finish();
  }
  if (r.has("run")) read_terms(r, "run", model::run_term_names(), c.run, true);
  c.lora_work = "per-flop";
  r.read_choice("lora_work", c.lora_work, {"per-flop", "roofline"}, false);
  if (c.lora_work == "per-flop") convert_lora_rate(c);
  c.expert_work = "per-flop";  // absent: a file written before the experts' roofline, read as it was fitted
  r.read_choice("expert_work", c.expert_work, {"per-flop", "roofline"}, false);
  c.memory_work = "plain";  // absent: a file written before the weighted count, read as it was fitted
  r.read_choice("memory_work", c.memory_work, {"plain", "weighted"}, false);
  r.finish();
  diagnostics.throw_if_any();
  return c;
}

nlohmann::json coefficients_json(const model::Coefficients& c) {
  nlohmann::json j;
  j["model"] = c.model;
  if (!c.models.empty()) j["models"] = c.models;
  j["gpu"] = c.gpu;
  j["tier"] = c.tier;
  j["points"] = c.points;
  j["peak_points"] = c.peak_points;
  j["tool_version"] = c.tool_version;
  j["date"] = c.date;
  j["loss"] = c.loss;
  j["lora_rank"] = c.lora_rank;
  j["lora_work"] = c.lora_work;
  j["expert_work"] = c.expert_work;
  j["memory_work"] = c.memory_work;
  j["prior"] = c.prior;
  j["step_rms_rel"] = c.step_rms_rel;
  j["peak_rms_gib"] = c.peak_rms_gib;
  j["peak_interval"] = nullptr;  // no measured whole-run peak error
  if (c.peak_interval)
    j["peak_interval"] = {{"low", c.peak_interval->low},       {"high", c.peak_interval->high},
                          {"points", c.peak_interval->points}, {"runs", c.peak_interval->runs},
                          {"coverage", c.peak_interval->coverage >= 0 ? nlohmann::json(c.peak_interval->coverage) : nlohmann::json()},
                          {"source", c.peak_interval->source}};
  j["domain"] = nullptr;  // unknown
  if (c.domain.known)
    for (const auto& [key, field] : kDomainKeys) j["domain"][key] = c.domain.*field;
  j["held_out"] = nullptr;  // unknown
  if (c.held_out.known)
    j["held_out"] = {{"scheme", c.held_out.scheme},
                     {"unpadded", {{"points", c.held_out.points_unpadded}, {"half_width", c.held_out.half_width.unpadded}}},
                     {"padded", {{"points", c.held_out.points_padded}, {"half_width", c.held_out.half_width.padded}}}};
  auto terms = [](const auto& names, const auto& values) {
    nlohmann::json out = nlohmann::json::object();
    for (size_t i = 0; i < names.size(); ++i)
      out[names[i]] = {{"value", values[i].value},
                       {"std_error", values[i].std_error},
                       {"selected", values[i].selected},
                       {"reason", values[i].reason}};
    return out;
  };
  j["step"] = terms(model::step_term_names(), c.step);
  j["memory"] = terms(model::memory_term_names(), c.memory);
  j["host"] = {{"launches_per_step", c.launches_per_step}, {"overlap_exponent", c.overlap_exponent}};
  j["run"] = terms(model::run_term_names(), c.run);
  return j;
}

std::string coefficients_yaml(const model::Coefficients& c) {
  YAML::Emitter out;
  out.SetDoublePrecision(10);
  out << YAML::Comment("stepcast coefficients: step time = sum of coefficient x feature; see docs/method.md")
      << YAML::Newline;
  out << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << c.model;
  if (!c.models.empty()) out << YAML::Key << "models" << YAML::Value << YAML::Flow << c.models;
  out << YAML::Key << "gpu" << YAML::Value << c.gpu;
  out << YAML::Key << "tier" << YAML::Value << c.tier;
  out << YAML::Key << "points" << YAML::Value << c.points;
  out << YAML::Key << "peak_points" << YAML::Value << c.peak_points;
  out << YAML::Key << "tool_version" << YAML::Value << c.tool_version;
  out << YAML::Key << "date" << YAML::Value << c.date;
  out << YAML::Key << "loss" << YAML::Value << c.loss;
  out << YAML::Key << "lora_rank" << YAML::Value << c.lora_rank;
  out << YAML::Key << "lora_work" << YAML::Value << c.lora_work;
  out << YAML::Key << "expert_work" << YAML::Value << c.expert_work;
  out << YAML::Key << "memory_work" << YAML::Value << c.memory_work;
  if (!c.prior.empty()) out << YAML::Key << "prior" << YAML::Value << c.prior;
  if (!c.fitted_records.empty()) out << YAML::Key << "fitted_records" << YAML::Value << c.fitted_records;
  if (c.domain.known) {
    out << YAML::Key << "domain" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [key, field] : kDomainKeys) out << YAML::Key << key << YAML::Value << c.domain.*field;
    out << YAML::EndMap;
  }
  if (c.held_out.known) {
    out << YAML::Key << "held_out" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "scheme" << YAML::Value << c.held_out.scheme;
    for (auto [key, points, width] : {std::tuple{"unpadded", c.held_out.points_unpadded, c.held_out.half_width.unpadded},
                                      std::tuple{"padded", c.held_out.points_padded, c.held_out.half_width.padded}}) {
      out << YAML::Key << key << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "points" << YAML::Value << points << YAML::Key << "half_width" << YAML::Value << width;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "step_rms_rel" << YAML::Value << c.step_rms_rel;
  out << YAML::Key << "peak_rms_gib" << YAML::Value << c.peak_rms_gib;
  if (c.peak_interval) emit_peak_interval(out, *c.peak_interval);
  emit_terms(out, "step", model::step_term_names(), c.step);
  emit_terms(out, "memory", model::memory_term_names(), c.memory);
  out << YAML::Key << "host" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "launches_per_step" << YAML::Value << c.launches_per_step;
  out << YAML::Key << "overlap_exponent" << YAML::Value << c.overlap_exponent;
  out << YAML::EndMap;
  emit_terms(out, "run", model::run_term_names(), c.run);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void save_coefficients(const std::string& path, const model::Coefficients& coefficients) {
  const std::string text = coefficients_yaml(coefficients);
  write_file_atomically(path, text, "coefficients");
}

}  // namespace stepcast::io
