#include "io/scenario_io.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "io/document.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/limits.hpp"
#include "model/errors.hpp"

namespace stepcast::io {
namespace {

constexpr int64_t kSchemaVersion = 1;
using limits::kMaxSamples;  // the planner's memory bound, refused here with the file's line
// A log-normal sigma of 20 spreads lengths over e^20 (5 * 10^8) either side of the median: wider than any
// corpus, and narrow enough that median * e^(sigma * z) stays finite.
constexpr double kMaxSigma = 20;
constexpr int64_t kMaxEpochs = 1'000'000;
constexpr double kMaxHours = 1e6;

std::string key_path(const MapReader& r, const std::string& key) {
  return r.path().empty() ? key : r.path() + "." + key;
}

// A double >= 0 (durations and sizes that may be zero); the message names the constraint plainly.
// True when the key was given and valid.
bool read_non_negative(MapReader& r, const std::string& key, double& out, bool required,
                       double max = limits::kMaxSeconds) {
  double v = out;
  if (!r.read(key, v, required, -1e308, max)) return false;
  if (v < 0) {
    r.problem(r.node(key), key_path(r, key) + " = " + r.node(key).Scalar() + ". Violated constraint: >= 0");
    return false;
  }
  out = v;
  return true;
}

// Each element of a required, non-empty list of mappings, as a MapReader named `path[i]`.
template <typename F>
void for_each_map(MapReader& r, const std::string& key, Diagnostics& d, const std::string& what, F&& f) {
  const YAML::Node list = r.node(key);
  if (!list.IsDefined() || !list.IsSequence() || list.size() == 0) {
    const std::string message = key_path(r, key) + " = " + show(list) + ". Violated constraint: a non-empty list of " + what;
    if (list.IsDefined()) {
      r.problem(list, message);
    } else {
      r.problem(message);
    }
    return;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    MapReader item(list[i], r.file(), key_path(r, key) + "[" + std::to_string(i) + "]", d);
    f(item);
    item.finish();
  }
}

// A file the input names must exist, so that its absence is reported at the line that names it. `relative_to`
// says what a relative path is resolved against ("the scenario").
void check_named_file(MapReader& r, const std::string& key, const std::string& resolved,
                      const std::string& relative_to = "the scenario") {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(resolved, ec))
    r.problem(r.node(key), key_path(r, key) + " = '" + limits::cut(r.node(key).Scalar()) + "': no such file (" +
                               limits::cut(resolved) + "). Violated constraint: an existing file, relative to " +
                               relative_to);
}

// Without a width-quadratic predictor, plan loads the scenario's model: a name that resolves to no config is
// refused here, at the `model:` line, instead of later without the scenario's position. (With a predictor the
// model is a label.) With a `lora:` block, returns the shape's module table to check its targets against.
std::optional<model::ModuleTable> check_model_name(MapReader& top, const Scenario& s) {
  if (s.model.empty() || s.width_quadratic) return std::nullopt;
  try {
    if (!top.has("lora")) {
      resolve_model_path(s.model);
      return std::nullopt;
    }
    return model::expand_modules(load_model(s.model));
  } catch (const InputError& e) {
    top.problem(top.node("model"), e.what());
  }
  return std::nullopt;
}

// The adapters the run trains: rank and alpha positive, each target an nn.Linear short name of the model (the
// module table knows them), reported at its own line:col naming the family's modules.
void read_lora(MapReader& top, Scenario& s, const std::optional<model::ModuleTable>& modules) {
  if (!top.has("lora")) return;
  MapReader l = top.child("lora");
  l.read("rank", s.lora.rank, false, 1, limits::kMaxLoraRank);
  double alpha = 0;
  if (l.read("alpha", alpha, false, 0.0, 1e6)) s.lora.alpha = alpha;
  double dropout = 0;
  if (l.read("dropout", dropout, false, -1e-300, 0.99)) s.lora.dropout = dropout;  // [0, 0.99]: 0 is peft's Identity
  l.read("autocast", s.lora.autocast, false);
  l.read("full", s.lora.full, false);
  l.read("checkpointing", s.lora.checkpointing, false);
  std::string quant;
  if (l.read_choice("quantize_base", quant, model::base_quant_names(), false))
    s.lora.base_quant = model::parse_base_quant(quant, "lora.quantize_base");
  std::string adapter_dtype;
  if (l.read_choice("adapter_dtype", adapter_dtype, model::adapter_dtype_names(), false))
    s.lora.adapter_dtype = model::parse_adapter_dtype(adapter_dtype, "lora.adapter_dtype");
  if (s.lora.full)
    for (const char* key : {"rank", "alpha", "dropout", "targets", "quantize_base", "adapter_dtype"})
      if (l.has(key))
        l.problem(l.node(key), std::string("lora.") + key + " with lora.full. Violated constraint: a full fine-tune "
                                                           "has no adapters");
  if (l.read_list("targets", s.lora.targets, false)) {
    const YAML::Node list = l.node("targets");
    s.lora.targets_where = where(l.file(), list.Mark());
    if (s.lora.targets.empty()) l.problem(list, "lora.targets = []. Violated constraint: at least one module name");
    if (modules)
      for (size_t i = 0; i < s.lora.targets.size(); ++i)
        for (const auto& p : model::lora_target_problems(*modules, {s.lora.targets[i]}, s.model))
          l.problem(list[i], "lora.targets[" + std::to_string(i) + "]: " + p);
  }
  if (!l.has("rank") && !l.has("targets") && !l.has("dropout") && !l.has("autocast") && !l.has("full") &&
      !l.has("checkpointing") && !l.has("quantize_base") && !l.has("adapter_dtype"))
    l.problem("lora: neither rank, targets, dropout, autocast, full, checkpointing, quantize_base nor adapter_dtype. "
              "Violated constraint: at least one");
  l.finish();
}

void read_predictor(MapReader& top, Scenario& s) {
  const bool has_coefficients = top.has("coefficients"), has_predictor = top.has("predictor");
  if (has_coefficients && has_predictor)
    top.problem("both 'coefficients' and 'predictor'. Violated constraint: at most one (neither: the GPU's default "
                "per-category predictor)");
  if (!has_coefficients && !has_predictor && !top.has("model"))
    top.problem("no 'model', 'coefficients' or 'predictor'. Violated constraint: a model (priced by the GPU's default "
                "predictor), a coefficients file, or a width-quadratic predictor");
  if (top.read("coefficients", s.coefficients, false)) {
    s.coefficients_where = where(top.file(), top.node("coefficients").Mark());
    s.coefficients = resolve_beside(s.path, s.coefficients);
    check_named_file(top, "coefficients", s.coefficients);
  }
  if (!has_predictor) {
    top.node("predictor");
    return;
  }
  MapReader p = top.child("predictor");
  MapReader w = p.child("width_quadratic");
  planner::WidthQuadratic c;
  read_non_negative(w, "step_s_per_token", c.step_s_per_token, true);
  read_non_negative(w, "step_s_per_token_width", c.step_s_per_token_width, true);
  read_non_negative(w, "step_s_fixed", c.step_s_fixed, false);
  w.read("masked_step_factor", c.masked_step_factor, false, 0.0);
  read_non_negative(w, "peak_gib_fixed", c.peak_gib_fixed, true);
  read_non_negative(w, "peak_gib_per_token", c.peak_gib_per_token, true);
  w.finish();
  p.finish();
  s.width_quadratic = c;
}

planner::SyntheticSpec read_synthetic(MapReader& r, Diagnostics& d) {
  planner::SyntheticSpec spec;
  int64_t seed = 1;
  r.read("samples", spec.samples, true, 1, kMaxSamples);
  if (r.read("seed", seed, false, 0)) spec.seed = static_cast<uint64_t>(seed);
  r.read("min_length", spec.min_length, false, 1, limits::kMaxWidth);
  r.read("max_length", spec.max_length, false, 1, limits::kMaxWidth);
  r.read("roots", spec.roots, false, 0, kMaxSamples);
  if (spec.max_length < spec.min_length)
    r.problem(r.path() + ".max_length < min_length. Violated constraint: max_length >= min_length");
  spec.components.clear();
  for_each_map(r, "components", d, "{weight, median_tokens, sigma}", [&](MapReader& c) {
    planner::LogNormalComponent comp;
    c.read("weight", comp.weight, false, 0.0, 1e12);
    c.read("median_tokens", comp.median_tokens, true, 0.0, static_cast<double>(limits::kMaxWidth));
    c.read("sigma", comp.sigma, true, 0.0, kMaxSigma);
    spec.components.push_back(comp);
  });
  return spec;
}

}  // namespace

