#include "campaign/predict.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "io/atomic_file.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"
#include "model/kernel_compiles.hpp"
#include "model/transfer.hpp"
#include "planner/batching.hpp"
#include "planner/distributed.hpp"
#include "planner/simulate.hpp"
#include "planner/timeline.hpp"
#include "report/build_info.hpp"

namespace stepcast::campaign {
namespace fs = std::filesystem;
namespace {

// What every prediction line says of where it came from.
struct Provenance {
  std::string campaign;
  std::string coefficients;
  std::string commit;
  std::string command;
};

void stamp(nlohmann::json& line, const Provenance& p, const ItemPredictor& predictor) {
  line["transfer"] = predictor.chosen.transfer.summary();
  line["predictor"] = predictor.description;
  line["coefficients"] = p.coefficients;
  line["stepcast_commit"] = p.commit;
  line["command"] = p.command;
}

// The campaign's machine, fresh at its first process: the kernel classes each attention head size has compiled so far
// (model/kernel_compiles.hpp), in plan order, probes included (their warm-up steps compile before they are timed).
class MachineKernels {
 public:
  using Heads = std::vector<std::pair<int64_t, int64_t>>;  // model::kernel_compile_heads of the process's model
  // Seconds the micro-batch compiles for on this machine: kKernelCompileS for each head size meeting a new class.
  double charge(const Heads& heads, const model::MicroBatch& batch) {
    double s = 0;
    for (const auto& head : heads) s += classes_.try_emplace(head, model::ColdKernelCache{}).first->second.charge(batch);
    return s;
  }

