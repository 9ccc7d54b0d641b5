#include "io/campaign_io.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "io/document.hpp"
#include "io/model_config.hpp"
#include "model/batch.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/gpus.hpp"
#include "model/limits.hpp"

namespace stepcast::io {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kSchemaVersion = 1;
constexpr int64_t kMaxRepeats = 1000;      // the same process a thousand times is surely a typo
constexpr int64_t kMaxStepsPerPoint = 1000;  // warm-up or timed steps of one probe point
const std::vector<std::string> kStacks{"hf-peft", "harness"};
const std::vector<std::string> kCheckpointing{"reentrant", "non-reentrant", "off"};
const std::vector<std::string> kAttention{"sdpa", "eager"};
const std::vector<std::string> kExperts{"grouped_mm", "eager"};
const std::vector<std::string> kAllocators{"default", "expandable-segments"};
const std::vector<std::string> kDtypes{"bfloat16"};
const std::vector<std::string> kLabels{"cold", "warm"};

std::string key_path(const MapReader& r, const std::string& key) {
  return r.path().empty() ? key : r.path() + "." + key;
}

// A path a campaign names: relative (the GPU machine holds the repository elsewhere) and, where `must_exist`, a
// file under the root.
bool read_relative_path(MapReader& r, const std::string& key, const std::string& root, std::string& out, bool required,
                        bool must_exist) {
  std::string value;
  if (!r.read(key, value, required)) return false;
  const std::string shown = key_path(r, key) + " = '" + limits::cut(value) + "'";
  if (value.empty() || fs::path(value).is_absolute()) {
    r.problem(r.node(key), shown + ". Violated constraint: a path relative to the repository root (" + root + ")");
    return false;
  }
  std::error_code ec;
  if (must_exist && !fs::is_regular_file(fs::path(root) / value, ec)) {
    r.problem(r.node(key), shown + ": no such file under " + limits::cut(root) +
                               ". Violated constraint: an existing file, relative to the repository root");
    return false;
  }
  out = fs::path(value).lexically_normal().string();
  return true;
}

// The nearest folder above `path` that holds measurements/ and scenarios/ (both: fuzz/corpus/ has a measurements/
// of its own).
std::string find_root(const std::string& path) {
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec).parent_path();
  for (; !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_directory(dir / "measurements", ec) && fs::is_directory(dir / "scenarios", ec))
      return dir.lexically_normal().string();
    if (dir == dir.parent_path()) break;
  }
  throw InputError(path + ":1:1: no folder above the campaign holds measurements/ and scenarios/. Violated "
                   "constraint: a campaign lives in a stepcast repository (measurements/campaigns/NAME.yaml); its paths "
                   "are relative to it");
}

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 100 || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char ch) {
    return std::isalnum(ch) != 0 || ch == '.' || ch == '_' || ch == '-';
  });
}

std::vector<ProbePoint> read_points(MapReader& r, const std::string& key, bool& given) {
  std::vector<std::string> texts;
  given = r.read_list(key, texts, false);
  std::vector<ProbePoint> points;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::string problem;
    if (auto p = parse_probe_point(texts[i], problem)) {
      points.push_back(*p);
    } else {
      r.problem(r.node(key)[i], key_path(r, key) + "[" + std::to_string(i) + "] = '" + limits::cut(texts[i]) + "'. " +
                                    problem);
    }
  }
  return points;
}

void read_probes(MapReader& r, ProbeSettings& p) {
  bool given = false;
  auto points = read_points(r, "points", given);
  if (given) p.points = std::move(points);
  auto kernels = read_points(r, "kernels", given);
  if (given) p.kernels = std::move(kernels);
  auto snapshots = read_points(r, "memory_snapshots", given);
  if (given) p.memory_snapshots = std::move(snapshots);
  auto profiles = read_points(r, "host_profiles", given);
  if (given) p.host_profiles = std::move(profiles);
  r.read("warmup", p.warmup, false, 0, kMaxStepsPerPoint);
  r.read("repetitions", p.repetitions, false, 1, kMaxStepsPerPoint);
}

