#include "harness/run_probe.hpp"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

#include "calibrate/records.hpp"
#include "calibrate/run_records.hpp"
#include "harness/probes.hpp"
#include "model/errors.hpp"

namespace stepcast::harness {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string fixed(double v, int digits) {
  std::ostringstream ss;
  ss << std::fixed << std::setprecision(digits) << v;
  return ss.str();
}

// The common fields of a harness record for one micro-batch (provenance, versions, LoRA, tier).
calibrate::Record micro_batch_record(const std::vector<int64_t>& rows, int64_t width, const RunOptions& o,
                                     const DeviceInfo& dev, const Model& model, const Tier& tier) {
  SweepOptions so;
  so.model_label = o.model_label;
  so.command = o.command;
  so.seed = o.token_seed;
  PointSpec p{"run", model::tier_label(tier), rows, width, 0.0};
  int64_t real = 0;
  for (int64_t r : rows) real += r;
  p.padding_frac = 1.0 - static_cast<double>(real) / static_cast<double>(static_cast<int64_t>(rows.size()) * width);
  calibrate::Record rec = point_record(p, so, dev, model, tier);
  rec.extra.erase("warmup");  // a real run has none, and each micro-batch runs once
  rec.extra.erase("repetitions");
  return rec;
}

void step_optimizer(Model& model, torch::optim::AdamW& optimizer, const std::vector<torch::Tensor>& params,
                    const RunOptions& o) {
  if (o.before_optimizer_step) o.before_optimizer_step(params);
  if (o.optimizer_step) {
    o.optimizer_step(params);
  } else {
    torch::nn::utils::clip_grad_norm_(params, o.max_grad_norm);
    optimizer.step();
  }
  model.zero_grad();  // set_to_none, as transformers' Trainer does
}

planner::BatchingSpec batching_spec(const RunOptions& o) {
  planner::BatchingSpec spec = o.batching;
  spec.pad_to_multiple_of = o.pad_to_multiple_of;
  if (const auto problems = planner::batching_problems(spec, planner::Naming::flags); !problems.empty()) throw InputError(problems.front());
  return spec;
}

// Each row's documents, from the schedule's flat document lengths (row after row, a row's documents adding
// up to its tokens).
std::vector<std::vector<int64_t>> documents_per_row(const model::MicroBatch& mb) {
  std::vector<std::vector<int64_t>> rows(mb.rows.size());
  size_t next = 0;
  for (size_t r = 0; r < mb.rows.size(); ++r) {
    int64_t tokens = 0;
    while (tokens < mb.rows[r] && next < mb.document_lengths.size()) {
      rows[r].push_back(mb.document_lengths[next]);
      tokens += mb.document_lengths[next++];
    }
    if (tokens != mb.rows[r])
      throw Error("run probe: row " + std::to_string(r) + "'s documents add up to " + std::to_string(tokens) +
                  " tokens, not its " + std::to_string(mb.rows[r]) + " (planner::Schedule::fill)");
  }
  return rows;
}

Batch micro_batch(const model::MicroBatch& mb, int64_t vocab, uint64_t seed, const torch::Device& device) {
  const std::vector<int64_t> rows(mb.rows.begin(), mb.rows.end());
  if (!mb.packed) return make_batch(rows, mb.width, vocab, seed, device);
  return make_packed_batch(documents_per_row(mb), mb.width, vocab, seed, device, mb.attention);
}

// What a packed run adds to each micro-batch's `run` object: packer, attention mode, documents per row.
void add_packing(nlohmann::json& run, const RunOptions& o, const Batch& batch) {
  if (!batch.packed()) return;
  if (o.batching.policy == planner::Policy::pack) run["packer"] = planner::packer_name(o.batching.packer);
  run["pack_attention"] = planner::pack_attention_name(batch.attention);
  nlohmann::json per_row = nlohmann::json::array();
  for (const auto& docs : batch.documents) per_row.push_back(docs);
  run["documents"] = per_row;
}

std::filesystem::path run_kernel_dir(const RunOptions& o) {
  if (!o.kernel_dir.empty()) return o.kernel_dir;
  std::string base = o.out;
  if (base.size() > 6 && base.substr(base.size() - 6) == ".jsonl") base.resize(base.size() - 6);
  return base + ".kernels";
}

// One more step of a micro-batch under the activity source, after the run: its kernel table.
std::filesystem::path capture_run_kernels(Model& model, const Batch& batch, const Tier& tier, const RunOptions& o,
                                          const DeviceInfo& dev, ActivitySource& activity) {
  const std::string label = o.model_label + " run " + run_id(o) + " micro-batch " + std::to_string(o.kernel_batch) +
                            " " + std::to_string(batch.rows.size()) + "x" + std::to_string(batch.width) +
                            " rows=" + rows_text(batch.rows) + " " + o.tier;
  const std::filesystem::path dir = run_kernel_dir(o);
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / (file_safe("run_" + run_id(o) + "_mb" + std::to_string(o.kernel_batch)) + ".jsonl");
  write_step_kernel_table(model, batch, tier, dev, activity, label, file.string());
  return file;
}

std::vector<int32_t> corpus_order_lengths(const planner::Corpus& corpus) {
  return corpus.lengths;  // corpus order, as the file or generator gave them (the schema's corpus_lengths)
}

}  // namespace