 private:
  std::map<std::pair<int64_t, int64_t>, model::CompileClasses> classes_;
};

model::MicroBatch batch_of(const io::ProbePoint& point) {
  model::MicroBatch b;
  b.rows = point.row_tokens;
  b.width = point.width;
  return b;
}

// One line per probe point, as `stepcast predict --rows R --width W --format json` answers it.
void predict_probes(const io::CampaignItem& item, const io::PlanItem& process, const ItemPredictor& predictor,
                    const Provenance& p, std::vector<nlohmann::json>& lines) {
  const model::StepModel& m = *predictor.model;
  for (const io::ProbePoint& point : item.probes->points) {
    const model::MicroBatch b = batch_of(point);
    const double step = m.step_s(b);
    nlohmann::json line{{"campaign", p.campaign},
                        {"item", process.base_id},
                        {"model", item.model_name},
                        {"point", point.text},
                        {"rows", b.rows},
                        {"width", b.width},
                        {"predicted_step_s", step},
                        {"predicted_peak_gib", m.probe_peak_gib(b)}};
    const model::Transfer t = model::at_shape(predictor.chosen.transfer, b.num_rows(), b.width);
    double lo = 0, hi = 0;
    if (model::step_interval(t, m.features().step(b), step, b.real_tokens() < b.padded_tokens(), lo, hi)) line["step_interval_s"] = {lo, hi};
    stamp(line, p, predictor);
    lines.push_back(std::move(line));
  }
}

planner::BatchingSpec batching_of(const io::CampaignRun& run, planner::Policy policy) {
  planner::BatchingSpec spec = run.batching;
  spec.policy = policy;
  return spec;
}

std::vector<int32_t> truncated_lengths(const planner::Corpus& corpus, int64_t max_length) {
  std::vector<int32_t> out;
  out.reserve(corpus.lengths.size());
  for (int32_t n : corpus.lengths) out.push_back(static_cast<int32_t>(std::min<int64_t>(n, max_length)));
  return out;
}

std::vector<model::MicroBatch> schedule_batches(const planner::Schedule& schedule) {
  std::vector<model::MicroBatch> batches(static_cast<size_t>(schedule.num_batches()));
  for (int64_t i = 0; i < schedule.num_batches(); ++i) schedule.fill(i, batches[static_cast<size_t>(i)]);
  return batches;
}

// The plan's `run` object: what the executor runs, micro-batch by micro-batch, in the planner's order.
nlohmann::json plan_run(const io::CampaignRun& run, const io::PlanItem& process, const planner::Corpus& corpus,
                        const std::vector<model::MicroBatch>& batches) {
  nlohmann::json mbs = nlohmann::json::array();
  for (const auto& b : batches) mbs.push_back({{"rows", b.rows}, {"width", b.width}});
  return {{"id", process.run_id},
          {"policy", planner::policy_name(process.policy)},
          {"micro_batch", run.batching.micro_batch},
          {"accumulation", run.accumulation},
          {"max_length", run.batching.max_length},
          {"pad_to_multiple_of", run.batching.pad_to_multiple_of},
          {"seed", run.batching.seed},
          {"corpus_lengths", truncated_lengths(corpus, run.batching.max_length)},
          {"micro_batches", std::move(mbs)}};
}

// One line per run: the planner's simulation (totals) and its per-micro-batch rule (planner/timeline.hpp).
nlohmann::json predict_run(const io::CampaignItem& item, const io::PlanItem& process, const ItemPredictor& predictor,
                           const planner::Corpus& corpus, const std::vector<model::MicroBatch>& batches,
                           const std::vector<double>& compile_s, const Provenance& p) {
  const io::CampaignRun& run = *item.run;
  planner::RunSpec spec;
  spec.accumulation = run.accumulation;
  spec.gpu_memory_gib = predictor.chosen.transfer.gpu.capacity_gib;
  spec.allocator = model::parse_allocator(item.allocator).value_or(model::Allocator::caching);  // its reserved memory
  const planner::PlanResult plan = planner::simulate(corpus, batching_of(run, process.policy), spec, *predictor.model);
  const planner::Timeline timeline = planner::predict_timeline(batches, run.accumulation, *predictor.model, std::nullopt);
  nlohmann::json mbs = nlohmann::json::array();
  nlohmann::json compiles = nlohmann::json::array();
  double compiles_s = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& e = timeline.batches[i];
    if (compile_s[i] > 0) compiles.push_back(i);
    compiles_s += compile_s[i];
    mbs.push_back({{"rows", batches[i].rows},
                   {"width", batches[i].width},
                   {"step_s", e.step_s},
                   {"first_seen_s", e.first_seen_s},
                   {"run_start_s", e.run_start_s},
                   {"optimizer_s", e.optimizer_s},
                   {"compile_s", compile_s[i]},
                   {"peak_gib", predictor.model->peak_gib(batches[i], {true, e.optimizer_step > 0, e.first_seen})}});
  }
  nlohmann::json line{{"campaign", p.campaign},
                      {"item", process.base_id},
                      {"model", item.model_name},
                      {"run", process.run_id},
                      {"policy", planner::policy_name(process.policy)},
                      {"micro_batch", run.batching.micro_batch},
                      {"accumulation", run.accumulation},
                      {"max_length", run.batching.max_length},
                      {"pad_to_multiple_of", run.batching.pad_to_multiple_of},
                      {"seed", run.batching.seed},
                      {"samples", corpus.size()},
                      {"micro_batches_count", plan.micro_batches},
                      {"optimizer_steps", plan.steps},
                      {"distinct_shapes", plan.distinct_shapes},
                      {"padding_fraction", plan.padding_fraction},
                      {"predicted_wall_clock_s", plan.wall_clock_s},
                      {"wall_clock_half_width",
                       predictor.chosen.wall_clock_half_width(plan.padding_fraction > 0, plan.host_bound_share())},
                      {"predicted_compute_s", plan.compute_s},
                      {"predicted_first_seen_s", plan.first_seen_s},
                      {"predicted_run_start_s", plan.run_start_s},
                      {"predicted_optimizer_s", plan.optimizer_s},
                      {"predicted_peak_gib", plan.peak_gib},
                      // the machine's kernel compiles in plan order (docs/host.md), not in the wall clock above
                      {"predicted_compiles", std::move(compiles)},
                      {"predicted_compile_s", compiles_s},
                      {"micro_batches", std::move(mbs)}};
  stamp(line, p, predictor);
  return line;
}

nlohmann::json lora_json(const io::LoraSettings& l) {
  nlohmann::json j{{"rank", l.rank}, {"alpha", l.alpha}, {"dropout", l.dropout}, {"targets", l.targets}};
  if (l.autocast) j["autocast"] = true;  // only where asked: plans written before it stay as they were
  if (l.full) j["full"] = true;
  if (l.adapter_dtype != model::AdapterDtype::float32) j["adapter_dtype"] = model::adapter_dtype_name(l.adapter_dtype);
  return j;
}

// The probes of an hf-peft plan item: the points, then kernel-table, memory-snapshot and host-profile points (a point
// in several lists is one probe that does each).
nlohmann::json plan_probes(const io::ProbeSettings& probes) {
  nlohmann::json out = nlohmann::json::array();
  std::set<std::string> tabled, snapped, profiled;
  for (const auto& k : probes.kernels) tabled.insert(k.text);
  for (const auto& m : probes.memory_snapshots) snapped.insert(m.text);
  for (const auto& h : probes.host_profiles) profiled.insert(h.text);
  const auto add = [&](const io::ProbePoint& point) {
    nlohmann::json j{{"point", point.text},
                     {"rows", point.row_tokens},
                     {"width", point.width},
                     {"warmup", probes.warmup},
                     {"repetitions", probes.repetitions}};
    if (tabled.count(point.text)) j["kernels"] = true;
    if (snapped.count(point.text)) j["memory_snapshot"] = true;
    if (profiled.count(point.text)) j["host_profile"] = true;
    out.push_back(std::move(j));
  };
  std::set<std::string> done;
  for (const auto* list : {&probes.points, &probes.kernels, &probes.memory_snapshots, &probes.host_profiles})
    for (const auto& point : *list)
      if (done.insert(point.text).second) add(point);
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// `stepcast measure --points`: scaling for unpadded points, padding for padded ones, kernels for tables.
std::string measure_points(const io::ProbeSettings& probes, int64_t (*width)(int64_t)) {
  std::vector<std::string> out;
  const auto add = [&](const std::string& kind, const io::ProbePoint& p) {
    std::string text = kind + ":" + std::to_string(p.rows) + "x" + std::to_string(width(p.width));
    const auto colon = p.text.find(':');
    if (colon != std::string::npos) text += p.text.substr(colon);
    if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
  };
  for (const auto& p : probes.points) add(p.padding > 0 ? "padding" : "scaling", p);
  for (const auto& p : probes.kernels) add("kernels", p);
  return join(out, ",");
}

void append(std::vector<std::string>& to, const std::vector<std::string>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

int64_t same_width(int64_t w) { return w; }
// The CPU dry run's width: 1/256 of the real one, 16 to 64 tokens (a tiny config on the CPU, seconds in all).
int64_t dry_width(int64_t w) { return std::clamp<int64_t>(w / 256, 16, 64); }

// A number as a person writes it on a command line: 32, 0.05.
std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::vector<std::string> common_args(const io::CampaignItem& item) {
  std::vector<std::string> args{"--lora-rank",    std::to_string(item.lora.rank), "--lora-alpha",
                                number_text(item.lora.alpha), "--lora-dropout",  number_text(item.lora.dropout),
                                "--lora-targets", join(item.lora.targets, ",")};
  if (item.gradient_checkpointing == "off") args.push_back("--no-checkpointing");
  return args;
}

std::vector<std::string> run_args(const io::CampaignItem& item, const io::PlanItem& process) {
  const io::CampaignRun& run = *item.run;
  std::vector<std::string> args{"--policy", planner::policy_name(process.policy), "--micro-batch",
                                std::to_string(run.batching.micro_batch), "--accumulation",
                                std::to_string(run.accumulation), "--pad-to-multiple-of",
                                std::to_string(run.batching.pad_to_multiple_of), "--shuffle-seed",
                                std::to_string(run.batching.seed), "--run-id", process.run_id};
  if (process.policy == planner::Policy::pack) {
    args.push_back("--packer");
    args.push_back(planner::packer_name(run.batching.packer));
  }
  if (planner::packs(process.policy)) {
    args.push_back("--pack-attention");
    args.push_back(planner::pack_attention_name(run.batching.pack_attention));
  }
  return args;
}

// `stepcast measure` arguments of a harness process (the runner adds --out and --kernel-dir; a run reads the plan's
// corpus_lengths on standard input).
std::vector<std::string> measure_args(const io::CampaignItem& item, const io::PlanItem& process) {
  std::vector<std::string> args{"--model", item.config, "--tiers", item.tier, "--dtype", item.dtype};
  std::vector<std::string> more;
  if (process.probes)
    more = {"--points", measure_points(*item.probes, same_width), "--warmup", std::to_string(item.probes->warmup),
            "--repetitions", std::to_string(item.probes->repetitions)};
  else
    more = {"--run-corpus", "-", "--max-length", std::to_string(item.run->batching.max_length)};
  if (!process.probes) append(more, run_args(item, process));
  append(args, more);
  append(args, common_args(item));
  return args;
}

// The same process on the CPU with a tiny config of the family: the flow and the arguments, not the tier (the CPU
// runs sdpa-auto/loop) nor the sizes (widths / 256, a synthetic mix of a few windows).
std::vector<std::string> dry_run_args(const io::CampaignItem& item, const io::PlanItem& process,
                                      const std::string& config) {
  std::vector<std::string> args{"--model", config, "--tiers", "sdpa-auto/loop", "--device", "cpu", "--dtype", "float32"};
  if (process.probes) {
    append(args, {"--points", measure_points(*item.probes, dry_width), "--warmup", "0", "--repetitions", "1"});
  } else {
    const io::CampaignRun& run = *item.run;
    const int64_t samples = std::min<int64_t>(64, 2 * run.batching.micro_batch * run.accumulation);
    append(args, {"--run-synthetic", std::to_string(samples) + ":" + std::to_string(run.batching.seed), "--max-length",
                  "32"});
    append(args, run_args(item, process));
  }
  append(args, common_args(item));
  return args;
}

// tests/data/configs/ holds tiny configs, one per family the harness builds: the first of the item's model_type.
std::string tiny_config(const io::Campaign& c, const io::CampaignItem& item) {
  if (!item.dry_run_config.empty()) return item.dry_run_config;
  const fs::path dir = fs::path(c.root) / "tests/data/configs";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  std::vector<fs::path> configs;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") configs.push_back(entry.path());
  std::sort(configs.begin(), configs.end());
  for (const auto& path : configs) {
    try {
      if (io::load_model_config(path.string()).model_type == item.model_type)
        return path.lexically_relative(c.root).string();
    } catch (const InputError&) {
    }
  }
  return "";
}

nlohmann::json plan_item(const io::Campaign& c, const io::CampaignItem& item, const io::PlanItem& process,
                         const ItemPredictor& predictor) {
  nlohmann::json j{{"id", process.id},
                   {"stack", io::stack_name(item.stack)},
                   {"model", item.model_name},
                   {"config", item.config},
                   {"gpu", predictor.chosen.transfer.gpu.name},
                   {"tier", item.tier},
                   {"lora", lora_json(item.lora)},
                   {"gradient_checkpointing", item.gradient_checkpointing},
                   {"allocator", item.allocator},
                   {"dtype", item.dtype},
                   {"label", process.label},
                   {"repeat", process.repeat},
                   {"time_limit_s", item.time_limit_s},
                   {"records", io::records_file_name(process.id)}};
  if (item.stack == io::Stack::hf_peft) {
    j["attn_implementation"] = item.attn_implementation;
    j["experts_implementation"] = item.experts_implementation;
  } else {
    j["measure_args"] = measure_args(item, process);
    const std::string config = tiny_config(c, item);
    if (!config.empty()) j["dry_run_args"] = dry_run_args(item, process, config);
  }
  if (process.probes) j["probes"] = plan_probes(*item.probes);
  return j;
}

void check_predictable(const io::Campaign& c) {
  for (const auto& check : c.checks)
    if (check.metric == io::Metric::peak_reserved)
      throw InputError(check.where + ": metric peak_reserved. Violated constraint: a metric the predictor predicts "
                       "(reserved memory is not modelled yet; peak_allocated is)");
}

}  // namespace

ItemPredictor item_predictor(const io::Campaign& c, const io::CampaignItem& item) {
  predict::PredictorAsk ask;
  ask.model = c.at_root(item.config);
  ask.gpu = c.gpu;
  if (!c.coefficients.empty()) {
    ask.coefficients = c.at_root(c.coefficients);
    ask.coefficients_where = c.path + ": coefficients";
  }
  ask.transfer = c.transfer;
  ask.tier = item.tier;  // hf-peft/<attn_implementation>-<experts_implementation>: what the executor will run
  if (item.stack == io::Stack::harness) {
    ask.tier_from_records = true;  // a tier-grammar label names the harness stack
  } else {
    ask.stack = "transformers-peft";
  }
  ask.lora_targets = item.lora.targets;
  ask.lora_rank = item.lora.rank;
  ask.lora_dropout = item.lora.dropout;
  ask.lora_autocast = item.lora.autocast;
  ask.adapter_dtype = item.lora.adapter_dtype;
  ask.full = item.lora.full;
  ask.checkpointing = item.gradient_checkpointing != "off";  // both reentrant kinds recompute every layer
  ask.dtype = item.dtype;  // the executor loads the weights in it, whatever the config says
  ItemPredictor p{predict::choose_predictor(ask), "", nullptr};
  // The description names the file as the campaign does (relative to the root), so that a prediction line reads the
  // same on every machine.
  p.description = p.chosen.first_line;
  if (!c.coefficients.empty())
    if (const auto at = p.description.find(ask.coefficients); at != std::string::npos)
      p.description.replace(at, ask.coefficients.size(), c.coefficients);
  p.model = p.chosen.step_model();
  return p;
}

planner::Corpus run_corpus(const io::CampaignRun& run) {
  std::string description;
  planner::Corpus corpus = io::load_corpus_source(run.corpus, description);
  if (run.samples > 0 && run.samples < corpus.size()) {
    std::vector<int32_t> head(static_cast<size_t>(run.samples));
    std::iota(head.begin(), head.end(), 0);
    corpus = planner::shard_corpus(corpus, head);
  }
  return corpus;
}

CampaignPrediction predict_campaign(const io::Campaign& c) {
  check_predictable(c);
  const Provenance prov{c.name, c.coefficients, report::git_commit(), "stepcast campaign predict " + c.file};
  CampaignPrediction out;
  out.plan = {{"schema_version", 1},
              {"campaign", c.name},
              {"campaign_file", c.file},
              {"prediction_file", c.prediction},
              {"stepcast_commit", prov.commit},
              {"total_limit_s", c.total_limit_s},
              {"items", nlohmann::json::array()}};
  std::map<size_t, ItemPredictor> predictors;
  std::map<size_t, planner::Corpus> corpora;
  MachineKernels machine;
  for (const io::PlanItem& process : io::plan_items(c)) {
    const io::CampaignItem& item = c.items[process.item];
    auto found = predictors.find(process.item);
    if (found == predictors.end()) found = predictors.emplace(process.item, item_predictor(c, item)).first;
    const ItemPredictor& predictor = found->second;
    nlohmann::json j = plan_item(c, item, process, predictor);
    const bool first_repeat = process.repeat == 0;
    if (process.probes && first_repeat) predict_probes(item, process, predictor, prov, out.lines);
    const auto heads = model::kernel_compile_heads(predictor.chosen.shape, predictor.chosen.transfer);
    if (process.probes)
      for (const io::ProbePoint& point : item.probes->points) machine.charge(heads, batch_of(point));
    if (!process.probes) {
      if (!corpora.count(process.item)) corpora.emplace(process.item, run_corpus(*item.run));
      const planner::Corpus& corpus = corpora.at(process.item);
      const planner::Schedule schedule =
          planner::build_schedule(corpus, batching_of(*item.run, process.policy), item.run->accumulation);
      const auto batches = schedule_batches(schedule);
      std::vector<double> compile_s;
      for (const auto& b : batches) compile_s.push_back(machine.charge(heads, b));
      j["run"] = plan_run(*item.run, process, corpus, batches);
      if (first_repeat) out.lines.push_back(predict_run(item, process, predictor, corpus, batches, compile_s, prov));
    }
    out.plan["items"].push_back(std::move(j));
  }
  return out;
}

WrittenPrediction write_prediction(const io::Campaign& c, const CampaignPrediction& p, const std::string& out_dir) {
  WrittenPrediction w;
  const fs::path dir = out_dir.empty() ? fs::path(c.at_root(c.prediction)).parent_path() : fs::path(out_dir);
  w.prediction = (dir / fs::path(c.prediction).filename()).string();
  w.plan = (dir / fs::path(c.plan_file()).filename()).string();
  std::error_code ec;
  if (fs::exists(w.prediction, ec) || fs::is_symlink(w.prediction, ec))
    throw InputError(w.prediction + ": exists. Violated constraint: a pre-registered prediction is never overwritten "
                     "(a new question is a new campaign; --out DIR predicts elsewhere, for a dry run)");
  if (!out_dir.empty()) fs::create_directories(dir, ec);
  io::check_output(w.plan, {"plan", true, {c.path}});
  io::check_output(w.prediction, {"prediction", false, {c.path}});
  io::write_file_atomically(w.plan, p.plan.dump(1) + "\n", "device plan");
  std::string text;
  for (const auto& line : p.lines) text += line.dump() + "\n";
  io::write_file_atomically(w.prediction, text, "prediction");
  return w;
}

}  // namespace stepcast::campaign