void read_policies(MapReader& r, CampaignRun& run) {
  if (r.has("policy") && r.has("policies")) r.problem(r.path() + ": 'policy' and 'policies'. Violated constraint: one of them");
  std::string name;
  if (r.read_choice("policy", name, planner::policy_names(), false)) run.policies = {*planner::parse_policy(name)};
  std::vector<std::string> names;
  if (!r.read_list("policies", names, false)) return;
  run.policies.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    if (auto p = planner::parse_policy(names[i])) {
      if (std::find(run.policies.begin(), run.policies.end(), *p) != run.policies.end())
        r.problem(r.node("policies")[i], key_path(r, "policies") + "[" + std::to_string(i) + "] = '" + names[i] +
                                             "'. Violated constraint: each policy once");
      run.policies.push_back(*p);
    } else {
      std::string valid;
      for (const auto& n : planner::policy_names()) valid += (valid.empty() ? "" : ", ") + n;
      r.problem(r.node("policies")[i], key_path(r, "policies") + "[" + std::to_string(i) + "] = '" +
                                           limits::cut(names[i]) + "'. Violated constraint: one of " + valid);
    }
  }
}

void read_run(MapReader& r, CampaignRun& run, const std::string& root, Diagnostics& d) {
  if (r.has("corpus")) {
    MapReader c = r.child("corpus");
    run.corpus = read_corpus_mapping(c, root, "the repository root", d);
    if (run.corpus.file == "-") c.problem(c.node("file"), key_path(c, "file") + " = '-'. Violated constraint: a file");
    run.has_corpus = true;
    c.finish();
  } else {
    r.node("corpus");
  }
  r.read("samples", run.samples, false, 1, limits::kMaxSamples);
  read_policies(r, run);
  auto& b = run.batching;
  r.read("micro_batch", b.micro_batch, false, 1, limits::kMaxRows);
  r.read("accumulation", run.accumulation, false, 1, limits::kMaxAccumulation);
  r.read("max_length", b.max_length, false, 1, limits::kMaxWidth);
  r.read("pad_to_multiple_of", b.pad_to_multiple_of, false, 1);
  r.read("bucket_size", b.bucket_size, false, 1, limits::kMaxSamples);
  int64_t seed = 0;
  if (r.read("seed", seed, false, 0)) b.seed = static_cast<uint64_t>(seed);
  std::string name;
  if (r.read_choice("packer", name, planner::packer_names(), false)) b.packer = *planner::parse_packer(name);
  if (r.read_choice("pack_attention", name, planner::pack_attention_names(), false))
    b.pack_attention = *planner::parse_pack_attention(name);
}

void read_lora(MapReader& r, LoraSettings& lora) {
  r.read("rank", lora.rank, false, 1, limits::kMaxLoraRank);
  r.read("alpha", lora.alpha, false, 0.0, 1e6);
  double dropout = lora.dropout;
  if (r.read("dropout", dropout, false, -1e308, 1.0)) {
    if (dropout < 0 || dropout >= 1)
      r.problem(r.node("dropout"), key_path(r, "dropout") + " = " + r.node("dropout").Scalar() +
                                       ". Violated constraint: >= 0 and < 1");
    else
      lora.dropout = dropout;
  }
  r.read_list("targets", lora.targets, false);
  r.read("autocast", lora.autocast, false);
  r.read("full", lora.full, false);
  std::string adapter_dtype;
  if (r.read_choice("adapter_dtype", adapter_dtype, model::adapter_dtype_names(), false))
    lora.adapter_dtype = model::parse_adapter_dtype(adapter_dtype, key_path(r, "adapter_dtype"));
}

