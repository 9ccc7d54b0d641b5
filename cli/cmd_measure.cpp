// stepcast measure: runs the seed's probes on the real model on this machine's GPU (the LibTorch
// harness, harness/) and appends Contract-1 records. Built only when LibTorch is found.
#include <nlohmann/json.hpp>

#include <iostream>
#include <sstream>

#include "cli/app.hpp"
#include "cli/model_config.hpp"
#include "harness/device.hpp"
#include "harness/model.hpp"
#include "harness/probes.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"

namespace stepcast::cli {
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

void run_measure(const MeasureOptions& o) {
  const model::ModelShape shape = load_model(o.model);
  const auto plan = model::plan_lora(shape, o.lora_targets, o.lora_rank);
  if (!plan.unmatched.empty())
    throw InputError("--lora-targets: '" + plan.unmatched.front() + "' names no nn.Linear module of " + shape.name +
                     ". Violated constraint: a module short name such as q_proj");
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

  harness::BuildOptions build;
  build.device = pick_device(o.device);
  build.dtype = o.dtype == "float32" ? torch::kFloat : torch::kBFloat16;
  build.lora.rank = o.lora_rank;
  build.lora.alpha = o.lora_alpha;
  build.lora.dropout = o.lora_dropout;
  build.lora.targets = o.lora_targets;
  build.checkpointing = !o.no_checkpointing;
  build.seed = static_cast<uint64_t>(o.seed);
  build.ce_chunk_tokens = o.ce_chunk;
  const harness::DeviceInfo dev = harness::device_info(build.device);
  std::cerr << "measure: " << shape.name << " on " << dev.name << " (" << (dev.arch.empty() ? "cpu" : dev.arch)
            << ", LibTorch " << dev.torch_version << "), " << points.size() << " points\n";
  harness::Model model(shape, build);
  harness::synchronize(build.device);
  std::cerr << "measure: built " << model.parameter_count() << " parameters (describe: "
            << model::count_params(shape).total << "), " << model.lora_modules() << " LoRA modules, "
            << harness::allocated_bytes(build.device) / (1 << 20) << " MiB allocated\n";
  std::unique_ptr<harness::ActivitySource> activity = harness::make_cupti_source();
  const harness::SweepSummary s = harness::run_sweep(model, sweep, dev, activity.get());
  if (o.format == Format::json) {
    std::cout << nlohmann::json{{"out", o.out},         {"measured", s.measured}, {"skipped", s.skipped},
                                {"oom", s.oom},         {"failed", s.failed},     {"device_seconds", s.device_seconds},
                                {"gpu", dev.name}}
                     .dump(2)
              << "\n";
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
      "(docs/harness.md). Re-running skips points already in --out.\n\n"
      "Examples:\n"
      "  stepcast measure --model gemma-4-26b-a4b --probe scaling --shapes 1x2048,2x4096,1x16384 --out h200.jsonl\n"
      "  stepcast measure --model gemma-4-26b-a4b --probe padding --shapes 2x8192 --padding 0.25,0.5 \\\n"
      "      --tiers sdpa-auto/loop,sdpa-efficient/grouped --out h200.jsonl\n"
      "  stepcast measure --model gemma-4-26b-a4b --probe kernels,ce --widths 4096 --rows 2 --out h200.jsonl\n"
      "  stepcast measure --model gemma-4-26b-a4b --out h200.jsonl \\\n"
      "      --points scaling:1x2048,padding:8x2048:0.37,scaling:2x4096:sdpa-efficient/grouped");
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
