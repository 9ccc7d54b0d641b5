#pragma once
// Campaign files (YAML, measurements/campaigns/NAME.yaml): what to measure on a GPU, how, the prediction it is
// checked against, and the checks (docs/campaigns.md has every key). `schema_version: 1` is required, unknown keys
// are errors, and every problem is reported at once as file:line:col.
//
//   schema_version: 1
//   description: ...                                      # optional
//   prediction: measurements/predictions/NAME.jsonl        # the pre-registered prediction (campaign predict)
//   coefficients: scenarios/coefficients/X.yaml           # what predicts, as `plan`'s; transfer: true as --transfer
//   gpu: NVIDIA H200                                      # a name of scenarios/gpus.yaml
//   total_limit_s: 540                                    # the whole device call's items
//   defaults: {any item key but id}                       # each item starts from these
//   items:
//     - id: olmo                                          # optional: the model's name
//       model: olmo-2-7b                                  # a name under scenarios/models/ or a config path
//       stack: hf-peft                                    # hf-peft (transformers + peft) | harness (stepcast measure)
//       tier: sdpa-auto/grouped/gqa-expand                # harness only; hf-peft's is hf-peft/<attn>-<experts>
//       lora: {rank: 16, alpha: 32, dropout: 0.05, targets: [q_proj, k_proj, v_proj, o_proj]}
//       gradient_checkpointing: reentrant                 # reentrant | non-reentrant | off
//       attn_implementation: sdpa                         # hf-peft: sdpa | eager (a family without SDPA: eager)
//       experts_implementation: grouped_mm                # hf-peft: grouped_mm | eager
//       allocator: default                                # default | expandable-segments
//       dtype: bfloat16
//       label: warm                                       # cold | warm; default: cold for the plan's first item
//       repeats: 1                                        # the same process N times
//       time_limit_s: 240                                 # per process
//       probes: {points: [1x2048, 2x4096:0.25], kernels: [2x4096], warmup: 1, repetitions: 2}
//       run: {corpus: {file: scenarios/corpora/X.csv} | {synthetic: {...}}, samples: 64,
//             policy: pad-to-longest | policies: [pad-to-longest, bucket-to-pair], micro_batch: 2,
//             accumulation: 4, max_length: 8192, pad_to_multiple_of: 1, seed: 1, bucket_size, packer, pack_attention}
//       dry_run_config: tests/data/configs/tiny-llama.json  # optional: the CPU dry run's config (harness)
//   checks:
//     - metric: step_time                                 # run_wall_clock | step_time | peak_allocated |
//                                                         # peak_reserved | pad_bucket_ratio
//       goal: {error: 0.10}                               # |relative error| <= error; under:, over: one-sided
//       items: [olmo]                                     # optional: campaign item ids (default: every item)
//
// Paths are relative to the repository root: the nearest folder above the campaign file that holds `measurements/`
// and `scenarios/`. `run: null` (or `probes: null`) in an item drops the defaults' run (probes).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/scenario_io.hpp"
#include "planner/batching.hpp"