CorpusSource read_corpus_mapping(MapReader& c, const std::string& base_dir, const std::string& relative_to,
                                 Diagnostics& d) {
  CorpusSource corpus;
  const int sources = (c.has("file") ? 1 : 0) + (c.has("synthetic") ? 1 : 0) + (c.has("histogram") ? 1 : 0);
  if (sources != 1) c.problem(c.path() + ": exactly one of 'file', 'synthetic' or 'histogram' is required");
  if (c.read("file", corpus.file, false) && corpus.file != "-") {
    corpus.file = resolve_in(base_dir, corpus.file);
    check_named_file(c, "file", corpus.file, relative_to);
  }
  if (c.read("length_field", corpus.options.length_field, false) && corpus.file.empty())
    c.problem(c.node("length_field"), c.path() + ".length_field without " + c.path() +
                                          ".file. Violated constraint: it names a field of a file");
  if (c.has("synthetic")) {
    MapReader syn = c.child("synthetic");
    corpus.synthetic = read_synthetic(syn, d);
    syn.finish();
  } else {
    c.node("synthetic");
  }
  if (c.has("histogram")) {
    MapReader h = c.child("histogram");
    int64_t seed = 0;
    int64_t total = 0;
    if (h.read("seed", seed, false, 0)) corpus.histogram_seed = static_cast<uint64_t>(seed);
    for_each_map(h, "bins", d, "{length, count}", [&](MapReader& bin) {
      planner::HistogramBin b;
      bin.read("length", b.length, true, 1, limits::kMaxWidth);
      bin.read("count", b.count, true, 0, kMaxSamples);
      total += b.count;  // each <= 10^9, so the sum of even 10^9 bins stays in int64
      if (total > kMaxSamples)
        bin.problem(bin.path() + ".count: the bins hold " + std::to_string(total) +
                    " samples so far. Violated constraint: <= " + std::to_string(kMaxSamples) + " in all");
      corpus.histogram.push_back(b);
    });
    h.finish();
  } else {
    c.node("histogram");
  }
  return corpus;
}

