#pragma once
// --gpu, --tier, --stack, --transfer and the LoRA flags, shared by predict, validate, drift and plan; what they
// ask is answered by the library's one choice of predictor (predict/predictor.hpp, docs/method.md "Transfer").
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "io/scenario_io.hpp"
#include "model/transfer.hpp"
#include "predict/predictor.hpp"

namespace stepcast::cli {

struct TransferOptions {
  std::string gpu;    // empty: the coefficients' (or the records', the scenario's)
  std::string tier;   // empty: the coefficients'
  std::string stack;  // empty: the default predictor's transformers-peft, or a fitted file's own host side
  bool transfer = false;
  std::string dtype{};  // the weights' dtype as loaded for training; empty: the config's (or the records', the scenario's)
  std::string attention_kernels{};  // --attention-kernels: the stack's attention kernel family (model::TransferAsk)
};

void add_transfer_options(CLI::App* cmd, TransferOptions& o);

// --lora-targets, --lora-rank, --lora-alpha: the adapters that train (empty: the coefficients' rank on the
// family's default targets, peft's all-linear).
struct LoraOptions {
  std::vector<std::string> targets;
  int64_t rank = 0;    // 0: the coefficients'
  double alpha = 0;    // 0: not given (peft's scaling alpha / rank changes no cost: it is shown, not priced)
  double dropout = -1; // < 0: not given (0.05)
  bool autocast = false;  // --autocast: the step under torch.autocast(bf16), HF Trainer's bf16=True
  bool full = false;      // --full: full fine-tuning, every parameter trains (no adapters)
  bool no_checkpointing = false;  // --no-checkpointing: every layer keeps its activations (no recompute)
  std::string quantize_base;      // --quantize-base: nf4 | nf4-double-quant (QLoRA); empty: not given
  std::string adapter_dtype;      // --adapter-dtype: float32 | bfloat16; empty: not given (float32, peft's default)
  bool given() const {
    return !targets.empty() || rank > 0 || dropout >= 0 || autocast || full || no_checkpointing || !quantize_base.empty() ||
           !adapter_dtype.empty();
  }
};
void add_lora_options(CLI::App* cmd, LoraOptions& o, const std::string& what);

// The question the flags ask: --coefficients (empty: the GPU's default predictor), --model, the flags above.
predict::PredictorAsk predictor_ask(const std::string& coefficients, const std::string& model, const TransferOptions& o);
// The question of a records file (predict, drift, validate): its model and, on the default predictor (no
// `coefficients`), its GPU and the stack its tier label names (predict/predictor.hpp); a fitted file keeps its own
// GPU and tier (records of another GPU are then refused by require_records_on_gpu).
// The adapters a record trained (its `lora`: rank, targets, dropout, autocast, dtype), where it names them.
void set_lora_of(predict::PredictorAsk& ask, const calibrate::Record& r);
predict::PredictorAsk records_ask(const std::vector<calibrate::Record>& records, const std::string& coefficients,
                                  const std::string& model, const TransferOptions& o);
// The question a scenario asks (plan, measure --suggest): its model, GPU and `lora:`; its `coefficients:` a
// refinement used only where it matches (`from_flag`: the file came from --coefficients, the user's own: another
// model, GPU or tier then needs --transfer).
predict::PredictorAsk scenario_ask(const io::Scenario& s, bool from_flag, const TransferOptions& o);
// The user's adapters in `ask` (targets checked against the model's module names by choose_predictor).
void set_lora(predict::PredictorAsk& ask, const LoraOptions& o);

// JSON `provenance`: the names of t.provenance, most trusted first ("calibrated", "transferred-gpu", ...).
nlohmann::json provenance_json(const model::Transfer& t);

// Every record must be of the GPU the predictions are for: a record of another GPU is not a drift or an error of
// the model but another device. Throws InputError (exit 2) with the record's file:line naming both GPUs.
void require_records_on_gpu(const std::vector<calibrate::Record>& records, const model::Transfer& t,
                            const std::string& coefficients_path, const std::string& command);

// The first output line and the notes of the predictor, one per line (text output).
void print_predictor(std::ostream& out, const predict::Predictor& p);

}  // namespace stepcast::cli