namespace stepcast::io {

enum class Stack { hf_peft, harness };
std::string stack_name(Stack stack);

enum class Metric { run_wall_clock, step_time, peak_allocated, peak_reserved, pad_bucket_ratio };
std::string metric_name(Metric metric);
const std::vector<std::string>& metric_names();

struct LoraSettings {
  int64_t rank = 16;
  double alpha = 32;
  double dropout = 0.05;
  std::vector<std::string> targets;  // required: a measurement names what it trains
  bool autocast = false;  // hf-peft only: the step under torch.autocast(bf16), as HF Trainer's bf16=True runs it
  bool full = false;      // hf-peft only: full fine-tuning, no adapters (rank and targets unused)
  // hf-peft only: the adapters' parameters in bf16 (get_peft_model(autocast_adapter_dtype=False), model/adapters.hpp)
  model::AdapterDtype adapter_dtype = model::AdapterDtype::float32;
};

// A probe point "RxW[:PAD]" as `stepcast measure --points` takes it after its probe kind: R rows of width W, a share
// PAD of pad tokens, the rows as the harness pads them (model::padded_rows).
struct ProbePoint {
  std::string text;
  int64_t rows = 0;
  int64_t width = 0;
  double padding = 0;
  std::vector<int64_t> row_tokens;
};
// The point, or a message saying what is wrong with `text` (empty when parsed).
std::optional<ProbePoint> parse_probe_point(const std::string& text, std::string& problem);

struct ProbeSettings {
  std::vector<ProbePoint> points;   // timed and predicted: the checks' points
  std::vector<ProbePoint> kernels;  // a kernel table each (not a check point: the harness times it under CUPTI)
  // hf-peft: one step each under the allocator's history, what is live at its peak (tools/device/hf_campaign.py)
  std::vector<ProbePoint> memory_snapshots;
  // hf-peft: the point's first (first-seen) step and one repeat under torch.profiler, host time by operator
  // (what a new shape costs on the host, docs/host.md "First-seen shapes"); not a check point
  std::vector<ProbePoint> host_profiles;
  int64_t warmup = 1;
  int64_t repetitions = 2;
};

struct CampaignRun {
  CorpusSource corpus;
  bool has_corpus = false;
  int64_t samples = 0;  // 0: the whole corpus, else its first N samples
  std::vector<planner::Policy> policies;
  planner::BatchingSpec batching;  // policy set per plan item
  int64_t accumulation = 1;
};

struct CampaignItem {
  std::string id;
  std::string model;          // as written
  std::string config;         // relative to the root: scenarios/models/NAME.json or the path given
  std::string model_name;     // what records call it (io::model_name)
  std::string model_type;     // the config's model_type (the dry run's tiny config has the same)
  Stack stack = Stack::hf_peft;
  std::string tier;           // harness: as given; hf-peft: hf_peft_tier()
  LoraSettings lora;
  std::string gradient_checkpointing = "reentrant";
  std::string attn_implementation = "sdpa";
  std::string experts_implementation = "grouped_mm";
  std::string allocator = "default";
  std::string dtype = "bfloat16";
  std::string label;          // empty: cold for the plan's first process, else warm
  int64_t repeats = 1;
  double time_limit_s = 0;
  std::optional<ProbeSettings> probes;
  std::optional<CampaignRun> run;
  std::string dry_run_config;  // relative to the root; empty: a tiny config of the same model_type, if any
  std::string where;           // file:line:col of the item
};

// The tier label of a transformers + peft item: what its records say and what is predicted.
std::string hf_peft_tier(const std::string& attn_implementation, const std::string& experts_implementation);

struct Goal {
  std::optional<double> error;  // |e| <= error
  std::optional<double> under;  // e >= -under (a prediction at most this far below the measurement)
  std::optional<double> over;   // e <= over
  bool passes(double relative_error) const;
  std::string text() const;     // "within 3 %, at most 1 % under" (no | : it sits in markdown tables)
};

struct CampaignCheck {
  Metric metric = Metric::step_time;
  Goal goal;
  std::vector<std::string> items;  // campaign item ids covered (every item when the file names none)
  std::string where;
};

struct Campaign {
  std::string path;          // as given
  std::string name;          // the file's stem
  std::string root;          // the repository root
  std::string file;          // the campaign file, relative to the root
  std::string description;
  std::string prediction;    // relative to the root
  std::string coefficients;  // relative to the root; empty: the GPU's default predictor
  bool transfer = false;
  std::string gpu;
  double total_limit_s = 0;
  std::vector<CampaignItem> items;
  std::vector<CampaignCheck> checks;

  std::string at_root(const std::string& relative) const;  // the path of a root-relative file
  std::string plan_file() const;                           // NAME.plan.json beside the prediction, relative
  const CampaignItem* find_item(const std::string& id) const;
};

// One process of the device call: a campaign item's probes, or one of its runs (a policy), once per repeat.
struct PlanItem {
  std::string id;        // "<item>/probes" or "<item>/<policy>", then "/repeat-K" when the item repeats
  std::string base_id;   // without the repeat: what its prediction lines are keyed by
  size_t item = 0;       // index into Campaign::items
  int64_t repeat = 0;
  bool probes = false;   // else a run
  planner::Policy policy = planner::Policy::pad_to_longest;
  std::string label;     // cold | warm
  std::string run_id;    // a run's id in its records: "<model>/<corpus>/<policy>[/repeat-K]"
};
std::vector<PlanItem> plan_items(const Campaign& c);

// The records file of a plan item, as the device runner and the executor name it: '/' -> "__", then ".jsonl".
std::string records_file_name(const std::string& plan_item_id);

// The items (and their order) a check covers.
std::vector<size_t> covered_items(const Campaign& c, const CampaignCheck& check);

Campaign load_campaign(const std::string& path);

}  // namespace stepcast::io