// An item's draft: the defaults, then what the item says. `stack_given` and friends remember what was said where.
struct Draft {
  CampaignItem item;
  bool stack_given = false;
};

// The keys an item and `defaults` share; `r` is either. Each key present replaces (for mappings: updates) the draft's.
void read_item_keys(MapReader& r, Draft& draft, const std::string& root, Diagnostics& d) {
  CampaignItem& it = draft.item;
  r.read("model", it.model, false);
  std::string stack;
  if (r.read_choice("stack", stack, kStacks, false)) {
    it.stack = stack == "harness" ? Stack::harness : Stack::hf_peft;
    draft.stack_given = true;
  }
  r.read("tier", it.tier, false);
  if (r.has("lora")) {
    MapReader l = r.child("lora");
    read_lora(l, it.lora);
    l.finish();
  }
  r.read_choice("gradient_checkpointing", it.gradient_checkpointing, kCheckpointing, false);
  r.read_choice("attn_implementation", it.attn_implementation, kAttention, false);
  r.read_choice("experts_implementation", it.experts_implementation, kExperts, false);
  r.read_choice("allocator", it.allocator, kAllocators, false);
  r.read_choice("dtype", it.dtype, kDtypes, false);
  r.read_choice("label", it.label, kLabels, false);
  r.read("repeats", it.repeats, false, 1, kMaxRepeats);
  r.read("time_limit_s", it.time_limit_s, false, 0.0, limits::kMaxSeconds);
  r.node("probes");
  if (r.has("probes") && r.node("probes").IsNull()) {
    it.probes.reset();
  } else if (r.has("probes")) {
    if (!it.probes) it.probes = ProbeSettings{};
    MapReader p = r.child("probes");
    read_probes(p, *it.probes);
    p.finish();
  }
  r.node("run");
  if (r.has("run") && r.node("run").IsNull()) {
    it.run.reset();
  } else if (r.has("run")) {
    if (!it.run) it.run = CampaignRun{};
    MapReader run = r.child("run");
    read_run(run, *it.run, root, d);
    run.finish();
  }
  read_relative_path(r, "dry_run_config", root, it.dry_run_config, false, true);
}

// The model an item names: a config path relative to the root, or a name under scenarios/models/.
void resolve_model(MapReader& r, CampaignItem& it, const std::string& root) {
  if (it.model.empty()) {
    r.problem(key_path(r, "model") + " is missing (in the item and in defaults). Violated constraint: required");
    return;
  }
  const bool is_path = it.model.find('/') != std::string::npos || fs::path(it.model).extension() == ".json";
  it.config = is_path ? fs::path(it.model).lexically_normal().string() : "scenarios/models/" + it.model + ".json";
  const YAML::Node at = r.has("model") ? r.node("model") : YAML::Node();
  const auto complain = [&](const std::string& message) {
    if (at.IsDefined()) r.problem(at, message); else r.problem(message);
  };
  std::error_code ec;
  if (fs::path(it.model).is_absolute() || !fs::is_regular_file(fs::path(root) / it.config, ec)) {
    complain(key_path(r, "model") + " = '" + limits::cut(it.model) + "': no " + limits::cut(it.config) + " under " +
             limits::cut(root) + ". Violated constraint: a name under scenarios/models/ or a config path relative to "
             "the repository root");
    it.config.clear();
    return;
  }
  try {
    const model::ModelShape shape = load_model((fs::path(root) / it.config).string());
    it.model_name = shape.name;
    it.model_type = shape.model_type;
    const auto names = model::lora_able_names(shape);
    std::string valid;
    for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
    // At the item's own list when it has one (else the defaults' was inherited: at the item).
    const YAML::Node list = r.has("lora") && r.node("lora").IsMap() ? r.node("lora")["targets"] : YAML::Node();
    for (size_t i = 0; i < it.lora.targets.size(); ++i) {
      const std::string& t = it.lora.targets[i];
      if (std::find(names.begin(), names.end(), t) != names.end()) continue;
      const std::string message = key_path(r, "lora.targets") + ": '" + limits::cut(t) +
                                  "' names no nn.Linear module of " + shape.name + ". Violated constraint: one of " + valid;
      if (list.IsDefined() && list.IsSequence() && i < list.size()) r.problem(list[i], message); else r.problem(message);
    }
    // transformers refuses SDPA for a family without it (_supports_sdpa = False); setting the config's
    // _attn_implementation to sdpa anyway, as the executor does, would run SDPA without the family's own terms
    // (GPT-OSS's sinks): a path nobody trains on.
    const bool eager_family =
        std::any_of(shape.layers.begin(), shape.layers.end(), [](const model::AttentionSpec& l) { return l.eager; });
    if (eager_family && it.stack == Stack::hf_peft && it.attn_implementation != "eager")
      r.problem(key_path(r, "attn_implementation") + " = '" + it.attn_implementation + "' for " + shape.name +
                ", whose family has no SDPA path in transformers. Violated constraint: eager");
  } catch (const InputError& e) {
    for (const auto& p : e.problems()) complain(key_path(r, "model") + ": " + p);
    it.config.clear();
  }
}

