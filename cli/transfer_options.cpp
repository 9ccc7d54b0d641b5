#include "cli/transfer_options.hpp"

#include <fstream>
#include <ostream>

#include "model/errors.hpp"
#include "model/gpus.hpp"
#include "model/limits.hpp"
#include "model/stacks.hpp"
#include "model/tiers.hpp"

namespace stepcast::cli {

void add_transfer_options(CLI::App* cmd, TransferOptions& o) {
  cmd->add_option("--gpu", o.gpu, "Predict for this GPU (a name in scenarios/gpus.yaml; default: the coefficients')");
  // Strict, as describe's: a label the grammar does not know would be priced as an unknown tier (one attention rate,
  // the data decide), a silently different answer for a typo. Records keep their own labels leniently.
  cmd->add_option("--tier", o.tier,
                  "Predict for this tier label (default: the coefficients', or the records'); e.g. "
                  "hf-peft/sdpa-grouped_mm, hf-peft/flash_attention_2-eager, sdpa-auto/grouped/gqa-expand "
                  "(docs/user-guide.md, \"Kernel tier\"); a label outside the grammar is exit 2")
      ->check([](const std::string& label) {
        try {
          (void)model::parse_tier(label);
          return std::string();
        } catch (const InputError& e) {
          return std::string(e.what());
        }
      });
  cmd->add_option("--dtype", o.dtype,
                  "The weights' dtype as the job loads them, e.g. bfloat16 (default: the scenario's `dtype`, the "
                  "records', else the config's torch_dtype, which some configs give as float32)")
      ->check(CLI::IsMember({"bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "int8"}));
  std::string stacks;
  for (const auto& s : model::kStacks) stacks += (stacks.empty() ? "" : ", ") + std::string(s.name);
  cmd->add_option("--stack", o.stack,
                  "The stack that runs the job, whose host cost per kernel launch prices the host side (" + stacks +
                      "; default: " + std::string(model::default_stack().name) +
                      " on the default predictor, a fitted file's own host side otherwise; docs/host.md)")
      ->check(CLI::IsMember([] {
        std::vector<std::string> names;
        for (const auto& s : model::kStacks) names.emplace_back(s.name);
        return names;
      }()));
  cmd->add_option("--attention-kernels", o.attention_kernels,
                  "The attention kernels the stack runs when not the GPU arch's own (scenarios/gpus.yaml archs): flash2 "
                  "(FlashAttention 2: transformers' attn_implementation=\"flash_attention_2\", the flash-attn package; "
                  "on Hopper it is mma.sync code, about half cuDNN's rate) or cudnn; priced by the two families' "
                  "public efficiencies on the GPU (docs/gpus.md)")
      ->check(CLI::IsMember({"flash2", "cudnn"}));
  cmd->add_flag("--transfer", o.transfer,
                "Allow a GPU or tier other than the coefficients' (and, with --coefficients, another model); "
                "efficiencies carried by the GPUs' peaks; the output's first line says what was transferred");
}

void add_lora_options(CLI::App* cmd, LoraOptions& o, const std::string& what) {
  cmd->add_option("--lora-targets", o.targets,
                  what + "'s LoRA target modules, comma-separated (default: the family's all-linear; an unknown name "
                         "is exit 2 naming the family's modules)")
      ->delimiter(',');
  cmd->add_option("--lora-rank", o.rank, what + "'s LoRA rank (default: the coefficients')")
      ->check(CLI::Range(int64_t{1}, limits::kMaxLoraRank));
  cmd->add_option("--lora-alpha", o.alpha, what + "'s LoRA alpha (shown; the scaling costs nothing)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--lora-dropout", o.dropout,
                  what + "'s LoRA dropout (default 0.05; 0 saves each adapter's mask and second fp32 copy of its input)")
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_flag("--autocast", o.autocast,
                what + " runs under torch.autocast(bfloat16), as the HF Trainer and TRL do with bf16=True: peft's fp32 "
                       "adapters then multiply in bf16; with --full and --dtype float32, fp32 master weights under bf16 "
                       "compute (default: no autocast, the weights loaded in bf16)");
  cmd->add_flag("--no-checkpointing", o.no_checkpointing,
                what + " runs without gradient checkpointing: every layer keeps its activations for the backward "
                       "instead of recomputing them, less work and more memory (default: checkpointing, as every "
                       "transformers + peft record ran; docs/method.md, \"Checkpointing off\")");
  auto* full = cmd->add_flag("--full", o.full,
                             what + " is a full fine-tune: no adapters, every parameter trains in the weights' dtype "
                                    "(weight-gradient GEMMs, AdamW over every parameter; docs/method.md, \"Full "
                                    "fine-tuning\")");
  cmd->add_option("--quantize-base", o.quantize_base,
                  what + "'s base weights as QLoRA keeps them: nf4 or nf4-double-quant (bitsandbytes' 4-bit NF4, "
                         "transformers' BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\"[, "
                         "bnb_4bit_use_double_quant=True])): 4-bit weights in memory, each call of a 4-bit layer "
                         "dequantizing it to bf16 (docs/method.md, \"QLoRA\"); none (default) for the weights' dtype")
      ->check(CLI::IsMember(model::base_quant_names()));
  cmd->add_option("--adapter-dtype", o.adapter_dtype,
                  what + "'s adapter parameters: float32 (default: peft's get_peft_model casts them up, then casts each "
                         "input to fp32 and the result back) or bfloat16 (autocast_adapter_dtype=False, or the model "
                         "cast to bf16 after get_peft_model, as pure-bf16 custom loops do: no fp32 casts or copies, bf16 "
                         "adapter GEMMs, half the adapters' AdamW memory; docs/method.md, \"bf16 adapters\")")
      ->check(CLI::IsMember(model::adapter_dtype_names()));
  for (const char* lora_only : {"--lora-targets", "--lora-rank", "--lora-dropout", "--quantize-base", "--adapter-dtype"})
    full->excludes(lora_only);
}

predict::PredictorAsk predictor_ask(const std::string& coefficients, const std::string& model, const TransferOptions& o) {
  predict::PredictorAsk ask;
  ask.coefficients = coefficients;
  ask.coefficients_where = "--coefficients";
  ask.model = model;
  ask.gpu = o.gpu;
  ask.tier = o.tier;
  ask.stack = o.stack;
  ask.dtype = o.dtype;
  ask.attention_kernels = o.attention_kernels;
  ask.transfer = o.transfer;
  return ask;
}

predict::PredictorAsk records_ask(const std::vector<calibrate::Record>& records, const std::string& coefficients,
                                  const std::string& model, const TransferOptions& o) {
  predict::PredictorAsk ask = predictor_ask(coefficients, model, o);
  const calibrate::Record& first = records.front();
  if (!coefficients.empty()) return ask;
  if (ask.model.empty()) ask.model = first.model;
  if (ask.gpu.empty()) ask.gpu = first.gpu;
  // The weights' dtype the records were measured in (the harness and tools/device/hf_campaign.py write it).
  if (const auto d = first.extra.find("dtype"); ask.dtype.empty() && d != first.extra.end() && d->is_string())
    ask.dtype = d->get<std::string>();
  if (ask.tier.empty()) {
    ask.tier = first.tier;
    ask.tier_from_records = true;
  }
  set_lora_of(ask, first);
  return ask;
}

void set_lora_of(predict::PredictorAsk& ask, const calibrate::Record& r) {
  ask.checkpointing = calibrate::record_checkpointing(r);
  if (!r.lora) return;
  ask.lora_rank = r.lora->rank;
  ask.lora_targets = r.lora->targets;
  ask.lora_dropout = r.lora->dropout;
  ask.lora_autocast = r.lora->autocast;
  ask.full = r.lora->full;
  ask.adapter_dtype = calibrate::record_adapter_dtype(r);
  ask.lora_where = r.lora->at.empty() ? r.where() + ": lora.targets" : r.lora->at + ": lora.targets";
}

predict::PredictorAsk scenario_ask(const io::Scenario& s, bool from_flag, const TransferOptions& o) {
  predict::PredictorAsk ask = predictor_ask(s.coefficients, s.model, o);
  if (ask.gpu.empty()) ask.gpu = s.gpu_name;
  ask.coefficients_where = s.coefficients_where;
  ask.named_by_scenario = !from_flag && !s.coefficients.empty();
  ask.lora_targets = s.lora.targets;
  ask.lora_rank = s.lora.rank;
  ask.lora_dropout = s.lora.dropout;
  ask.lora_autocast = s.lora.autocast;
  ask.full = s.lora.full;
  ask.checkpointing = s.lora.checkpointing;
  ask.base_quant = s.lora.base_quant;
  ask.adapter_dtype = s.lora.adapter_dtype;
  if (ask.dtype.empty()) ask.dtype = s.dtype;
  if (!s.lora.targets_where.empty()) ask.lora_where = s.lora.targets_where;
  return ask;
}

void set_lora(predict::PredictorAsk& ask, const LoraOptions& o) {
  ask.lora_targets = o.targets;
  ask.lora_rank = o.rank;
  if (o.dropout >= 0) ask.lora_dropout = o.dropout;
  ask.lora_autocast = o.autocast;
  ask.full = o.full;
  ask.checkpointing = !o.no_checkpointing;
  if (!o.quantize_base.empty()) ask.base_quant = model::parse_base_quant(o.quantize_base, "--quantize-base");
  if (!o.adapter_dtype.empty()) ask.adapter_dtype = model::parse_adapter_dtype(o.adapter_dtype, "--adapter-dtype");
  ask.lora_where = "--lora-targets";
}

nlohmann::json provenance_json(const model::Transfer& t) {
  nlohmann::json p = nlohmann::json::array();
  for (auto v : t.provenance) p.push_back(model::provenance_name(v));
  return p;
}

namespace {

// "path:N" for the line of a top-level `key:` of a coefficient file ("path:1" when not found).
std::string key_where(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.rfind(key + ":", 0) == 0) return path + ":" + std::to_string(n);
  return path + ":1";
}

}  // namespace

void require_records_on_gpu(const std::vector<calibrate::Record>& records, const model::Transfer& t,
                            const std::string& coefficients_path, const std::string& command) {
  for (const auto& r : records) {
    model::GpuInfo gpu;
    try {
      gpu = model::gpu_info(r.gpu);
    } catch (const InputError& e) {
      throw InputError(r.where() + ": " + e.what());  // an unknown GPU is refused at its record
    }
    if (gpu.name != t.gpu.name)
      throw InputError(r.where() + ": gpu '" + r.gpu + "'. Violated constraint: " + command + " compares records of " +
                       "the GPU the predictions are for ('" + t.gpu.name + "', " + key_where(coefficients_path, "gpu") +
                       "); this record is another GPU, not " +
                       command + " (ask for it with --gpu \"" + gpu.name + "\" --transfer)");
  }
}

void print_predictor(std::ostream& out, const predict::Predictor& p) {
  out << p.first_line << "\n";
  for (const auto& n : p.notes) out << "note: " << n << "\n";
}

}  // namespace stepcast::cli
