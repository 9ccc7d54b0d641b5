#pragma once
// Scenario files (YAML): the run a person is about to book and the restart question they ask.
// `schema_version: 1` is required, unknown keys are errors, and every problem is reported at once
// as file:line:col. Relative paths (corpus file, coefficients) are relative to the scenario file.
//
//   schema_version: 1
//   name: gemma-4-26b-a4b-h200-lora          # optional: description; dtype: the weights as loaded (bfloat16), default the config's
//   model: gemma-4-26b-a4b                   # a name or config path (io/model_config.hpp)
//   coefficients: coefficients/x.yaml        # optional: a fitted file, used only where its model, GPU and tier
//                                            # match (else the GPU's default predictor answers, with a note); or
//   predictor: {width_quadratic: {step_s_per_token, step_s_per_token_width, step_s_fixed,
//                                 masked_step_factor, peak_gib_fixed, peak_gib_per_token}}
//                                            # neither: the GPU's default per-category predictor (needs `model`)
//   lora: {rank: 16, alpha: 32, dropout: 0.05, targets: [q_proj, k_proj, v_proj, o_proj]}   # optional: what trains (default: the
//                                            # predictor's rank on the family's all-linear targets); autocast: true
//                                            # when the trainer runs under torch.autocast (HF Trainer bf16=True);
//                                            # lora: {full: true} plans a full fine-tune instead (no adapters);
//                                            # quantize_base: nf4-double-quant for QLoRA (model/quantization.hpp);
//                                            # adapter_dtype: bfloat16 for adapters kept in bf16 (model/adapters.hpp)
//   gpu: {name: NVIDIA H200, memory_gib: 139.8}
//   corpus: {file: corpora/x.txt, length_field: n}  # or synthetic: {...} or histogram: {seed, bins: [{length, count}]}
//                                            # (file: lengths, CSV or JSON Lines, optionally .gz; io/corpus_io.hpp)
//   baseline: {policy, micro_batch, accumulation, max_length, bucket_size, seed, pad_to_multiple_of}
//   run: {epochs, optimizer_step_s, checkpoint_every_steps, checkpoint_save_s, eval_every_steps, eval_s, startup_s,
//         cold_start, allocator}
//        (optimizer_step_s absent: the predictor's calibrated optimizer step; cold_start: true charges a fresh
//         machine's kernel compiles, model/kernel_compiles.hpp; allocator: default or expandable-segments, PYTORCH_CUDA_ALLOC_CONF)
//   window_hours: 13.9
//   memory_cap_gib: 120                       # optional
//   sweep: {policies, micro_batches, max_lengths, bucket_sizes, pad_to_multiples, top}
//   parallel: {gpus: 4, strategy: ddp, sampler: distributed}   # optional: several GPUs (planner/distributed.hpp);
//                                            # strategy ddp | fsdp | ep, sampler distributed | length-grouped
#include <optional>
#include <string>
#include <vector>

#include "io/corpus_io.hpp"
#include "model/adapters.hpp"
#include "planner/batching.hpp"
#include "planner/corpus.hpp"
#include "planner/distributed.hpp"
#include "planner/simulate.hpp"
#include "planner/sweep.hpp"
#include "planner/width_quadratic.hpp"
#include "model/errors.hpp"

namespace stepcast::io {

struct CorpusSource {
  std::string file;  // resolved path; empty when synthetic or a histogram
  std::optional<planner::SyntheticSpec> synthetic;
  std::vector<planner::HistogramBin> histogram;
  uint64_t histogram_seed = 0;
  CorpusOptions options;  // how to read `file` (its length field)
};


// The scenario's `lora:` block: the adapters the run trains. Targets are checked against the model's nn.Linear
// names at their line:col; rank 0 and no targets = not given (the predictor's rank on the family's default).
struct LoraSpec {
  int64_t rank = 0;
  double alpha = 0;                  // 0: not given; shown, not priced (the scaling alpha / rank costs nothing)
  std::vector<std::string> targets;
  std::string targets_where;         // "file:line:col" of `targets`, for messages about them
  double dropout = -1;               // peft's lora_dropout; < 0: not given (0.05, model::LoraChoice)
  bool autocast = false;             // the step under torch.autocast(bf16): HF Trainer / TRL with bf16=True
  bool full = false;                 // full: true, a full fine-tune (every parameter trains; no adapter key)
  bool checkpointing = true;         // checkpointing: false, every layer keeps its activations (no recompute)
  model::BaseQuant base_quant = model::BaseQuant::none;  // quantize_base: nf4 | nf4-double-quant (QLoRA)
  model::AdapterDtype adapter_dtype = model::AdapterDtype::float32;  // adapter_dtype: bfloat16 for pure-bf16 adapters
};

struct Scenario {
  std::string path;
  std::string name;
  std::string description;
  std::string model;
  std::string dtype;  // `dtype:` the weights' dtype as loaded for training; empty: the config's torch_dtype
  std::string coefficients;  // resolved path; empty when `predictor` is given or for the default predictor
  std::string coefficients_where;  // "file:line:col" of `coefficients`
  std::optional<planner::WidthQuadratic> width_quadratic;
  std::string gpu_name;
  CorpusSource corpus;
  planner::BatchingSpec baseline;
  planner::RunSpec run;
  std::string optimizer_step_source;  // who gave run.optimizer_step_s (empty when unset: the predictor's)
  bool cold_start = false;            // a fresh machine: the plan sets run.cold_cache from the model (cli)
  planner::SweepSpec sweep;
  std::optional<planner::ParallelSpec> parallel;  // absent: one GPU
  LoraSpec lora;
};

Scenario load_scenario(const std::string& path);

// `relative` resolved against the folder of `file` (absolute paths stay as they are).
std::string resolve_beside(const std::string& file, const std::string& relative);
// `relative` resolved against `folder` (absolute paths stay as they are).
std::string resolve_in(const std::string& folder, const std::string& relative);

// A corpus mapping {file, length_field} | {synthetic: {...}} | {histogram: {...}} (the scenario's `corpus:`, also a
// campaign run's), its file resolved against `base_dir` and checked to exist; `relative_to` names that folder in
// messages. Problems go to the reader's diagnostics; the caller calls finish().
class MapReader;
CorpusSource read_corpus_mapping(MapReader& corpus, const std::string& base_dir, const std::string& relative_to,
                                 Diagnostics& d);

// The samples of a corpus source (a file, a synthetic mix or a histogram), and what it is in words ("synthetic
// (seed 7)", the file's path). An empty corpus is an InputError.
planner::Corpus load_corpus_source(const CorpusSource& c, std::string& description);

}  // namespace stepcast::io