void check_run(MapReader& r, const CampaignItem& it) {
  const CampaignRun& run = *it.run;
  const std::string at = key_path(r, "run");
  if (!run.has_corpus) r.problem(at + ".corpus is missing (in the item and in defaults). Violated constraint: required");
  if (run.policies.empty())
    r.problem(at + ".policy is missing (in the item and in defaults). Violated constraint: a policy or policies");
  for (planner::Policy p : run.policies) {
    planner::BatchingSpec spec = run.batching;
    spec.policy = p;
    for (const auto& problem : planner::batching_problems(spec, planner::Naming::keys, at + "."))
      r.problem(problem + " (policy " + planner::policy_name(p) + ")");
    if (it.stack == Stack::hf_peft && planner::packs(p))
      r.problem(at + ": policy " + planner::policy_name(p) + " on stack hf-peft. Violated constraint: a padding "
                "policy (the transformers + peft executor pads rows; packed runs run on the harness)");
  }
  const bool buckets = std::find(run.policies.begin(), run.policies.end(), planner::Policy::sorted_buckets) !=
                       run.policies.end();
  if (it.stack == Stack::harness && buckets && run.batching.bucket_size != planner::BatchingSpec{}.bucket_size)
    r.problem(at + ".bucket_size = " + std::to_string(run.batching.bucket_size) + " on stack harness. Violated "
              "constraint: " + std::to_string(planner::BatchingSpec{}.bucket_size) +
              " (stepcast measure's run probe has no --bucket-size)");
  if (run.batching.micro_batch * run.batching.max_length > limits::kMaxTokensPerBatch)  // each bounded: no overflow
    r.problem(at + ".micro_batch x max_length = " + std::to_string(run.batching.micro_batch * run.batching.max_length) +
              " tokens. Violated constraint: <= " + std::to_string(limits::kMaxTokensPerBatch));
}