namespace {

void read_corpus(MapReader& top, Scenario& s, Diagnostics& d) {
  MapReader c = top.child("corpus");
  s.corpus = read_corpus_mapping(c, std::filesystem::path(s.path).parent_path().string(), "the scenario", d);
  c.finish();
}

// pad_to_multiple_of values: >= 1 (checked by the reader) and at most planner::kMaxPadToMultipleOf.
void check_pad_multiple(MapReader& r, const YAML::Node& at, const std::string& what, int64_t m) {
  if (m > planner::kMaxPadToMultipleOf)
    r.problem(at, what + " = " + std::to_string(m) + ". Violated constraint: <= " + std::to_string(planner::kMaxPadToMultipleOf));
}

void read_policy(MapReader& r, const std::string& key, planner::Policy& out, bool required) {
  std::string name;
  if (r.read_choice(key, name, planner::policy_names(), required)) out = *planner::parse_policy(name);
}

void read_packing(MapReader& r, planner::BatchingSpec& spec) {
  std::string name;
  if (r.read_choice("packer", name, planner::packer_names(), false)) spec.packer = *planner::parse_packer(name);
  if (r.read_choice("pack_attention", name, planner::pack_attention_names(), false))
    spec.pack_attention = *planner::parse_pack_attention(name);
}

void read_baseline(MapReader& top, Scenario& s) {
  MapReader b = top.child("baseline");
  int64_t seed = 0;
  read_policy(b, "policy", s.baseline.policy, true);
  read_packing(b, s.baseline);
  b.read("micro_batch", s.baseline.micro_batch, true, 1, limits::kMaxRows);
  b.read("accumulation", s.run.accumulation, false, 1, limits::kMaxAccumulation);
  b.read("max_length", s.baseline.max_length, true, 1, limits::kMaxWidth);
  b.read("bucket_size", s.baseline.bucket_size, false, 1, kMaxSamples);
  if (b.read("seed", seed, false, 0)) s.baseline.seed = static_cast<uint64_t>(seed);
  b.read("pad_to_multiple_of", s.baseline.pad_to_multiple_of, false, 1);
  for (const auto& p : planner::batching_problems(s.baseline, planner::Naming::keys, "baseline.")) b.problem(p);
  if (s.baseline.micro_batch * s.baseline.max_length > limits::kMaxTokensPerBatch)  // each bounded: no overflow
    b.problem("baseline.micro_batch x max_length = " + std::to_string(s.baseline.micro_batch * s.baseline.max_length) +
              " tokens. Violated constraint: <= " + std::to_string(limits::kMaxTokensPerBatch));
  b.finish();
}

void read_run(MapReader& top, Scenario& s) {
  MapReader r = top.child("run");
  r.read("epochs", s.run.epochs, false, 1, kMaxEpochs);
  double optimizer_step_s = 0;  // absent: the predictor's calibrated optimizer step
  if (read_non_negative(r, "optimizer_step_s", optimizer_step_s, false)) {
    s.run.optimizer_step_s = optimizer_step_s;
    s.optimizer_step_source = "scenario run.optimizer_step_s";
  }
  r.read("checkpoint_every_steps", s.run.checkpoint_every_steps, false, 0);
  read_non_negative(r, "checkpoint_save_s", s.run.checkpoint_save_s, false);
  r.read("eval_every_steps", s.run.eval_every_steps, false, 0);
  read_non_negative(r, "eval_s", s.run.eval_s, false);
  read_non_negative(r, "startup_s", s.run.startup_s, true);
  r.read("cold_start", s.cold_start, false);
  std::string allocator;  // PYTORCH_CUDA_ALLOC_CONF: the reserved memory's model (model/allocator.hpp)
  if (r.read_choice("allocator", allocator, {"default", "expandable-segments"}, false))
    s.run.allocator = *model::parse_allocator(allocator);
  r.finish();
}

// The sweep simulates every combination of its lists; their product is bounded before anything is built.
void check_sweep_size(MapReader& w, const planner::SweepSpec& sweep) {
  int64_t configurations = 1;
  for (size_t n : {sweep.policies.size(), sweep.micro_batches.size(), sweep.max_lengths.size(),
                   sweep.bucket_sizes.size(), sweep.pad_to_multiples.size(), sweep.packers.size(),
                   sweep.pack_attentions.size()})
    configurations = limits::checked_mul(configurations, std::max<int64_t>(1, static_cast<int64_t>(n)))
                         .value_or(INT64_MAX);
  if (configurations > limits::kMaxSweepConfigurations)
    w.problem("sweep: the lists combine into " + std::to_string(configurations) +
              " configurations. Violated constraint: <= " + std::to_string(limits::kMaxSweepConfigurations));
}

// A sweep list of names (`key`), each one of `valid`; parse gives the value of a valid name.
template <typename T, typename Parse>
void read_name_list(MapReader& w, const std::string& key, const std::vector<std::string>& valid, Parse parse,
                    std::vector<T>& out) {
  std::vector<std::string> names;
  if (!w.read_list(key, names, false)) return;
  out.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    if (auto v = parse(names[i])) {
      out.push_back(*v);
    } else {
      std::string choices;
      for (const auto& n : valid) choices += (choices.empty() ? "" : ", ") + n;
      w.problem(w.node(key)[i], "sweep." + key + "[" + std::to_string(i) + "] = '" + names[i] +
                                    "'. Violated constraint: one of " + choices);
    }
  }
}

