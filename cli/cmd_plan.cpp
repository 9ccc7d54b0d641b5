// stepcast plan: simulate a training run over a real corpus and rank restart parameters.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "cli/app.hpp"
#include "io/atomic_file.hpp"
#include "cli/transfer_options.hpp"
#include "predict/predictor.hpp"
#include "io/coefficients_io.hpp"
#include "io/corpus_io.hpp"
#include "report/format.hpp"
#include "io/model_config.hpp"
#include "report/plan_output.hpp"
#include "report/report_html.hpp"
#include "io/scenario_io.hpp"
#include "model/kernel_compiles.hpp"
#include "model/errors.hpp"
#include "model/step_model.hpp"
#include "model/tiers.hpp"
#include "planner/distributed.hpp"
#include "planner/simulate.hpp"
#include "planner/sweep.hpp"
#include "planner/width_quadratic.hpp"

namespace stepcast::cli {

using io::load_coefficients;
using io::load_model;
using io::load_scenario;
using io::save_corpus_csv;
using io::CorpusSource;
using io::Scenario;
using report::fixed;
using report::write_report;
using report::PlanOutput;
using report::ReportInput;
namespace {

struct PlanOptions {
  std::string scenario;
  std::string corpus;
  std::string length_field;
  bool cold_start = false;
  std::string coefficients;
  TransferOptions transfer;  // --gpu (default: the scenario's gpu), --tier, --stack, --transfer
  LoraOptions lora;          // override the scenario's `lora:` block
  std::string policy;
  std::string pack_attention;  // empty: the scenario's
  std::string packer;          // empty: the scenario's
  int64_t micro_batch = 0;
  int64_t max_length = 0;
  int64_t accumulation = 0;
  int64_t bucket_size = 0;
  int64_t pad_to_multiple_of = 0;  // 0: the scenario's
  double optimizer_step_s = -1;    // < 0: the scenario's, else the predictor's
  int64_t top = 0;
  int threads = 2;
  std::string report;
  std::string save_corpus;
  bool force = false;
  bool no_sweep = false;
  bool progress = false;
  std::vector<std::string> fail_on;
  Format format = Format::text;
  std::string allocator;           // empty: the scenario's run.allocator (default: PyTorch's caching allocator)
  int64_t gpus = 0;                // 0: the scenario's `parallel.gpus`, else one GPU
  std::string strategy, sampler;   // empty: the scenario's, else ddp / distributed
};

// The scenario with the command line's overrides applied; every bad override reported at once.
Scenario scenario_with_overrides(const PlanOptions& o) {
  Scenario s = load_scenario(o.scenario);
  Diagnostics d;
  if (!o.policy.empty()) {
    if (auto p = planner::parse_policy(o.policy)) {
      s.baseline.policy = *p;
    } else {
      std::string valid;
      for (const auto& n : planner::policy_names()) valid += (valid.empty() ? "" : ", ") + n;
      d.add("--policy = '" + o.policy + "'. Violated constraint: one of " + valid);
    }
  }
  const auto override_choice = [&](const std::string& flag, const std::string& value,
                                   const std::vector<std::string>& valid, auto parse, auto& out) {
    if (value.empty()) return;
    if (auto v = parse(value)) {
      out = *v;
      return;
    }
    std::string choices;
    for (const auto& n : valid) choices += (choices.empty() ? "" : ", ") + n;
    d.add(flag + " = '" + value + "'. Violated constraint: one of " + choices);
  };
  override_choice("--pack-attention", o.pack_attention, planner::pack_attention_names(), planner::parse_pack_attention,
                  s.baseline.pack_attention);
  override_choice("--packer", o.packer, planner::packer_names(), planner::parse_packer, s.baseline.packer);
  if (o.micro_batch > 0) s.baseline.micro_batch = o.micro_batch;
  if (o.max_length > 0) s.baseline.max_length = o.max_length;
  if (o.accumulation > 0) s.run.accumulation = o.accumulation;
  if (o.bucket_size > 0) s.baseline.bucket_size = o.bucket_size;
  if (o.pad_to_multiple_of > 0) s.baseline.pad_to_multiple_of = o.pad_to_multiple_of;
  for (const auto& p : planner::batching_problems(s.baseline, planner::Naming::flags)) d.add(p);
  if (o.optimizer_step_s >= 0) {
    s.run.optimizer_step_s = o.optimizer_step_s;
    s.optimizer_step_source = "--optimizer-step-s";
  }
  if (o.gpus > 0 || !o.strategy.empty() || !o.sampler.empty()) {
    if (o.gpus == 0 && !s.parallel)
      d.add("--strategy or --sampler without --gpus. Violated constraint: --gpus N or a scenario `parallel` key");
    planner::ParallelSpec p = s.parallel.value_or(planner::ParallelSpec{});
    if (o.gpus > 0) p.gpus = o.gpus;
    if (!o.strategy.empty()) p.strategy = model::parse_strategy(o.strategy);
    if (!o.sampler.empty())
      p.sampler = o.sampler == "distributed" ? planner::Sampler::distributed : planner::Sampler::length_grouped;
    s.parallel = p;
  }
  if (!o.allocator.empty()) s.run.allocator = *model::parse_allocator(o.allocator);
  if (o.top > 0) s.sweep.top = o.top;
  s.sweep.threads = o.threads;
  if (o.no_sweep) s.sweep.policies.clear();  // the baseline alone: a what-if
  if (!o.corpus.empty()) {
    s.corpus = CorpusSource{};
    s.corpus.file = o.corpus;
  }
  if (!o.length_field.empty() && s.corpus.file.empty())
    d.add("--length-field without a corpus file. Violated constraint: --corpus FILE or a scenario corpus.file");
  if (!o.length_field.empty()) s.corpus.options.length_field = o.length_field;
  if (o.cold_start) s.cold_start = true;
  if (!o.coefficients.empty()) {
    s.coefficients = o.coefficients;
    s.coefficients_where = "--coefficients";
    s.width_quadratic.reset();
  }
  if (!o.lora.targets.empty()) {
    s.lora.targets = o.lora.targets;
    s.lora.targets_where = "--lora-targets";
  }
  if (o.lora.rank > 0) s.lora.rank = o.lora.rank;
  if (o.lora.alpha > 0) s.lora.alpha = o.lora.alpha;
  if (o.lora.dropout >= 0) s.lora.dropout = o.lora.dropout;
  if (o.lora.autocast) s.lora.autocast = true;
  if (o.lora.full) {
    const bool autocast = s.lora.autocast, checkpointing = s.lora.checkpointing;
    s.lora = io::LoraSpec();  // a full fine-tune has no adapters: the scenario's own adapters no longer apply
    s.lora.full = true;
    s.lora.autocast = autocast;
    s.lora.checkpointing = checkpointing;
  }
  if (o.lora.no_checkpointing) s.lora.checkpointing = false;
  if (!o.lora.quantize_base.empty()) s.lora.base_quant = model::parse_base_quant(o.lora.quantize_base, "--quantize-base");
  if (!o.lora.adapter_dtype.empty())
    s.lora.adapter_dtype = model::parse_adapter_dtype(o.lora.adapter_dtype, "--adapter-dtype");
  d.throw_if_any();
  return s;
}

// What predicts a micro-batch, in words, and the transfer behind it (predict/predictor.hpp).
struct PredictorInfo {
  std::string description;
  std::string transfer;               // the first line when transferred; empty when calibrated
  double wall_clock_half_width = -1;  // PlanOutput's
  std::optional<predict::Predictor> chosen;  // absent for the width-quadratic equation
};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

std::unique_ptr<model::StepPredictor> make_predictor(const Scenario& s, const PlanOptions& o, PredictorInfo& info) {
  if (s.width_quadratic) {
    info.description = "width-quadratic equation from the scenario";
    return std::make_unique<planner::WidthQuadraticPredictor>(*s.width_quadratic);
  }
  predict::Predictor p = predict::choose_predictor(scenario_ask(s, !o.coefficients.empty(), o.transfer));
  for (const auto& n : p.notes) std::cerr << "note: " << n << "\n";
  const model::Coefficients& c = p.transfer.coefficients;
  info.description = p.first_line + " [" + std::to_string(c.points) + " points; " +
                     (p.lora.full ? std::string("full fine-tuning") + (p.lora.autocast ? ", under torch.autocast(bf16)" : "")
                                  : "LoRA r" + std::to_string(p.lora.rank) +
                                        (s.lora.alpha > 0 ? " alpha " + fixed(s.lora.alpha, 0) : "") + " on " +
                                        (p.lora.targets.empty() ? std::string("the family's all-linear targets")
                                                                : join(p.lora.targets)) +
                                        (p.lora.adapter_dtype == model::AdapterDtype::bfloat16 ? ", bf16 adapters" : "") +
                                        (p.lora.autocast ? ", under torch.autocast(bf16)" : "")) +
                     (p.lora.checkpointing ? "" : ", no gradient checkpointing") +
                     (p.lora.base_quant != model::BaseQuant::none
                          ? ", base in " + model::base_quant_name(p.lora.base_quant) + " (QLoRA)"
                          : "") +
                     "]";
  if (p.transfer.transferred()) info.transfer = p.first_line;
  auto step_model = p.step_model();
  info.chosen = std::move(p);
  return step_model;
}

// What several GPUs move and over which link: the model's LoRA workload and the GPU table's interconnect.
// The width-quadratic equation has no model: its workload stays empty and simulate_distributed refuses N > 1.
planner::ParallelContext parallel_context(const Scenario& s, const PredictorInfo& info, std::string& link_desc) {
  planner::ParallelContext ctx;
  if (info.chosen) {
    const predict::Predictor& p = *info.chosen;
    const bool recompute = model::step_recomputes(model::tier_from_label(p.transfer.coefficients.tier), p.lora);
    ctx.workload = p.lora.full ? model::full_workload(p.shape, p.modules, recompute, p.lora.autocast)
                               : model::lora_workload(p.shape, p.modules, model::plan_lora(p.modules, p.lora), recompute,
                                                      p.lora.adapter_dtype);
    // QLoRA: each rank holds the 4-bit base (DDP replicates it; FSDP's sharding of it is not modelled).
    if (p.lora.base_quant != model::BaseQuant::none)
      ctx.workload.weight_bytes = model::base_weight_bytes(p.shape, p.modules, p.lora.base_quant);
  }
  const model::GpuSpec* gpu = model::find_gpu(model::known_gpus(), s.gpu_name);
  if (gpu != nullptr) ctx.link = model::link_for(*gpu);
  const auto& ic = gpu != nullptr ? gpu->interconnect : model::Interconnect{};
  link_desc = ic.nvlink_gbps > 0 ? "NVLink " + std::to_string(ic.nvlink_generation)
              : ic.pcie_gbps > 0 ? "PCIe Gen" + std::to_string(ic.pcie_generation)
                                 : "no known interconnect";
  link_desc += ", " + fixed(ctx.link.bus_gbps, 0) + " GB/s bus bandwidth";
  return ctx;
}

// The scenario's N-GPU run and, unless --no-sweep, N in {1, 2, 4, 8} x strategies x samplers at the same rows
// per optimizer step (N x the per-rank accumulation).
report::ParallelOutput plan_parallel(const Scenario& s, const planner::Corpus& corpus,
                                     const model::StepPredictor& predictor, const PredictorInfo& info, bool sweep) {
  report::ParallelOutput out;
  out.gpu_name = s.gpu_name;
  out.one_gpu_rows_per_step = s.baseline.micro_batch * s.run.accumulation;
  const planner::ParallelContext ctx = parallel_context(s, info, out.link);
  out.baseline = planner::simulate_distributed(corpus, s.baseline, s.run, *s.parallel, ctx, predictor);
  if (!sweep) return out;
  planner::RunSpec global = s.run;
  global.accumulation = s.run.accumulation * s.parallel->gpus;
  planner::ParallelSweep result = planner::sweep_parallel(corpus, s.baseline, global, ctx, predictor);
  out.skipped = result.skipped;
  out.by_gpu_hours = planner::rank_by_gpu_hours(result.plans);
  out.by_wall_clock = std::move(result.plans);
  return out;
}

// Prints "simulated i/n" on stderr once a sweep has run for more than a second: in place on a terminal,
// a line every 10 % with --progress elsewhere, nothing otherwise (cli/app.hpp).
planner::Progress progress_on_stderr(ProgressStyle style) {
  if (style == ProgressStyle::none) return {};
  const auto start = std::chrono::steady_clock::now();
  auto last = std::make_shared<double>(0.0);
  auto last_tenth = std::make_shared<int64_t>(-1);
  return [style, start, last, last_tenth](int64_t done, int64_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double percent = 100.0 * static_cast<double>(done) / static_cast<double>(total);
    if (style == ProgressStyle::lines) {
      const auto tenth = static_cast<int64_t>(percent / 10);
      if (tenth == *last_tenth) return;
      *last_tenth = tenth;
      std::fprintf(stderr, "plan: simulated %lld/%lld configurations (%.0f %%)\n", static_cast<long long>(done),
                   static_cast<long long>(total), percent);
      return;
    }
    if (s < 1.0 || (s - *last < 0.1 && done < total)) return;
    *last = s;
    std::fprintf(stderr, "\rplan: simulated %lld/%lld configurations (%.0f %%) ", static_cast<long long>(done),
                 static_cast<long long>(total), percent);
    if (done == total) std::fprintf(stderr, "\n");
  };
}

PlanOutput plan_output(const Scenario& s, const planner::Corpus& corpus, const std::string& corpus_desc,
                       const std::string& predictor_desc, planner::SweepResult result, double elapsed_s) {
  PlanOutput out;
  out.scenario = s.name.empty() ? s.path : s.name;
  out.gpu_name = s.gpu_name;
  out.gpu_memory_gib = s.run.gpu_memory_gib;
  out.memory_cap_gib = s.run.memory_cap_gib;
  out.window_hours = s.run.window_hours;
  out.optimizer_step_source = s.optimizer_step_source;
  out.cold_start = s.run.cold_cache.has_value();
  out.corpus = &corpus;
  out.corpus_source = corpus_desc;
  out.predictor = predictor_desc;
  out.result = std::move(result);
  out.elapsed_s = elapsed_s;
  return out;
}

void write_html(const std::string& path, const PlanOutput& out, const model::StepPredictor& predictor,
                const planner::RunSpec& run) {
  ReportInput in;
  in.plan = &out;
  const auto& r = out.result;
  planner::RunSpec spec = run;
  spec.accumulation = r.baseline.accumulation;
  in.baseline_points = planner::evaluate(planner::build_schedule(*out.corpus, r.baseline.batching), predictor, spec, 400).points;
  if (!r.recommendations.empty()) {
    spec.accumulation = r.recommendations.front().accumulation;
    in.best_points =
        planner::evaluate(planner::build_schedule(*out.corpus, r.recommendations.front().batching), predictor, spec, 400)
            .points;
  }
  write_report(path, in);
}

// `--fail-on oom,window,truncation`: exit 1 (after printing) when the baseline fails any named check.
void check_fail_on(const std::vector<std::string>& fail_on, const PlanOutput& out) {
  const std::map<std::string, std::string> check_of{
      {"oom", "fits_memory"}, {"window", "fits_window"}, {"truncation", "keeps_every_token"}};
  std::string failed;
  for (const auto& c : report::plan_checks(out))
    for (const auto& name : fail_on)
      if (check_of.at(name) == c.name && !c.passed)
        failed += (failed.empty() ? "" : "; ") + name + " (" + c.name + ": " + fixed(c.value, 1) + " against " +
                  fixed(c.bar, 1) + ")";
  if (!failed.empty()) throw CheckFailed("--fail-on: " + failed + ". " + report::headline(out));
}

// Before the sweep, so a refused output costs nothing; the outputs never replace the scenario's inputs or
// each other (docs/user-guide.md, "Output files").
void check_outputs(const PlanOptions& o, const Scenario& s) {
  const std::vector<std::string> inputs{s.path, s.corpus.file, s.coefficients};
  if (!o.save_corpus.empty()) io::check_output(o.save_corpus, {"--save-corpus", o.force, inputs});
  if (!o.report.empty()) {
    auto report_inputs = inputs;
    report_inputs.push_back(o.save_corpus);
    io::check_output(o.report, {"--report", o.force, report_inputs});
  }
}

// A cold machine's compiles: one charge per kernel class the run meets first, for each attention head size of
// the model whose layers run cuDNN (model/kernel_compiles.hpp); the width-quadratic equation has no model: one.
void set_cold_cache(Scenario& s, const PredictorInfo& info, int64_t& head_sizes) {
  if (!s.cold_start) return;
  head_sizes = info.chosen
                   ? static_cast<int64_t>(model::kernel_compile_heads(info.chosen->shape, info.chosen->transfer).size())
                   : 1;
  s.run.cold_cache = model::ColdKernelCache{model::kKernelCompileS * static_cast<double>(head_sizes)};
}

void run_plan(const PlanOptions& o) {
  Scenario s = scenario_with_overrides(o);
  check_outputs(o, s);
  std::string corpus_desc;
  const planner::Corpus corpus = io::load_corpus_source(s.corpus, corpus_desc);
  if (!o.save_corpus.empty()) save_corpus_csv(o.save_corpus, corpus);
  PredictorInfo info;
  const auto predictor = make_predictor(s, o, info);
  int64_t head_sizes = 1;
  set_cold_cache(s, info, head_sizes);
  const auto start = std::chrono::steady_clock::now();
  auto result = planner::sweep(corpus, s.baseline, s.run, s.sweep, *predictor, progress_on_stderr(progress_style(o.progress)));
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PlanOutput out = plan_output(s, corpus, corpus_desc, info.description, std::move(result), elapsed_s);
  out.transfer = info.transfer;
  out.compile_head_sizes = head_sizes;
  // Padded micro-batches err more (model/intervals.hpp): a baseline with padding takes the padded half-width.
  if (info.chosen) {
    const auto& b = out.result.baseline;
    out.wall_clock_half_width = info.chosen->wall_clock_half_width(b.padding_fraction > 0, b.host_bound_share());
  }
  if (s.parallel) out.parallel = plan_parallel(s, corpus, *predictor, info, !o.no_sweep);
  if (o.format == Format::json)
    report::print_json(std::cout, "plan", report::plan_json(out));
  else if (o.format == Format::csv)
    report::write_csv(std::cout, report::plan_table(out));
  else
    report::print_plan_text(std::cout, out);
  if (!o.report.empty()) write_html(o.report, out, *predictor, s.run);
  check_fail_on(o.fail_on, out);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Simulate a training run over a corpus: wall clock, padding, memory; rank restart parameters");
  cmd->footer(
      "Examples:\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml\n"
      "  stepcast plan scenarios/seed-sm120.yaml --policy bucket-to-pair --format json\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml --corpus my-lengths.csv --max-length 8192 --report plan.html\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml --pad-to-multiple-of 64 --no-sweep\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml --fail-on oom,window --format csv > plans.csv\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml --gpus 8 --accumulation 1 --no-sweep   # 2 x 1 x 8 = 16 rows a step\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml --allocator expandable-segments --fail-on oom\n"
      "  tools/corpus_lengths.py --dataset my.jsonl --tokenizer my-model | stepcast plan S.yaml --corpus -\n"
      "The first line says FITS, AT RISK or DOES NOT FIT (out of memory, or past the window) for the baseline.\n"
      "Memory: the run's allocated peak micro-batch by micro-batch (weights, adapters, gradients, AdamW's states from\n"
      "the first optimizer step, the micro-batch's activations, the optimizer step), where it happens and what is live\n"
      "then; FITS needs the peak's 90 % upper bound inside the card less the CUDA context (the margin in GiB); a plan\n"
      "that fits only at the point estimate is AT RISK, and --fail-on oom fails on it.\n"
      "Corpus files: one token length per line; CSV with a header (length or num_tokens, optional kept and root,\n"
      "other columns ignored); or JSON Lines (length, num_tokens or input_ids; --length-field names another);\n"
      "any of them gzip-compressed; - reads standard input.\n"
      "Policies: fixed, pad-to-longest, sorted-buckets, bucket-to-pair, pack (see docs/planner.md).\n"
      "The flags override the scenario's baseline; the sweep keeps its tokens per optimizer step.\n"
      "Every new rows x width shape pays the predictor's first-seen seconds once per run; the optimizer step is\n"
      "the scenario's run.optimizer_step_s or --optimizer-step-s when given, else the calibrated one.");
  cmd->add_option("scenario", opts->scenario, "Scenario YAML (see scenarios/ and docs/planner.md)")->required();
  cmd->add_option("--corpus", opts->corpus,
                  "Corpus file instead of the scenario's: lengths, CSV, JSON Lines, optionally .gz; - for stdin");
  cmd->add_option("--length-field", opts->length_field,
                  "The corpus's length field (JSON Lines key or CSV column; default length, num_tokens, input_ids)");
  cmd->add_flag("--cold-start", opts->cold_start,
                "A fresh machine: charge the kernels its empty cache compiles, " + fixed(model::kKernelCompileS, 2) +
                    " s for each kernel class and attention head size the run meets first (transformers + peft on H200 "
                    "and H100 machines, docs/host.md)");
  cmd->add_option("--coefficients", opts->coefficients,
                  "Your calibrated coefficients YAML instead of the scenario's predictor (another model, GPU or tier "
                  "than the file's needs --transfer)");
  cmd->add_option("--policy", opts->policy,
                  "Baseline policy: fixed, pad-to-longest, sorted-buckets, bucket-to-pair, pack, padding-free");
  cmd->add_option("--pack-attention", opts->pack_attention,
                  "How packed documents meet in attention: varlen, block-mask (default), cross");
  cmd->add_option("--packer", opts->packer, "How pack fills its rows: next-fit (default), ffd, multipack");
  cmd->add_option("--micro-batch", opts->micro_batch, "Baseline rows per micro-batch")->check(CLI::PositiveNumber);
  cmd->add_option("--max-length", opts->max_length, "Baseline max_length (tokens; longer samples are truncated)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--accumulation", opts->accumulation, "Baseline micro-batches per optimizer step")->check(CLI::PositiveNumber);
  cmd->add_option("--bucket-size", opts->bucket_size, "Baseline bucket size (sorted-buckets)")->check(CLI::PositiveNumber);
  cmd->add_option("--pad-to-multiple-of", opts->pad_to_multiple_of,
                  "Baseline collator rounding: every micro-batch's width up to a multiple of N tokens (1 = off)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer-step-s", opts->optimizer_step_s,
                  "Seconds per optimizer step instead of the scenario's or the calibrated one")
      ->check(CLI::NonNegativeNumber);
  add_transfer_options(cmd, opts->transfer);
  add_lora_options(cmd, opts->lora, "The run");
  cmd->add_option("--top", opts->top, "Recommendations to show")->check(CLI::PositiveNumber);
  cmd->add_option("--threads", opts->threads, "Threads for the sweep")->check(CLI::Range(1, 64))->default_str("2");
  cmd->add_option("--report", opts->report, "Also write a self-contained HTML report with SVG charts");
  cmd->add_flag("--force", opts->force, "Overwrite an existing --report or --save-corpus (never an input)");
  cmd->add_flag("--no-sweep", opts->no_sweep, "Simulate the baseline only (no recommendations)");
  cmd->add_option("--save-corpus", opts->save_corpus, "Also write the corpus used (e.g. a synthetic one) as CSV");
  cmd->add_flag("--progress", opts->progress, "Print progress lines even when stderr is not a terminal");
  cmd->add_option("--fail-on", opts->fail_on,
                  "Exit 1 (after printing) when the baseline does not fit in memory at the peak's 90 % upper bound "
                  "(oom: out of memory or at risk), misses the window (window) or truncates tokens (truncation); "
                  "comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({"oom", "window", "truncation"}));
  cmd->add_option("--gpus", opts->gpus,
                  "Plan the run on N GPUs of one host (data-parallel; docs/planner.md, Several GPUs). --micro-batch and "
                  "--accumulation are then per rank: a step trains N x micro-batch x accumulation rows (the output "
                  "says how many, and which --accumulation keeps the one-GPU rows per step)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--strategy", opts->strategy, "Several GPUs: ddp, fsdp (full shard) or ep (experts over the GPUs)")
      ->check(CLI::IsMember({"ddp", "fsdp", "ep"}));
  cmd->add_option("--sampler", opts->sampler,
                  "Several GPUs: distributed (torch's DistributedSampler) or length-grouped (the global batch sorted "
                  "by length and dealt to the ranks)")
      ->check(CLI::IsMember({"distributed", "length-grouped"}));
  cmd->add_option("--allocator", opts->allocator,
                  "PyTorch's CUDA allocator of the run: default, or expandable-segments "
                  "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True); changes the reserved memory (docs/planner.md, "
                  "Memory)")
      ->check(CLI::IsMember({"default", "expandable-segments"}));
  add_format_option(cmd, opts->format, true);
  cmd->callback([opts]() { run_plan(*opts); });
}

}  // namespace stepcast::cli
