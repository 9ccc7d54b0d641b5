// stepcast measure: runs the sm_120 study's probes on the real model on this machine's GPU (the LibTorch
// harness, harness/) and appends measurement records. Built only when LibTorch is found.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>
#include <utility>

#include "cli/app.hpp"
#include "cli/measure_ranks.hpp"
#include "harness/distributed.hpp"
#include "planner/distributed.hpp"
#include "report/json_output.hpp"
#include "io/atomic_file.hpp"
#include "io/corpus_io.hpp"
#include "io/model_config.hpp"
#include "harness/device.hpp"
#include "harness/model.hpp"
#include "harness/probes.hpp"
#include "harness/run_probe.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"

namespace stepcast::cli {

using io::load_corpus_file;
using io::load_model;
namespace {

struct MeasureOptions {
  std::string model;
  std::vector<std::string> probes;
  std::string out;
  std::vector<std::string> points;          // "PROBE:RxW[:PAD][:TIER]"
  std::vector<std::string> shapes;          // "RxW"
  std::vector<int64_t> widths;
  std::vector<int64_t> rows = {1};
  std::vector<double> padding = {0.25, 0.5};
  std::vector<std::string> tiers = {harness::kDefaultTier};
  int64_t warmup = 1;
  int64_t repetitions = 3;
  int64_t max_tokens = 0;
  int64_t lora_rank = 16;
  double lora_alpha = 32;
  double lora_dropout = 0.05;
  std::vector<std::string> lora_targets = model::default_lora_targets();
  bool no_checkpointing = false;
  std::string device = "auto";
  std::string dtype = "bfloat16";
  int64_t seed = 1234;
  int64_t ce_chunk = 4096;
  std::string kernel_dir;
  Format format = Format::text;
  std::string command;
  // The end-to-end run probe (one run per process).
  std::string run_corpus;      // corpus file (io/corpus_io.hpp)
  std::string length_field;    // its length field (JSON Lines key, CSV column)
  std::string run_synthetic;   // "SAMPLES:SEED": harness::finetune_mix
  std::string policy;
  std::string packer = "next-fit";           // pack only
  std::string pack_attention = "block-mask"; // pack and padding-free
  int64_t micro_batch = 1;
  int64_t accumulation = 1;
  int64_t max_length = 4096;
  int64_t pad_to_multiple_of = 1;
  int64_t shuffle_seed = -1;   // -1: the synthetic SEED, or 0 with a corpus file
  std::string run_id;
  // Several processes (the run probe only): N ranks over c10d, this process's rank once launched.
  int nproc = 1;
  std::string strategy;         // ddp or fsdp; empty: ddp, and --nproc 1 runs in this process without c10d
  int rank = -1;               // set by the launcher (cli/measure_ranks.hpp), never by people
  std::string rendezvous;      // the launcher's FileStore path
  int64_t run_kernels = -1;    // micro-batch whose kernel table is captured after the run (-1: none)
};

std::vector<harness::Shape> parse_shapes(const MeasureOptions& o) {
  std::vector<harness::Shape> shapes;
  Diagnostics d;
  for (const auto& s : o.shapes) {
    const auto x = s.find('x');
    try {
      if (x == std::string::npos) throw std::invalid_argument("no x");
      size_t used_r = 0, used_w = 0;
      const int64_t r = std::stoll(s.substr(0, x), &used_r);
      const int64_t w = std::stoll(s.substr(x + 1), &used_w);
      if (used_r != x || used_w != s.size() - x - 1) throw std::invalid_argument("trailing");
      shapes.push_back({r, w});
    } catch (const std::exception&) {
      d.add("--shapes '" + s + "'. Violated constraint: ROWSxWIDTH, e.g. 2x4096");
    }
  }
  for (int64_t w : o.widths)
    for (int64_t r : o.rows) shapes.push_back({r, w});
  d.throw_if_any();
  return shapes;
}

torch::Device pick_device(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  if (name == "cuda" || name == "auto") {
    if (torch::cuda::is_available()) return torch::Device(torch::kCUDA, 0);
    if (name == "cuda") throw InputError("--device cuda: no CUDA device (or a CPU-only LibTorch). Violated constraint: a GPU");
    return torch::kCPU;
  }
  throw InputError("--device '" + name + "'. Violated constraint: auto, cuda or cpu");
}

void check_lora(const model::ModelShape& shape, const MeasureOptions& o) {
  const auto plan = model::plan_lora(shape, o.lora_targets, o.lora_rank);
  if (!plan.unmatched.empty())
    throw InputError("--lora-targets: '" + plan.unmatched.front() + "' names no nn.Linear module of " + shape.name +
                     ". Violated constraint: a module short name such as q_proj");
}

harness::BuildOptions build_options(const MeasureOptions& o) {
  harness::BuildOptions build;
  build.device = pick_device(o.device);
  if (build.device.is_cuda() && o.rank > 0) build.device = torch::Device(torch::kCUDA, static_cast<int8_t>(o.rank));  // a GPU per rank
  build.dtype = o.dtype == "float32" ? torch::kFloat : torch::kBFloat16;
  build.lora.rank = o.lora_rank;
  build.lora.alpha = o.lora_alpha;
  build.lora.dropout = o.lora_dropout;
  build.lora.targets = o.lora_targets;
  build.checkpointing = !o.no_checkpointing;
  build.seed = static_cast<uint64_t>(o.seed);
  build.ce_chunk_tokens = o.ce_chunk;
  return build;
}

// One line to standard error in one write: the ranks of a multi-process run share it, and a line written piece by
// piece interleaves with theirs.
void log_line(const std::ostringstream& line) { std::cerr << line.str() << std::flush; }

void report_model(const harness::Model& model, const model::ModelShape& shape, const torch::Device& device) {
  harness::synchronize(device);
  std::ostringstream line;
  line << "measure: built " << model.parameter_count() << " parameters (describe: " << model::count_params(shape).total
       << "), " << model.lora_modules() << " LoRA modules, " << harness::allocated_bytes(device) / (1 << 20)
       << " MiB allocated\n";
  log_line(line);
}

// "SAMPLES:SEED" of --run-synthetic.
std::pair<int64_t, int64_t> parse_synthetic(const std::string& text) {
  const std::string bad = "--run-synthetic '" + text + "'. Violated constraint: SAMPLES:SEED, e.g. 64:7, SAMPLES >= 1";
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw InputError(bad);
  try {
    size_t used_n = 0, used_s = 0;
    const int64_t n = std::stoll(text.substr(0, colon), &used_n);
    const int64_t seed = std::stoll(text.substr(colon + 1), &used_s);
    if (used_n != colon || used_s != text.size() - colon - 1 || n < 1 || seed < 0) throw InputError(bad);
    return {n, seed};
  } catch (const std::logic_error&) {
    throw InputError(bad);
  }
}

// Options of the run probe and its corpus, validated before the model is built.
std::pair<harness::RunOptions, planner::Corpus> run_setup(const MeasureOptions& o, const model::ModelShape& shape) {
  Diagnostics d;
  if (!o.run_corpus.empty() && !o.run_synthetic.empty())
    d.add("--run-corpus and --run-synthetic. Violated constraint: one corpus per run");
  if (!o.probes.empty() || !o.points.empty() || !o.shapes.empty() || !o.widths.empty())
    d.add("--probe/--points/--shapes/--widths with a run. Violated constraint: a run process runs nothing else "
          "(its first-seen shapes must be new to the process)");
  const auto policy = planner::parse_policy(o.policy);
  if (!policy) d.add("--policy '" + o.policy + "'. Violated constraint: a planner policy (pad-to-longest, bucket-to-pair, ...)");
  const auto packer = planner::parse_packer(o.packer);
  if (!packer) d.add("--packer '" + o.packer + "'. Violated constraint: next-fit, ffd or multipack");
  const auto pack_attention = planner::parse_pack_attention(o.pack_attention);
  if (!pack_attention) d.add("--pack-attention '" + o.pack_attention + "'. Violated constraint: varlen, block-mask or cross");
  d.throw_if_any();
  harness::RunOptions r;
  r.model_label = shape.name;
  r.tier = o.tiers.empty() ? std::string(harness::kDefaultTier) : o.tiers.front();
  r.batching.policy = *policy;
  r.batching.micro_batch = o.micro_batch;
  r.batching.packer = *packer;
  r.batching.pack_attention = *pack_attention;
  r.batching.max_length = o.max_length;
  r.pad_to_multiple_of = o.pad_to_multiple_of;
  r.accumulation = o.accumulation;
  r.token_seed = static_cast<uint64_t>(o.seed);
  r.id = o.run_id;
  r.kernel_batch = o.run_kernels;
  r.kernel_dir = o.kernel_dir;
  r.out = o.out;
  r.command = o.command;
  planner::Corpus corpus;
  if (!o.run_synthetic.empty()) {
    const auto [samples, seed] = parse_synthetic(o.run_synthetic);
    corpus = planner::generate_synthetic(harness::finetune_mix(samples, static_cast<uint64_t>(seed), o.max_length));
    r.corpus_label = "synthetic-" + std::to_string(samples) + "-" + std::to_string(seed);
    r.batching.seed = static_cast<uint64_t>(o.shuffle_seed >= 0 ? o.shuffle_seed : seed);
  } else {
    corpus = load_corpus_file(o.run_corpus, io::CorpusOptions{o.length_field});
    r.corpus_label = std::filesystem::path(o.run_corpus).stem().string();
    r.batching.seed = static_cast<uint64_t>(o.shuffle_seed >= 0 ? o.shuffle_seed : 0);
  }
  harness::check_run(corpus, r);
  return {r, corpus};
}

std::string strategy_of(const MeasureOptions& o) { return o.strategy.empty() ? "ddp" : o.strategy; }

// One rank of `--nproc N`: its DistributedSampler shard of the corpus (planner/distributed.hpp), DDP's gradient
// all-reduce before every optimizer step, and its rank in every record and in the run id.
std::unique_ptr<harness::ProcessGroupHandle> join_ranks(const MeasureOptions& o, harness::RunOptions& run,
                                                        planner::Corpus& corpus) {
  auto group = std::make_unique<harness::ProcessGroupHandle>(
      harness::DistributedOptions{o.rank, o.nproc, o.rendezvous, harness::backend_for(pick_device(o.device))});
  corpus = planner::shard_corpus(corpus, planner::distributed_shards(corpus.size(), o.nproc, run.batching.seed)[
                                             static_cast<size_t>(o.rank)]);
  run.id = harness::run_id(run) + "/rank-" + std::to_string(o.rank) + "-of-" + std::to_string(o.nproc);
  run.rank = o.rank;
  run.world_size = o.nproc;
  harness::ProcessGroupHandle* g = group.get();
  run.strategy = strategy_of(o);
  if (run.strategy == "ddp")
    run.before_optimizer_step = [g](const std::vector<torch::Tensor>& params) { g->all_reduce_mean(params); };
  return group;
}

// FSDP: this rank keeps its shard of every layer and steps AdamW on its shard of the adapters.
std::unique_ptr<harness::ShardedAdamW> shard_model(harness::Model& model, harness::ProcessGroupHandle& group,
                                                   harness::RunOptions& run) {
  model.shard_layers(harness::fsdp_sharding(group));
  auto optimizer = std::make_unique<harness::ShardedAdamW>(group, model.adapter_parameters(), run.learning_rate,
                                                           run.max_grad_norm);
  harness::ShardedAdamW* step = optimizer.get();
  run.optimizer_step = [step](const std::vector<torch::Tensor>& params) { step->step(params); };
  const torch::Device device = model.options().device;
  harness::synchronize(device);
  std::ostringstream line;
  line << "measure: fsdp rank " << group.rank() << " of " << group.world_size() << " keeps " << model.parameter_count()
       << " parameter elements (layers sharded, embedding and final norm whole), "
       << harness::allocated_bytes(device) / (1 << 20) << " MiB allocated\n";
  log_line(line);
  return optimizer;
}

void run_one_run(const MeasureOptions& o, const model::ModelShape& shape) {
  auto [run, corpus] = run_setup(o, shape);
  std::unique_ptr<harness::ProcessGroupHandle> group;
  if (o.rank >= 0) group = join_ranks(o, run, corpus);
  const harness::BuildOptions build = build_options(o);
  const harness::DeviceInfo dev = harness::device_info(build.device);
  std::ostringstream line;
  line << "measure: run " << harness::run_id(run) << " of " << shape.name << " on " << dev.name << ", "
       << corpus.size() << " samples\n";
  log_line(line);
  harness::Model model(shape, build);
  report_model(model, shape, build.device);
  std::unique_ptr<harness::ShardedAdamW> sharded;
  if (group && strategy_of(o) == "fsdp") sharded = shard_model(model, *group, run);
  // The collector exists only when a table is asked for: the run itself is timed as people launch it.
  std::unique_ptr<harness::ActivitySource> activity = run.kernel_batch >= 0 ? harness::make_cupti_source() : nullptr;
  const harness::RunSummary s = harness::run_recorded(model, corpus, run, dev, activity.get());
  if (o.rank > 0) return;  // rank 0 speaks for the group; every rank's records are in --out
  if (o.format == Format::json) {
    report::print_json(std::cout, "measure", nlohmann::json{{"out", o.out},
                                {"run_id", s.id},
                                {"micro_batches", s.micro_batches},
                                {"optimizer_steps", s.optimizer_steps},
                                {"distinct_shapes", s.distinct_shapes},
                                {"total_s", s.total_s},
                                {"optimizer_s", s.optimizer_s},
                                {"world_size", o.nproc},
                                {"kernel_table", s.kernel_table},
                                {"gpu", dev.name}});
  } else {
    std::cout << "run " << s.id << ": " << s.micro_batches << " micro-batches, " << s.optimizer_steps
              << " optimizer steps, " << s.distinct_shapes << " distinct shapes, " << s.total_s << " s (optimizer "
              << s.optimizer_s << " s); records appended to " << o.out << "\n";
  }
}

// `--nproc N`: checks what every rank would check, then starts the ranks (cli/measure_ranks.hpp).
void launch(const MeasureOptions& o, const model::ModelShape& shape) {
  if (o.run_corpus.empty() && o.run_synthetic.empty())
    throw InputError("--nproc " + std::to_string(o.nproc) + " without a run. Violated constraint: --run-corpus or "
                     "--run-synthetic (the ranks train together)");
  run_setup(o, shape);
  const int code = launch_ranks(o.nproc, own_arguments());
  if (code == 2) throw InputError("a rank refused its input (its message is above)");
  if (code != 0) throw CheckFailed("a rank failed with exit code " + std::to_string(code) + " (its message is above)");
}

void run_measure(const MeasureOptions& o) {
  io::check_output(o.out, {"--out", false, {o.model, o.run_corpus}, true});  // appended: never a device or an input
  const model::ModelShape shape = load_model(o.model);
  check_lora(shape, o);
  if ((o.nproc > 1 || !o.strategy.empty()) && o.rank < 0) return launch(o, shape);
  if (!o.run_corpus.empty() || !o.run_synthetic.empty()) return run_one_run(o, shape);
  if (!o.policy.empty()) throw InputError("--policy without a run. Violated constraint: --run-corpus or --run-synthetic");
  harness::SweepOptions sweep;
  sweep.model_label = shape.name;
  if (o.probes.empty() && o.points.empty())
    throw InputError("no --probe and no --points. Violated constraint: at least one of them");
  sweep.probes = o.probes;
  sweep.points = o.points;
  sweep.shapes = parse_shapes(o);
  sweep.padding = o.padding;
  sweep.tiers = o.tiers;
  sweep.warmup = o.warmup;
  sweep.repetitions = o.repetitions;
  sweep.max_tokens = o.max_tokens;
  sweep.seed = static_cast<uint64_t>(o.seed);
  sweep.out = o.out;
  sweep.kernel_dir = o.kernel_dir;
  sweep.command = o.command;
  const auto points = harness::plan_points(sweep);  // bad input fails before a 50 GB model is built

  const harness::BuildOptions build = build_options(o);
  const harness::DeviceInfo dev = harness::device_info(build.device);
  std::cerr << "measure: " << shape.name << " on " << dev.name << " (" << (dev.arch.empty() ? "cpu" : dev.arch)
            << ", LibTorch " << dev.torch_version << "), " << points.size() << " points\n";
  harness::Model model(shape, build);
  report_model(model, shape, build.device);
  std::unique_ptr<harness::ActivitySource> activity = harness::make_cupti_source();
  const harness::SweepSummary s = harness::run_sweep(model, sweep, dev, activity.get());
  if (o.format == Format::json) {
    report::print_json(std::cout, "measure",
                       nlohmann::json{{"out", o.out},         {"measured", s.measured}, {"skipped", s.skipped},
                                      {"oom", s.oom},         {"failed", s.failed},     {"device_seconds", s.device_seconds},
                                      {"gpu", dev.name}});
  } else {
    std::cout << "measured " << s.measured << ", skipped " << s.skipped << " (already in " << o.out << "), oom "
              << s.oom << ", failed " << s.failed << "; sweep time " << s.device_seconds << " s\n";
  }
  if (s.failed > 0) throw CheckFailed(std::to_string(s.failed) + " point(s) failed; see the messages above");
}

}  // namespace

void add_measure_command(CLI::App& app) {
  auto opts = std::make_shared<MeasureOptions>();
  CLI::App* cmd = app.add_subcommand("measure", "Run probes on the real model on this GPU and append measurement records");
  cmd->footer(
      "Probes: scaling (unpadded rows), padding (the same shapes with pad tokens), ce (a step plus the\n"
      "cross-entropy alone), kernels (a step plus a CUPTI kernel table written beside the records).\n"
      "Tiers: <attention>/<experts>[/extra]: sdpa-auto|sdpa-flash|sdpa-efficient|sdpa-cudnn|sdpa-math,\n"
      "loop|grouped, extras ce-chunked, mask-explicit, gqa-expand, gqa-native. The default,\n"
      "sdpa-auto/grouped/gqa-expand, behaves like transformers 5.17 + peft with attn_implementation=\"sdpa\"\n"
      "(docs/harness.md). Re-running skips points already in --out.\n"
      "host-floor: small widths where the host bounds the step, with launches_per_step (CUPTI) and\n"
      "host_wall_s; the point `host-floor` expands to widths 128,256,512,1024 x rows 1,2,4,8.\n"
      "first-seen: a shape new to the process, its very first step timed apart (first_step_s); put one first\n"
      "to measure the process start (the primer then runs after it).\n"
      "Run probe (--run-corpus or --run-synthetic, one run per process, no other probe): a real LoRA run over\n"
      "the planner's micro-batches (AdamW lr 1e-4, clip 1.0, no warm-up), one `run` record per micro-batch.\n\n"
      "Examples:\n"
      "  stepcast measure --model gemma-4-26b-a4b --probe scaling --shapes 1x2048,2x4096,1x16384 --out h200.jsonl\n"
      "  stepcast measure --model gemma-4-26b-a4b --probe padding --shapes 2x8192 --padding 0.25,0.5 \\\n"
      "      --tiers sdpa-auto/loop,sdpa-efficient/grouped --out h200.jsonl\n"
      "  stepcast measure --model gemma-4-26b-a4b --probe kernels,ce --widths 4096 --rows 2 --out h200.jsonl\n"
      "  stepcast measure --model gemma-4-26b-a4b --out h200.jsonl \\\n"
      "      --points scaling:1x2048,padding:8x2048:0.37,scaling:2x4096:sdpa-efficient/grouped\n"
      "  stepcast measure --model gemma-4-26b-a4b --points first-seen:1x384,first-seen:2x768,host-floor \\\n"
      "      --warmup 1 --repetitions 3 --out host.jsonl\n"
      "  stepcast measure --model gemma-4-26b-a4b --run-synthetic 64:7 --policy bucket-to-pair --micro-batch 2 \\\n"
      "      --accumulation 4 --max-length 4096 --out host.jsonl");
  cmd->add_option("--model", opts->model, "Model name under scenarios/models or a config.json path")->required();
  cmd->add_option("--probe", opts->probes, "Probes to run on every shape: scaling, padding, ce, kernels")->delimiter(',');
  cmd->add_option("--points", opts->points, "Explicit points PROBE:ROWSxWIDTH[:PADDING][:TIER], e.g. padding:2x4096:0.25")
      ->delimiter(',');
  cmd->add_option("--out", opts->out, "JSON Lines file the records are appended to")->required();
  cmd->add_option("--shapes", opts->shapes, "Micro-batch shapes ROWSxWIDTH, e.g. 1x16384,2x4096")->delimiter(',');
  cmd->add_option("--widths", opts->widths, "Widths (with --rows: every combination)")->delimiter(',');
  cmd->add_option("--rows", opts->rows, "Rows per micro-batch for --widths")->delimiter(',')->capture_default_str();
  cmd->add_option("--padding", opts->padding, "Padding probe: share of pad tokens, e.g. 0.25,0.5")->delimiter(',');
  cmd->add_option("--tiers", opts->tiers, "Kernel tiers to measure")->delimiter(',')->capture_default_str();
  cmd->add_option("--warmup", opts->warmup, "Untimed steps before each point")->capture_default_str();
  cmd->add_option("--repetitions", opts->repetitions, "Timed steps per point (the median is step_s)")->capture_default_str();
  cmd->add_option("--max-tokens", opts->max_tokens, "Skip shapes with more than this many ROWSxWIDTH tokens (0: no limit)");
  cmd->add_option("--lora-rank", opts->lora_rank, "LoRA rank (0: no adapters)")->capture_default_str();
  cmd->add_option("--lora-alpha", opts->lora_alpha, "LoRA alpha")->capture_default_str();
  cmd->add_option("--lora-dropout", opts->lora_dropout, "LoRA dropout")->capture_default_str();
  cmd->add_option("--lora-targets", opts->lora_targets, "LoRA target modules")->delimiter(',');
  cmd->add_flag("--no-checkpointing", opts->no_checkpointing, "Keep activations instead of recomputing each layer");
  cmd->add_option("--device", opts->device, "auto, cuda or cpu")->capture_default_str();
  cmd->add_option("--dtype", opts->dtype, "Weights: bfloat16 or float32")
      ->check(CLI::IsMember({"bfloat16", "float32"}))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Seed of the random weights and tokens")->capture_default_str();
  cmd->add_option("--ce-chunk", opts->ce_chunk, "Tokens per chunk of the ce-chunked tier")->capture_default_str();
  cmd->add_option("--kernel-dir", opts->kernel_dir, "Folder of the kernel tables (default: OUT without .jsonl + .kernels)");
  cmd->add_option("--run-corpus", opts->run_corpus,
                  "Run probe: corpus file (lengths, CSV or JSON Lines, optionally .gz; - for stdin)");
  cmd->add_option("--length-field", opts->length_field, "Run probe: the corpus's length field (JSON Lines key or CSV column)");
  cmd->add_option("--run-synthetic", opts->run_synthetic,
                  "Run probe: SAMPLES:SEED of the synthetic fine-tuning mix (median ~700 tokens, docs/harness.md)");
  cmd->add_option("--policy", opts->policy, "Run probe: batching policy (planner), e.g. pad-to-longest, bucket-to-pair");
  cmd->add_option("--packer", opts->packer, "Run probe, --policy pack: next-fit, ffd or multipack")->capture_default_str();
  cmd->add_option("--pack-attention", opts->pack_attention,
                  "Run probe, --policy pack or padding-free: how documents meet (varlen, block-mask, cross)")
      ->capture_default_str();
  cmd->add_option("--micro-batch", opts->micro_batch, "Run probe: rows per micro-batch")->capture_default_str();
  cmd->add_option("--accumulation", opts->accumulation, "Run probe: micro-batches per optimizer step")->capture_default_str();
  cmd->add_option("--max-length", opts->max_length, "Run probe: samples truncated to this many tokens")->capture_default_str();
  cmd->add_option("--pad-to-multiple-of", opts->pad_to_multiple_of, "Run probe: round each width up to a multiple (1: off)")
      ->capture_default_str();
  cmd->add_option("--shuffle-seed", opts->shuffle_seed, "Run probe: seed of the policy's shuffles (default: the synthetic SEED, or 0)");
  cmd->add_option("--run-kernels", opts->run_kernels,
                  "Run probe: after the run, micro-batch K once more under CUPTI, its kernel table in --kernel-dir");
  cmd->add_option("--run-id", opts->run_id, "Run probe: the run's id (default CORPUS/POLICY[/PACKER][/ATTENTION][/pad-M])");
  cmd->add_option("--nproc", opts->nproc, "Run probe on N processes over c10d (Gloo on the CPU, NCCL on CUDA), each with its DistributedSampler shard")
      ->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--strategy", opts->strategy, "With --nproc: ddp (bucketed gradient all-reduce, the default) or fsdp "
                  "(full shard); given, even --nproc 1 runs as a rank over c10d")
      ->check(CLI::IsMember({"ddp", "fsdp"}));
  cmd->add_option("--rank", opts->rank, "Set by the --nproc launcher")->group("");
  cmd->add_option("--rendezvous", opts->rendezvous, "Set by the --nproc launcher: the FileStore path")->group("");
  add_format_option(cmd, opts->format);
  cmd->callback([opts, cmd]() {
    std::ostringstream line;
    line << "stepcast measure";
    for (const CLI::Option* o : cmd->get_options()) {
      if (o->count() == 0 || o->get_name() == "--help") continue;
      line << " " << o->get_name();
      for (const auto& v : o->results()) line << " " << v;
    }
    opts->command = line.str();
    run_measure(*opts);
  });
}

}  // namespace stepcast::cli