void read_sweep(MapReader& top, Scenario& s) {
  if (!top.has("sweep")) {
    top.node("sweep");
    return;
  }
  MapReader w = top.child("sweep");
  read_name_list(w, "policies", planner::policy_names(), planner::parse_policy, s.sweep.policies);
  read_name_list(w, "packers", planner::packer_names(), planner::parse_packer, s.sweep.packers);
  read_name_list(w, "pack_attentions", planner::pack_attention_names(), planner::parse_pack_attention,
                 s.sweep.pack_attentions);
  w.read_list("micro_batches", s.sweep.micro_batches, false, 1, limits::kMaxRows);
  w.read_list("max_lengths", s.sweep.max_lengths, false, 1, limits::kMaxWidth);
  w.read_list("bucket_sizes", s.sweep.bucket_sizes, false, 1, kMaxSamples);
  if (w.read_list("pad_to_multiples", s.sweep.pad_to_multiples, false, 1))
    for (size_t i = 0; i < s.sweep.pad_to_multiples.size(); ++i)
      check_pad_multiple(w, w.node("pad_to_multiples")[i], "sweep.pad_to_multiples[" + std::to_string(i) + "]",
                         s.sweep.pad_to_multiples[i]);
  w.read("top", s.sweep.top, false, 1, limits::kMaxSweepConfigurations);
  check_sweep_size(w, s.sweep);
  w.finish();
}

