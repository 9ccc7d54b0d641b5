#pragma once
// The measurement-record contract (docs/architecture.md): records, one JSON object per line. This library needs no
// Ceres, so the GPU machine's harness writes records through it and every reader shares one parser.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/batch.hpp"
#include "model/features.hpp"

namespace stepcast::calibrate {

// The adapters a record trained (the harness and transformers + peft write `lora`): rank, alpha, the target short
// names, how many modules they wrapped and the adapters' dtype. The raw object also stays in Record::extra, so a
// record is written back unchanged (dropout and any later key included).
struct RecordLora {
  int64_t rank = 0;                  // 0: full fine-tuning
  double alpha = 0;
  std::vector<std::string> targets;  // peft target_modules, as written
  std::optional<int64_t> modules;    // nn.Linear modules wrapped
  std::string dtype;                 // "float32" under peft's autocast_adapter_dtype, "bfloat16" without it
  std::string at;                    // "file:line:col" of the record's "targets" key, for messages
  double dropout = 0.05;             // peft's lora_dropout; records written before it was recorded all used 0.05
  bool autocast = false;             // the step ran under torch.autocast(bf16) (model::LoraChoice::autocast)
  bool full = false;                 // full fine-tuning ("full": true): every parameter trained, no adapters
};

struct Record {
  // Required by the record contract.
  std::string model;
  std::string gpu;
  std::string tier;
  std::vector<int64_t> rows;  // real (unpadded) tokens of each row
  int64_t width = 0;          // padded width, >= max(rows)
  std::optional<double> step_s;  // required unless oom
  // Optional.
  std::optional<double> peak_gib;        // peak allocated device memory, GiB (2^30 bytes)
  std::optional<int64_t> kept_tokens;    // tokens that count in the loss
  bool oom = false;                      // ran out of memory: a constraint, peak >= capacity
  bool peak_valid = true;                // false: the peak is known to be contaminated
  // Several processes (stepcast measure --nproc N): which rank measured it, of how many; both or neither.
  std::optional<int64_t> rank;
  std::optional<int64_t> world_size;
  std::optional<RecordLora> lora;  // absent: the coefficients' rank on the family's default targets
  // Fields a writer added that the record contract does not name; kept and written back unchanged.
  nlohmann::json extra = nlohmann::json::object();
  // Where the record came from: its file (as given to read_records) and 1-based line; 0 when built in code.
  std::string file;
  int64_t line = 0;
  std::string where() const { return (file.empty() ? std::string("line") : file) + ":" + std::to_string(line); }

  int64_t real_tokens() const;
  int64_t padded_tokens() const { return static_cast<int64_t>(rows.size()) * width; }
  bool has_padding() const { return real_tokens() < padded_tokens(); }
  // The peak can be used for fitting: measured, valid, not an OOM point.
  bool usable_peak() const { return peak_gib.has_value() && peak_valid && !oom; }
};

// The micro-batch a record measured (rows right-padded to width).
inline model::MicroBatch to_batch(const Record& r) {
  model::MicroBatch b;
  b.rows = r.rows;
  b.width = r.width;
  return b;
}

// The adapters a record's features are priced with: its own `lora`, else `default_rank` on the family's default
// targets. lora_key names one choice, so that records training the same adapters share their features.
// A record of a step without gradient checkpointing says so (tools/device/hf_campaign.py: "gradient_checkpointing":
// "off"); absent, the layer recomputed, as every record before that key did.
inline bool record_checkpointing(const Record& r) {
  const auto it = r.extra.find("gradient_checkpointing");
  return it == r.extra.end() || !it->is_string() || it->get<std::string>() != "off";
}
// The adapters' dtype a record trained: its lora.dtype, where adapters trained (a full fine-tune's is its weights').
inline model::AdapterDtype record_adapter_dtype(const Record& r) {
  const bool bf16 = r.lora && !r.lora->full && r.lora->dtype == model::adapter_dtype_name(model::AdapterDtype::bfloat16);
  return bf16 ? model::AdapterDtype::bfloat16 : model::AdapterDtype::float32;
}
inline model::LoraChoice lora_choice(const Record& r, int64_t default_rank) {
  model::LoraChoice l{default_rank, {}};
  if (r.lora) l = {r.lora->rank, r.lora->targets, r.lora->dropout, r.lora->autocast, r.lora->full};
  l.adapter_dtype = record_adapter_dtype(r);
  l.checkpointing = record_checkpointing(r);
  return l;
}
inline std::string lora_key(const model::LoraChoice& lora) {
  std::string key = std::to_string(lora.rank) + "," + std::to_string(lora.dropout) + (lora.autocast ? ",autocast" : "") +
                    (lora.full ? ",full" : "") + (lora.checkpointing ? "" : ",no-ckpt") +
                    (lora.adapter_dtype == model::AdapterDtype::bfloat16 ? ",bf16-adapters" : "");
  for (const auto& t : lora.targets) key += "," + t;
  return key;
}

// Record <-> one JSON object. from_json collects every problem as "file:line:col: ..." (col is the
// column of the offending key in `text` where it can be found, else "file:line: ...").
nlohmann::json to_json(const Record& record);
std::optional<Record> record_from_json(const nlohmann::json& object, const std::string& file, int64_t line,
                                       const std::string& text, std::vector<std::string>& problems);

// Every record's LoRA targets against the short names the model has (model::lora_able_names): a name the model
// lacks is an InputError (exit 2) naming the record's file:line:col, the family and the names it has.
void check_lora_targets(const std::vector<Record>& records, const std::vector<std::string>& lora_able,
                        const std::string& model);

// Reads a JSON Lines file strictly. Blank lines are skipped; every malformed line or field is
// reported, all at once, in one stepcast::InputError (exit 2). An empty file gives no records.
std::vector<Record> read_records(const std::string& path);

// read_records for a command that checks or predicts the records: a file without a single record (empty,
// blank, comments only) is refused as "path:1: ..." instead of passing a check over nothing.
std::vector<Record> read_records_required(const std::string& path);

// Appends one record as one line: open(O_APPEND), a single write() of the whole line, fsync. A
// reader never sees half a record, and the file is only ever appended to. Throws stepcast::Error.
void append_record(const std::string& path, const Record& record);

}  // namespace stepcast::calibrate