planner::SyntheticSpec finetune_mix(int64_t samples, uint64_t seed, int64_t max_length) {
  planner::SyntheticSpec spec;
  spec.samples = samples;
  spec.seed = seed;
  spec.min_length = 16;
  spec.max_length = max_length;
  spec.components = {{0.8, 600.0, 0.7}, {0.2, 1800.0, 0.75}};
  return spec;
}

std::string run_id(const RunOptions& o) {
  if (!o.id.empty()) return o.id;
  std::string id = o.corpus_label + "/" + planner::policy_name(o.batching.policy);
  if (o.batching.policy == planner::Policy::pack) id += "/" + planner::packer_name(o.batching.packer);
  if (planner::packs(o.batching.policy)) id += "/" + planner::pack_attention_name(o.batching.pack_attention);
  if (o.pad_to_multiple_of > 1) id += "/pad-" + std::to_string(o.pad_to_multiple_of);
  return id;
}

void check_run(const planner::Corpus& corpus, const RunOptions& o) {
  Diagnostics d;
  if (o.accumulation < 1) d.add("--accumulation = " + std::to_string(o.accumulation) + ". Violated constraint: >= 1");
  if (o.batching.max_length < 2) d.add("--max-length = " + std::to_string(o.batching.max_length) + ". Violated constraint: >= 2");
  planner::BatchingSpec spec = o.batching;
  spec.pad_to_multiple_of = o.pad_to_multiple_of;
  for (const auto& p : planner::batching_problems(spec, planner::Naming::flags)) d.add(p);
  if (corpus.size() == 0) d.add("the corpus is empty. Violated constraint: at least one sample");
  int64_t short_samples = 0;
  for (int32_t len : corpus.lengths) short_samples += len < 2 ? 1 : 0;
  if (short_samples > 0)
    d.add(std::to_string(short_samples) + " sample(s) shorter than 2 tokens. Violated constraint: >= 2 tokens (a " +
          "1-token sample has no next-token label)");
  if (!o.out.empty() && std::filesystem::exists(o.out)) {
    const std::string id = run_id(o);
    for (const auto& r : calibrate::read_records(o.out)) {
      if (r.extra.contains("run") && r.extra["run"].is_object() && r.extra["run"].value("id", "") == id) {
        d.add("--out " + o.out + ":" + std::to_string(r.line) + ": run '" + id +
              "' is already recorded. Violated constraint: a new run id (--run-id) or another --out");
        break;
      }
    }
  }
  d.throw_if_any();
}