// What only the merged item can tell: required keys given somewhere, and the stack's rules.
void check_item(MapReader& r, const Draft& draft, CampaignItem& it, const std::string& root) {
  if (!draft.stack_given)
    r.problem(key_path(r, "stack") + " is missing (in the item and in defaults). Violated constraint: hf-peft or harness");
  if (it.time_limit_s <= 0)
    r.problem(key_path(r, "time_limit_s") + " is missing (in the item and in defaults). Violated constraint: > 0");
  if (it.lora.targets.empty() && !it.lora.full)
    r.problem(key_path(r, "lora.targets") + " is missing (in the item and in defaults). Violated constraint: the "
              "modules the adapters train, e.g. [q_proj, k_proj, v_proj, o_proj]");
  if (it.stack == Stack::harness) {
    if (it.tier.empty())
      r.problem(key_path(r, "tier") + " is missing for a harness item. Violated constraint: a harness tier label, e.g. "
                "sdpa-auto/grouped/gqa-expand");
    for (const char* key : {"attn_implementation", "experts_implementation"})
      if (r.has(key))
        r.problem(r.node(key), key_path(r, key) + " on a harness item. Violated constraint: the harness's kernels are "
                                                   "its tier's");
    if (it.probes && !it.probes->memory_snapshots.empty())
      r.problem(key_path(r, "probes.memory_snapshots") + " on a harness item. Violated constraint: hf-peft items only "
                "(the transformers + peft executor records the allocator's history)");
    if (it.probes && !it.probes->host_profiles.empty())
      r.problem(key_path(r, "probes.host_profiles") + " on a harness item. Violated constraint: hf-peft items only "
                "(the transformers + peft executor runs torch.profiler)");
    if (it.lora.full)
      r.problem(key_path(r, "lora.full") + " on a harness item. Violated constraint: hf-peft items only (the harness "
                "trains LoRA adapters)");
    if (it.lora.autocast)
      r.problem(key_path(r, "lora.autocast") + " on a harness item. Violated constraint: hf-peft items only (the "
                "harness trains without torch.autocast)");
    if (it.lora.adapter_dtype != model::AdapterDtype::float32)
      r.problem(key_path(r, "lora.adapter_dtype") + " on a harness item. Violated constraint: hf-peft items only (the "
                "harness trains peft's fp32 adapters)");
  } else {
    if (r.has("tier"))
      r.problem(r.node("tier"), key_path(r, "tier") + " on an hf-peft item. Violated constraint: its tier is "
                                                         "hf-peft/<attn_implementation>-<experts_implementation>");
    it.tier = hf_peft_tier(it.attn_implementation, it.experts_implementation);
    if (!r.has("dry_run_config")) it.dry_run_config.clear();  // hf-peft dry runs need no config
  }
  const bool has_probes = it.probes && (!it.probes->points.empty() || !it.probes->kernels.empty());
  if (it.probes && !has_probes)
    r.problem(key_path(r, "probes") + ": no points and no kernels. Violated constraint: at least one point");
  if (!it.probes && !it.run) r.problem(r.path() + ": neither probes nor run. Violated constraint: at least one of them");
  if (it.run) check_run(r, it);
  resolve_model(r, it, root);
  if (it.id.empty()) it.id = it.model_name;
}

bool metric_has_data(Metric m, const CampaignItem& it) {
  switch (m) {
    case Metric::run_wall_clock: return it.run.has_value();
    case Metric::pad_bucket_ratio: {
      if (!it.run) return false;
      const auto& p = it.run->policies;
      return std::find(p.begin(), p.end(), planner::Policy::pad_to_longest) != p.end() &&
             std::find(p.begin(), p.end(), planner::Policy::bucket_to_pair) != p.end();
    }
    default: return it.run.has_value() || (it.probes && !it.probes->points.empty());
  }
}

std::string metric_needs(Metric m) {
  switch (m) {
    case Metric::run_wall_clock: return "an item with a run";
    case Metric::pad_bucket_ratio: return "an item whose run has policies pad-to-longest and bucket-to-pair";
    default: return "an item with probe points or a run";
  }
}

void read_goal(MapReader& g, Goal& goal) {
  using Bound = std::pair<const char*, std::optional<double>*>;
  for (const auto& [key, out] : {Bound{"error", &goal.error}, Bound{"under", &goal.under}, Bound{"over", &goal.over}}) {
    double v = 0;
    if (g.read(key, v, false, -1e308, 100.0)) {
      if (v < 0)
        g.problem(g.node(key), key_path(g, key) + " = " + g.node(key).Scalar() + ". Violated constraint: >= 0");
      else
        *out = v;
    }
  }
  if (!goal.error && !goal.under && !goal.over)
    g.problem(g.path() + ": no bound. Violated constraint: at least one of error, under, over (relative, 0.05 = 5 %)");
}