void read_parallel(MapReader& top, Scenario& s) {
  if (!top.has("parallel")) return;
  MapReader p = top.child("parallel");
  planner::ParallelSpec spec;
  p.read("gpus", spec.gpus, true, 1, 1024);
  std::string strategy = "ddp", sampler = "distributed";
  if (p.read_choice("strategy", strategy, {"ddp", "fsdp", "ep"}, false))
    spec.strategy = model::parse_strategy(strategy);
  if (p.read_choice("sampler", sampler, {"distributed", "length-grouped"}, false))
    spec.sampler = sampler == "distributed" ? planner::Sampler::distributed : planner::Sampler::length_grouped;
  p.finish();
  s.parallel = spec;
}

void read_top(MapReader& top, Scenario& s, Diagnostics& d) {
  int64_t version = 0;
  if (top.read("schema_version", version, true) && version != kSchemaVersion)
    top.problem(top.node("schema_version"),
                "schema_version = " + std::to_string(version) + ". Violated constraint: " + std::to_string(kSchemaVersion));
  top.read("name", s.name, false);
  top.read("description", s.description, false);
  top.read("model", s.model, false);
  if (top.read_choice("dtype", s.dtype, {"bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "int8"},
                      false) && s.model.empty())
    top.problem(top.node("dtype"), "dtype without model. Violated constraint: the weights' dtype of a `model:`");
  read_predictor(top, s);
  read_lora(top, s, check_model_name(top, s));
  MapReader gpu = top.child("gpu");
  gpu.read("name", s.gpu_name, false);
  gpu.read("memory_gib", s.run.gpu_memory_gib, true, 0.0, limits::kMaxGiB);
  gpu.finish();
  read_corpus(top, s, d);
  read_baseline(top, s);
  read_run(top, s);
  read_non_negative(top, "window_hours", s.run.window_hours, true, kMaxHours);
  read_non_negative(top, "memory_cap_gib", s.run.memory_cap_gib, false, limits::kMaxGiB);
  read_sweep(top, s);
  read_parallel(top, s);
}

}  // namespace

std::string resolve_in(const std::string& folder, const std::string& relative) {
  const std::filesystem::path p(relative);
  if (p.is_absolute()) return relative;
  return (std::filesystem::path(folder) / p).lexically_normal().string();
}

std::string resolve_beside(const std::string& file, const std::string& relative) {
  return resolve_in(std::filesystem::path(file).parent_path().string(), relative);
}

planner::Corpus load_corpus_source(const CorpusSource& c, std::string& description) {
  planner::Corpus corpus;
  if (c.synthetic) {
    description = "synthetic (seed " + std::to_string(c.synthetic->seed) + ")";
    corpus = planner::generate_synthetic(*c.synthetic);
  } else if (!c.histogram.empty()) {
    description = "histogram of " + std::to_string(c.histogram.size()) + " lengths";
    corpus = planner::expand_histogram(c.histogram, c.histogram_seed);
  } else {
    description = c.file == "-" ? "stdin" : c.file;
    corpus = load_corpus_file(c.file, c.options);
  }
  if (corpus.size() == 0) throw InputError(description + ": the corpus has no samples. Violated constraint: at least one");
  return corpus;
}

Scenario load_scenario(const std::string& path) {
  Scenario s;
  s.path = path;
  const YAML::Node root = load_yaml_file(path);
  Diagnostics d;
  MapReader top(root, path, "", d);
  read_top(top, s, d);
  top.finish();
  d.throw_if_any();
  return s;
}

}  // namespace stepcast::io