RunSummary run_recorded(Model& model, const planner::Corpus& corpus, const RunOptions& o, const DeviceInfo& dev,
                        ActivitySource* activity) {
  check_run(corpus, o);
  const planner::Schedule schedule = planner::build_schedule(corpus, batching_spec(o), o.accumulation);
  const Tier tier = parse_tier(o.tier);
  const torch::Device device = model.options().device;
  const int64_t vocab = model.shape().vocab_size;
  const int64_t n = schedule.num_batches();
  const std::vector<torch::Tensor> params = model.adapter_parameters();
  if (params.empty()) throw InputError("--lora-rank 0. Violated constraint: a run trains LoRA adapters (rank >= 1)");
  torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(o.learning_rate).weight_decay(0.0));
  RunSummary summary;
  summary.id = run_id(o);
  calibrate::RunFields fields;
  fields.id = summary.id;
  fields.policy = planner::policy_name(o.batching.policy);
  fields.micro_batch = o.batching.micro_batch;
  fields.accumulation = o.accumulation;
  fields.max_length = o.batching.max_length;
  fields.pad_to_multiple_of = o.pad_to_multiple_of;
  fields.seed = o.batching.seed;
  model.zero_grad();
  synchronize(device);
  const auto run_start = std::chrono::steady_clock::now();
  model::MicroBatch mb;
  for (int64_t b = 0; b < n; ++b) {
    schedule.fill(b, mb);
    const std::vector<int64_t> rows(mb.rows.begin(), mb.rows.end());
    const bool first_seen = !model.seen(static_cast<int64_t>(rows.size()), mb.width);
    summary.distinct_shapes += first_seen ? 1 : 0;
    if (dev.cuda) reset_peak(device);
    const auto t0 = std::chrono::steady_clock::now();
    const Batch batch = micro_batch(mb, vocab, o.token_seed + static_cast<uint64_t>(b), device);
    const torch::Tensor loss = model.step(batch, tier, 1.0 / static_cast<double>(o.accumulation));
    const double host_s = seconds_since(t0);
    synchronize(device);
    const double step_s = seconds_since(t0);
    const int64_t peak = dev.cuda ? peak_allocated_bytes(device) : 0;
    std::optional<double> optimizer_s;
    if ((b + 1) % o.accumulation == 0 || b + 1 == n) {
      const auto t1 = std::chrono::steady_clock::now();
      step_optimizer(model, optimizer, params, o);
      synchronize(device);
      optimizer_s = seconds_since(t1);
      summary.optimizer_s += *optimizer_s;
      ++summary.optimizer_steps;
    }
    const double elapsed = seconds_since(run_start);
    calibrate::Record rec = micro_batch_record(rows, mb.width, o, dev, model, tier);
    rec.step_s = step_s;
    rec.rank = o.rank;
    rec.world_size = o.world_size;
    if (o.strategy) rec.extra["strategy"] = *o.strategy;
    if (dev.cuda) rec.peak_gib = static_cast<double>(peak) / kGiB;
    rec.extra["host_wall_s"] = host_s;
    rec.extra["loss"] = loss.item<double>();
    fields.index = b;
    fields.optimizer_step = b / o.accumulation;
    fields.first_seen = first_seen;
    fields.optimizer_s = optimizer_s;
    fields.elapsed_s = elapsed;
    fields.corpus_lengths = b == 0 ? corpus_order_lengths(corpus) : std::vector<int32_t>{};
    rec.extra["run"] = calibrate::run_json(fields);
    add_packing(rec.extra["run"], o, batch);
    calibrate::append_record(o.out, rec);
    summary.total_s = elapsed;
    ++summary.micro_batches;
    if (o.progress) {  // one write: the ranks of a multi-process run share standard error
      std::ostringstream line;
      line << "[run " << summary.id << "] micro-batch " << b + 1 << "/" << n << " " << rows.size() << "x" << mb.width
           << (batch.packed() ? " (" + std::to_string(mb.documents) + " documents)" : "")
           << (first_seen ? " first-seen" : "") << ": " << fixed(step_s, 3) << " s"
           << (optimizer_s ? ", optimizer " + fixed(*optimizer_s, 3) + " s" : "") << ", elapsed " << fixed(elapsed, 1)
           << " s\n";
      std::cerr << line.str() << std::flush;
    }
  }
  if (activity != nullptr && o.kernel_batch >= 0 && o.kernel_batch < n) {
    schedule.fill(o.kernel_batch, mb);
    const Batch batch = micro_batch(mb, vocab, o.token_seed + static_cast<uint64_t>(o.kernel_batch), device);
    summary.kernel_table = capture_run_kernels(model, batch, tier, o, dev, *activity).string();
    if (o.progress) std::cerr << "[run " << summary.id << "] kernel table " << summary.kernel_table << std::endl;
  }
  return summary;
}

}  // namespace stepcast::harness