void read_checks(MapReader& top, Campaign& c, Diagnostics& d) {
  const YAML::Node list = top.node("checks");
  if (!list.IsDefined() || !list.IsSequence() || list.size() == 0) {
    const std::string message = "checks = " + show(list) + ". Violated constraint: a non-empty list of {metric, goal, items}";
    if (list.IsDefined()) top.problem(list, message); else top.problem(message);
    return;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    MapReader r(list[i], c.path, "checks[" + std::to_string(i) + "]", d);
    CampaignCheck check;
    check.where = where(c.path, list[i].Mark());
    std::string metric;
    const bool metric_ok = r.read_choice("metric", metric, metric_names(), true);
    if (metric_ok)
      check.metric = static_cast<Metric>(std::find(metric_names().begin(), metric_names().end(), metric) -
                                         metric_names().begin());
    MapReader g = r.child("goal");
    read_goal(g, check.goal);
    g.finish();
    if (r.read_list("items", check.items, false))
      for (size_t k = 0; k < check.items.size(); ++k)
        if (c.find_item(check.items[k]) == nullptr)
          r.problem(r.node("items")[k], "checks[" + std::to_string(i) + "].items[" + std::to_string(k) + "] = '" +
                                            limits::cut(check.items[k]) + "'. Violated constraint: an item's id");
    if (metric_ok) {
      bool any = false;
      for (size_t k : covered_items(c, check)) any = any || metric_has_data(check.metric, c.items[k]);
      if (!any) r.problem(r.node("metric"), "checks[" + std::to_string(i) + "].metric = " + metric +
                                                ": no item it covers can give it. Violated constraint: " +
                                                metric_needs(check.metric));
    }
    r.finish();
    c.checks.push_back(check);
  }
}

void read_items(MapReader& top, Campaign& c, Diagnostics& d) {
  Draft defaults;
  if (top.has("defaults")) {
    MapReader r = top.child("defaults");
    read_item_keys(r, defaults, c.root, d);
    r.finish();
  } else {
    top.node("defaults");
  }
  const YAML::Node list = top.node("items");
  if (!list.IsDefined() || !list.IsSequence() || list.size() == 0) {
    const std::string message = "items = " + show(list) + ". Violated constraint: a non-empty list of items";
    if (list.IsDefined()) top.problem(list, message); else top.problem(message);
    return;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    MapReader r(list[i], c.path, "items[" + std::to_string(i) + "]", d);
    Draft draft = defaults;
    draft.item.where = where(c.path, list[i].Mark());
    if (r.read("id", draft.item.id, false) && !valid_id(draft.item.id))
      r.problem(r.node("id"), "items[" + std::to_string(i) + "].id = '" + limits::cut(draft.item.id) +
                                  "'. Violated constraint: letters, digits, '.', '_' and '-' (it names files)");
    read_item_keys(r, draft, c.root, d);
    check_item(r, draft, draft.item, c.root);
    if (!draft.item.id.empty() && c.find_item(draft.item.id) != nullptr)
      r.problem("items[" + std::to_string(i) + "]: id '" + limits::cut(draft.item.id) +
                "' again. Violated constraint: each item's id once (give `id:` to measure a model twice)");
    r.finish();
    c.items.push_back(draft.item);
  }
}

