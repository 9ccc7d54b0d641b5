#pragma once
// What predicts a step, chosen once for every front end (plan, predict, drift, validate, the campaign runner, a
// second front end): docs/method.md, "The default predictor".
//
// With no coefficient file the answer is the GPU's default per-category predictor (scenarios/gpus.yaml
// `default_coefficients`), carried to the asked model when it was fitted on another (a model transfer, allowed:
// travelling is what the default is for), with the host side of the stack that runs the job (model/stacks.hpp:
// the stack's cost per launch times the model's own launches). A fitted file is a refinement, used where its model,
// GPU and tier are the question's; another model, GPU or tier needs `transfer` (--transfer), and a scenario's file
// that does not match is answered by the default with a note instead of being carried silently. The model's module
// table is expanded once here and handed to every count (features, launches, memory).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/modules.hpp"
#include "model/stacks.hpp"
#include "model/step_model.hpp"
#include "model/transfer.hpp"

namespace stepcast::predict {

// What is asked; an empty field means "the natural default" (each field says which).
struct PredictorAsk {
  std::string model;         // a name or config path (io/model_config.hpp); empty: the coefficients' own model
  std::string gpu;           // a name in scenarios/gpus.yaml; empty: the file's GPU, or the first GPU with a default
  std::string tier;          // a tier label; empty: the coefficients'
  // The tier label came from measurement records: a label of a stack's records ("hf-peft/...") names the stack
  // that measured them and asks the default's own tier; a tier-grammar label names the harness stack.
  bool tier_from_records = false;
  std::string stack;         // model/stacks.hpp; empty: the default path's transformers-peft, a fitted file's own host side
  std::string coefficients;  // a coefficient file; empty: the GPU's default predictor
  // The weights' dtype as the job loads them (bfloat16 for most LoRA runs, whatever the config's torch_dtype says:
  // Gemma-2-9B's says float32); empty: the config's. It prices the weights' bytes and the expert stream.
  std::string dtype;
  std::string coefficients_where;  // where the file was named, for messages ("--coefficients", "s.yaml:4:15")
  bool named_by_scenario = false;  // a scenario's file that does not match is answered by the default, with a note
  bool transfer = false;           // --transfer: a fitted file for another model, GPU or tier; another GPU or tier
  // The adapters that train: LoRA of `lora_rank` (0: the coefficients' rank) on `lora_targets` (empty: the
  // family's default targets, peft's all-linear). They price the step (adapter GEMMs), the memory (what trains:
  // adapters, gradients, AdamW) and the launches (one set per wrapped module).
  std::vector<std::string> lora_targets;
  int64_t lora_rank = 0;
  double lora_dropout = -1;  // peft's lora_dropout; < 0: 0.05, what every record was measured with (model::LoraChoice)
  bool lora_autocast = false;  // the step under torch.autocast(bf16), HF Trainer's bf16=True (model::LoraChoice)
  bool full = false;           // full fine-tuning: no adapters, every parameter trains (model::LoraChoice::full)
  bool checkpointing = true;   // gradient checkpointing (model::LoraChoice::checkpointing)
  model::BaseQuant base_quant = model::BaseQuant::none;  // QLoRA's 4-bit base (model::LoraChoice::base_quant)
  model::AdapterDtype adapter_dtype = model::AdapterDtype::float32;  // model::LoraChoice::adapter_dtype
  std::string attention_kernels;  // the stack's attention kernels when not its arch's (model::TransferAsk)
  std::string lora_where = "LoRA targets";  // prefixes a problem with them ("--lora-targets", "s.yaml:9:12: lora.targets")
};

enum class Source { default_predictor, fitted_file };

struct Predictor {
  model::ModelShape shape;
  model::ModuleTable modules;   // the shape's, expanded once
  model::Transfer transfer;     // the coefficients for the question (stack applied), GPU, provenance, intervals
  model::LoraChoice lora;       // what trains
  std::string coefficients_path;
  Source source = Source::default_predictor;
  const model::StackSpec* stack = nullptr;  // whose host side; nullptr: the fitted file's own
  // Which predictor answered and why: "default per-category predictor for NVIDIA H200 (...): model transferred
  // from 'a' to 'b' (...); host side of transformers-peft ..." or "fitted file F (model, GPU and tier match) ...".
  std::string first_line;
  std::vector<std::string> notes;  // e.g. why a scenario's file was set aside
  // What the transfer was made from, so that another LoRA plan (a record's own) is carried the same way with its
  // own launches.
  model::Coefficients fitted;
  model::TransferAsk asked;

  // The step model for the asked adapters, or for `lora` (a record's own): features, memory and launches all
  // from `modules`; on a stack's host side, the launches are this LoRA plan's.
  std::unique_ptr<model::StepModel> step_model() const;
  std::unique_ptr<model::StepModel> step_model(const model::LoraChoice& lora) const;
  // The relative half-width of a plan's 90 % wall-clock interval: the steps of one run share one systematic error
  // (a machine's host floor, a rate), so it is the step half-width of the kind, not reduced by summing; on a stack's
  // host side, the host-bound share of the micro-batches takes the stack's host-bound error (docs/method.md,
  // "Intervals").
  double wall_clock_half_width(bool padded, double host_bound_share = 0) const;
};

// Throws InputError (exit 2) naming each problem: an unknown GPU, stack or model, a fitted file for another model,
// GPU or tier without `transfer` (located at the file's key), unknown LoRA targets (naming the family's modules),
// a GPU without a default predictor (without `transfer`).
Predictor choose_predictor(const PredictorAsk& ask);

// The coefficient file the GPU declares as its default predictor (resolved under scenarios/, $STEPCAST_SCENARIOS_DIR
// overrides), or empty when it declares none.
std::string default_coefficients_path(const std::string& gpu);

// The GPU whose default predictor answers for `gpu`: itself when it declares one, else the first GPU of the table
// that does (carried there only with a transfer, as choose_predictor does).
std::string default_predictor_gpu(const std::string& gpu);

}  // namespace stepcast::predict