void read_top(MapReader& top, Campaign& c, Diagnostics& d) {
  int64_t version = 0;
  if (top.read("schema_version", version, true) && version != kSchemaVersion)
    top.problem(top.node("schema_version"),
                "schema_version = " + std::to_string(version) + ". Violated constraint: " + std::to_string(kSchemaVersion));
  top.read("description", c.description, false);
  if (read_relative_path(top, "prediction", c.root, c.prediction, true, false)) {
    const fs::path p(c.prediction);
    if (p.parent_path() != "measurements/predictions" || p.extension() != ".jsonl")
      top.problem(top.node("prediction"), "prediction = '" + limits::cut(c.prediction) +
                                              "'. Violated constraint: measurements/predictions/NAME.jsonl");
  }
  // Optional: without one, the GPU's default predictor answers (predict/predictor.hpp), as for `plan`.
  read_relative_path(top, "coefficients", c.root, c.coefficients, false, true);
  top.read("transfer", c.transfer, false);
  if (top.read("gpu", c.gpu, true)) {
    if (const model::GpuSpec* gpu = model::find_gpu(model::known_gpus(), c.gpu)) {
      c.gpu = gpu->name;
    } else {
      std::string names;
      for (const auto& g : model::known_gpus()) names += (names.empty() ? "" : ", ") + g.name;
      top.problem(top.node("gpu"), "gpu = '" + limits::cut(c.gpu) + "'. Violated constraint: one of " + names +
                                       " (scenarios/gpus.yaml)");
    }
  }
  top.read("total_limit_s", c.total_limit_s, true, 0.0, limits::kMaxSeconds);
  read_items(top, c, d);
  read_checks(top, c, d);
}

}  // namespace

std::string stack_name(Stack stack) { return stack == Stack::harness ? "harness" : "hf-peft"; }

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names{"run_wall_clock", "step_time", "peak_allocated", "peak_reserved",
                                              "pad_bucket_ratio"};
  return names;
}

std::string metric_name(Metric metric) { return metric_names()[static_cast<size_t>(metric)]; }

std::string hf_peft_tier(const std::string& attn_implementation, const std::string& experts_implementation) {
  return "hf-peft/" + attn_implementation + "-" + experts_implementation;
}

std::optional<ProbePoint> parse_probe_point(const std::string& text, std::string& problem) {
  const std::string form = "Violated constraint: ROWSxWIDTH[:PADDING], e.g. 2x4096 or 2x4096:0.25";
  const size_t x = text.find('x');
  const size_t colon = text.find(':');
  ProbePoint p;
  p.text = text;
  try {
    if (x == std::string::npos || (colon != std::string::npos && colon < x)) throw std::invalid_argument("form");
    size_t used_r = 0, used_w = 0, used_p = 0;
    p.rows = std::stoll(text.substr(0, x), &used_r);
    const std::string width = text.substr(x + 1, colon == std::string::npos ? std::string::npos : colon - x - 1);
    p.width = std::stoll(width, &used_w);
    if (used_r != x || used_w != width.size() || width.empty()) throw std::invalid_argument("trailing");
    if (colon != std::string::npos) {
      const std::string pad = text.substr(colon + 1);
      p.padding = std::stod(pad, &used_p);
      if (used_p != pad.size()) throw std::invalid_argument("trailing");
    }
  } catch (const std::exception&) {
    problem = form;
    return std::nullopt;
  }
  if (p.rows < 1 || p.rows > limits::kMaxRows || p.width < 2 || p.width > limits::kMaxWidth ||
      p.rows * p.width > limits::kMaxTokensPerBatch) {
    problem = "Violated constraint: 1 <= rows <= " + std::to_string(limits::kMaxRows) + ", 2 <= width <= " +
              std::to_string(limits::kMaxWidth) + ", rows x width <= " + std::to_string(limits::kMaxTokensPerBatch);
    return std::nullopt;
  }
  if (!std::isfinite(p.padding) || p.padding < 0 || p.padding >= 1) {
    problem = "Violated constraint: 0 <= PADDING < 1 (the share of pad tokens)";
    return std::nullopt;
  }
  p.row_tokens = model::padded_rows(p.rows, p.width, p.padding);
  return p;
}

bool Goal::passes(double e) const {
  if (!std::isfinite(e)) return false;
  if (error && std::abs(e) > *error) return false;
  if (under && e < -*under) return false;
  if (over && e > *over) return false;
  return true;
}

std::string Goal::text() const {
  const auto percent = [](double v) {
    std::string s = std::to_string(v * 100);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s + " %";
  };
  std::string out;
  if (error) out += "within " + percent(*error);
  if (under) out += std::string(out.empty() ? "" : ", ") + "at most " + percent(*under) + " under";
  if (over) out += std::string(out.empty() ? "" : ", ") + "at most " + percent(*over) + " over";
  return out;
}

std::string Campaign::at_root(const std::string& relative) const { return (fs::path(root) / relative).string(); }

std::string Campaign::plan_file() const { return (fs::path(prediction).parent_path() / (name + ".plan.json")).string(); }

const CampaignItem* Campaign::find_item(const std::string& id) const {
  for (const auto& it : items)
    if (it.id == id) return &it;
  return nullptr;
}

std::vector<size_t> covered_items(const Campaign& c, const CampaignCheck& check) {
  std::vector<size_t> out;
  for (size_t i = 0; i < c.items.size(); ++i)
    if (check.items.empty() || std::find(check.items.begin(), check.items.end(), c.items[i].id) != check.items.end())
      out.push_back(i);
  return out;
}

namespace {

// A run's corpus in its id: the file's stem, "synthetic-SEED" or "histogram", "-first-N" when cut.
std::string corpus_label(const CampaignRun& run) {
  std::string label = run.corpus.synthetic   ? "synthetic-" + std::to_string(run.corpus.synthetic->seed)
                      : run.corpus.file.empty() ? std::string("histogram")
                                                : fs::path(run.corpus.file).stem().string();
  if (run.samples > 0) label += "-first-" + std::to_string(run.samples);
  return label;
}

}  // namespace

std::vector<PlanItem> plan_items(const Campaign& c) {
  std::vector<PlanItem> out;
  for (size_t i = 0; i < c.items.size(); ++i) {
    const CampaignItem& it = c.items[i];
    std::vector<PlanItem> processes;
    if (it.probes) processes.push_back(PlanItem{it.id + "/probes", it.id + "/probes", i, 0, true, {}, "", ""});
    if (it.run)
      for (planner::Policy p : it.run->policies) {
        const std::string policy = planner::policy_name(p);
        processes.push_back(PlanItem{it.id + "/" + policy, it.id + "/" + policy, i, 0, false, p, "",
                                     it.model_name + "/" + corpus_label(*it.run) + "/" + policy});
      }
    for (int64_t k = 0; k < it.repeats; ++k)
      for (PlanItem p : processes) {
        p.repeat = k;
        if (it.repeats > 1) {
          p.id += "/repeat-" + std::to_string(k);
          if (!p.run_id.empty()) p.run_id += "/repeat-" + std::to_string(k);
        }
        p.label = !it.label.empty() ? it.label : out.empty() ? "cold" : "warm";
        out.push_back(p);
      }
  }
  return out;
}

std::string records_file_name(const std::string& plan_item_id) {
  std::string name;
  for (char ch : plan_item_id) name += ch == '/' ? std::string("__") : std::string(1, ch);
  return name + ".jsonl";
}

Campaign load_campaign(const std::string& path) {
  Campaign c;
  c.path = path;
  c.name = fs::path(path).stem().string();
  const YAML::Node root = load_yaml_file(path);
  c.root = find_root(path);
  std::error_code ec;
  c.file = fs::absolute(path, ec).lexically_normal().lexically_relative(c.root).string();
  Diagnostics d;
  if (!valid_id(c.name))
    d.add(path + ":1:1: the campaign's name '" + limits::cut(c.name) +
          "' (its file's stem). Violated constraint: letters, digits, '.', '_' and '-'");
  MapReader top(root, path, "", d);
  read_top(top, c, d);
  top.finish();
  d.throw_if_any();
  return c;
}

}  // namespace stepcast::io
