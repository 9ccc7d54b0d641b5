#include "predict/predictor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/gpus.hpp"
#include "model/launches.hpp"
#include "model/tiers.hpp"

#ifndef STEPCAST_SCENARIOS_DIR
#define STEPCAST_SCENARIOS_DIR "scenarios"
#endif

namespace stepcast::predict {
namespace {

namespace fs = std::filesystem;

fs::path scenarios_dir() {
  const char* env = std::getenv("STEPCAST_SCENARIOS_DIR");
  return env != nullptr && *env != 0 ? fs::path(env) : fs::path(STEPCAST_SCENARIOS_DIR);
}

// A path as short as it can be said from here (relative to the working directory when below it).
std::string display_path(const std::string& path) {
  std::error_code ec;
  const fs::path rel = fs::relative(path, fs::current_path(ec), ec);
  if (ec || rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

// "path:N" for the line of a top-level `key:` of a coefficient file ("path:1" when not found).
std::string key_where(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.rfind(key + ":", 0) == 0) return path + ":" + std::to_string(n);
  return path + ":1";
}

std::string canonical_tier(const std::string& label) { return model::tier_label(model::tier_from_label(label)); }

// The first GPU of scenarios/gpus.yaml that declares a default predictor.
const model::GpuSpec& first_gpu_with_default() {
  for (const model::GpuSpec& g : model::known_gpus())
    if (!g.default_coefficients.empty()) return g;
  throw InputError("scenarios/gpus.yaml declares no default_coefficients for any GPU. Violated constraint: at least "
                   "one GPU with a default predictor, or --coefficients C.yaml");
}

// A model and its module table, expanded once.
struct Built {
  model::ModelShape shape;
  model::ModuleTable modules;
};

Built build(const std::string& name_or_path, const std::string& dtype = "") {
  Built b{io::load_model(name_or_path), {}};
  if (!dtype.empty()) {
    model::dtype_bytes(dtype);  // an unknown name is refused here, naming the ones known
    b.shape.dtype = dtype;
  }
  b.modules = model::expand_modules(b.shape);
  return b;
}

// The coefficients' own model, when a config names it (a file for a model without one carries no launch count).
std::optional<Built> build_source(const std::string& coefficients_model) {
  try {
    return build(coefficients_model);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// The same model under another name (a config path for a shipped model): same weights, same GEMM work.
bool same_model(const Built& asked, const std::optional<Built>& source) {
  if (!source) return false;
  auto weights = [](const Built& b) { return model::count_params(b.shape, b.modules).total * model::dtype_bytes(b.shape.dtype); };
  return weights(asked) == weights(*source) &&
         model::gemm_flops_per_token(asked.shape, asked.modules).total() ==
             model::gemm_flops_per_token(source->shape, source->modules).total();
}

// Kernel launches of one step with every expert hit (model/launches.hpp).
double launches_of(const model::ModelShape& shape, const model::ModuleTable& modules, const std::string& tier,
                   const model::LoraChoice& lora) {
  return model::LaunchModel(shape, modules, model::tier_from_label(tier), model::plan_lora(modules, lora), model::adapter_path(lora),
                            lora.full, lora.checkpointing, lora.base_quant)
      .per_step_all_experts();
}

std::string number(double v, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << std::fixed << v;
  return s.str();
}

// "calibrated for M on G, tier T" or what was transferred.
std::string why(const model::Transfer& t) {
  if (!t.transferred())
    return "calibrated for " + (t.coefficients.model == model::kPooledModel ? "the pooled models" : t.coefficients.model) +
           " on " + t.gpu.name + ", tier " + t.coefficients.tier;
  std::string s = t.summary();
  const std::string prefix = "transferred: ";
  if (s.rfind(prefix, 0) == 0) s = s.substr(prefix.size());
  return "transferred " + s;
}

// What trains, when it is not the LoRA the rates were fitted on: a full fine-tune's weight gradients and update.
std::string training_text(const Predictor& p) {
  const model::TierRules tier = model::tier_from_label(p.transfer.coefficients.tier);
  std::string s;
  if (p.lora.full)
    s += "; full fine-tuning: every weight's gradient GEMM (x" + number(model::weight_gradient_factor(tier, p.lora), 3) +
         " the frozen GEMMs) and AdamW over every parameter (docs/method.md, \"Full fine-tuning\")";
  if (model::drops_recompute(tier, p.lora.checkpointing))
    s += "; no gradient checkpointing: the rates' second forward taken out, every layer's activations kept "
         "(docs/method.md, \"Checkpointing off\")";
  return s;
}

std::string host_text(const Predictor& p) {
  if (p.stack == nullptr) return training_text(p);
  const model::Coefficients& c = p.transfer.coefficients;
  return "; host side of " + std::string(p.stack->name) + ": " + number(p.stack->host_s_per_klaunch * 1000, 1) +
         " us a launch x " + number(c.launches_per_step, 0) + " launches of " + p.shape.name + ", p = " +
         number(c.overlap_exponent, 0) + " (model/stacks.hpp)" + training_text(p);
}

// Where the question's stack and tier come from: a tier label of a stack's records names that stack and asks the
// default's tier; a tier-grammar label from records was measured by the harness.
void resolve_stack(const PredictorAsk& ask, std::string& tier, const model::StackSpec*& stack, bool default_path) {
  if (!ask.stack.empty()) stack = &model::stack_named(ask.stack);
  if (!default_path) return;
  if (ask.tier_from_records && !tier.empty()) {
    const model::StackSpec& measured = model::stack_of_records(tier);
    if (!measured.record_tier_prefix.empty()) tier.clear();  // "hf-peft/...": a stack, not a tier question
    if (stack == nullptr) stack = &measured;
  }
  if (stack == nullptr) stack = &model::default_stack();
}

// What one call assembles: the coefficients, where they are, the question.
struct Question {
  model::Coefficients c;
  std::string path;
  std::string gpu;
  std::string tier;
  const model::StackSpec* stack = nullptr;
  bool model_transfer_allowed = false;  // the default travels to any model; a fitted file needs --transfer
};

model::LoraChoice lora_of(const PredictorAsk& ask, const model::Coefficients& c, const Built& b) {
  model::LoraChoice lora{ask.lora_rank > 0 ? ask.lora_rank : c.lora_rank, ask.lora_targets};
  if (ask.lora_dropout >= 0) lora.dropout = ask.lora_dropout;
  lora.autocast = ask.lora_autocast;
  lora.full = ask.full;
  lora.checkpointing = ask.checkpointing;
  lora.base_quant = ask.base_quant;
  lora.adapter_dtype = ask.adapter_dtype;
  if (lora.full) return lora;  // no adapters: the targets are not asked
  std::vector<std::string> problems;
  for (const auto& p : model::lora_target_problems(b.modules, lora.targets, b.shape.name))
    problems.push_back(ask.lora_where + ": " + p);
  if (!problems.empty()) throw InputError(problems);
  return lora;
}

// The refusal of transfer_coefficients, located at the coefficient file's key that differs (and the config asked).
[[noreturn]] void locate(const InputError& e, const std::string& path, const model::Coefficients& c,
                         const model::TransferAsk& tk, const PredictorAsk& ask) {
  const std::string key = !tk.model.empty() ? "model"
                          : (!tk.gpu.empty() && model::gpu_info(tk.gpu).name != model::gpu_info(c.gpu).name) ? "gpu"
                                                                                                             : "tier";
  std::string where = key_where(path, key);
  std::error_code ec;
  if (key == "model" && fs::is_regular_file(ask.model, ec)) where = ask.model + ":1: (the config) and " + where;
  throw InputError(where + ": " + e.what());
}

// A model outside a pooled fit's models is a family the rates were not fitted on: the provenance says so and the
// interval takes the pooled fit's measured error on families held out (model/intervals.hpp, kModelTransfer).
void note_pooled_model(model::Transfer& t, const std::string& name) {
  const auto& models = t.coefficients.models;
  if (std::find(models.begin(), models.end(), name) != models.end()) return;
  std::string fitted;
  for (const auto& m : models) fitted += (fitted.empty() ? "" : ", ") + m;
  t.changes.push_back("model '" + name + "', not among the " + std::to_string(models.size()) +
                      " models the pooled rates were fitted on (" + fitted + ")");
  if (t.provenance == std::vector<model::Provenance>{model::Provenance::calibrated}) t.provenance.clear();
  t.provenance.insert(t.provenance.begin(), model::Provenance::transferred_model);  // model, GPU, tier: transfer's order
  t.add_error(model::held_out_error(model::kModelTransfer), model::held_out_error(model::kModelTransferRun));
  // The peak travels too, less tightly: Mistral-7B's run peak was 6 % above the default's (docs/method.md).
  const model::PeakInterval& travel = model::transferred_model_peak_interval();
  model::PeakInterval& own = t.coefficients.peak_interval ? *t.coefficients.peak_interval : t.coefficients.peak_interval.emplace(travel);
  own.low = std::min(own.low, travel.low);
  own.high = std::max(own.high, travel.high);
  own.source = travel.source;
}

// `asked`: the question's model, built by the caller (once).
Predictor assemble(const PredictorAsk& ask, const Question& q, Built asked, Source source) {
  Predictor p;
  p.source = source;
  p.coefficients_path = q.path;
  p.stack = q.stack;
  p.lora = lora_of(ask, q.c, asked);
  std::optional<Built> from;
  // A pooled file's rates are per unit of work for every model (calibrate --pooled): nothing to carry to a model.
  const bool pooled = q.c.model == model::kPooledModel;
  const bool named_other = !pooled && !ask.model.empty() && asked.shape.name != q.c.model;
  if (named_other) from = build_source(q.c.model);
  const bool model_asked = named_other && !same_model(asked, from);
  model::TransferAsk tk{model_asked ? asked.shape.name : "", q.gpu, q.tier};
  tk.attention_kernels = ask.attention_kernels;
  const std::string tier = q.tier.empty() ? q.c.tier : q.tier;
  // transformers' flash_attention_2 runs the flash-attn package on every GPU: its rates are FlashAttention 2's.
  if (tk.attention_kernels.empty() && model::tier_from_label(tier).flash_attn) tk.attention_kernels = "flash2";
  if (model_asked && from) {
    tk.source_launches = launches_of(from->shape, from->modules, q.c.tier, {q.c.lora_rank, {}});
    tk.target_launches = launches_of(asked.shape, asked.modules, tier, p.lora);
  }
  // Another GPU always needs --transfer; another model or tier only for a fitted file. The default travels to
  // any model and any tier (a harness tier's layers re-planned at its per-category rates), saying so with the
  // measured interval of that kind (model/intervals.hpp).
  const model::TransferAsk gpu_only{"", q.gpu, ""};
  try {
    if (q.model_transfer_allowed) model::transfer_coefficients(q.c, gpu_only, ask.transfer);
  } catch (const InputError& e) {
    locate(e, q.path, q.c, gpu_only, ask);
  }
  try {
    p.transfer = model::transfer_coefficients(q.c, tk, ask.transfer || q.model_transfer_allowed);
  } catch (const InputError& e) {
    locate(e, q.path, q.c, tk, ask);
  }
  if (pooled) note_pooled_model(p.transfer, asked.shape.name);
  p.fitted = q.c;
  p.asked = tk;
  if (p.stack != nullptr) {
    p.transfer.coefficients =
        model::with_stack(p.transfer.coefficients, *p.stack, launches_of(asked.shape, asked.modules, tier, p.lora));
    p.transfer.stack_error = p.stack->error;
  }
  p.shape = std::move(asked.shape);
  p.modules = std::move(asked.modules);
  return p;
}

Built asked_model(const PredictorAsk& ask, const model::Coefficients& c) {
  if (ask.model.empty() && c.model == model::kPooledModel)
    throw InputError((c.model_at.empty() ? std::string() : c.model_at + ": ") +
                     "no model asked, and the coefficients are pooled over " + std::to_string(c.models.size()) +
                     " models (calibrate --pooled). Violated constraint: a model: in the scenario, or --model NAME|config.json");
  return build(ask.model.empty() ? c.model : ask.model, ask.dtype);
}

// `asked`: the question's model when the caller built it already (a scenario's file set aside).
Predictor default_predictor(const PredictorAsk& ask, std::vector<std::string> notes, std::optional<Built> asked) {
  Question q;
  q.tier = ask.tier;
  resolve_stack(ask, q.tier, q.stack, true);
  const model::GpuInfo gpu = model::gpu_info(ask.gpu.empty() ? first_gpu_with_default().name : ask.gpu);
  const std::string answering = default_predictor_gpu(gpu.name);
  if (answering != gpu.name && !ask.transfer)
    throw InputError("GPU '" + gpu.name + "' has no default predictor (scenarios/gpus.yaml default_coefficients; '" +
                     answering + "' has one). Violated constraint: --coefficients C.yaml fitted on it, or --transfer "
                     "to carry '" + answering + "''s default there");
  q.path = default_coefficients_path(answering);
  q.c = io::load_coefficients(q.path);
  q.gpu = gpu.name;
  q.model_transfer_allowed = true;
  Predictor p = assemble(ask, q, asked ? std::move(*asked) : asked_model(ask, q.c), Source::default_predictor);
  p.first_line = "default per-category predictor for " + p.transfer.gpu.name + " (" + display_path(q.path) + "): " +
                 why(p.transfer) + host_text(p);
  p.notes = std::move(notes);
  return p;
}

// Why a scenario's fitted file does not answer this question, or empty when it matches.
std::string mismatch(const PredictorAsk& ask, const model::Coefficients& c, const Built& asked) {
  std::vector<std::string> what;
  if (!ask.model.empty() && asked.shape.name != c.model && !same_model(asked, build_source(c.model)))
    what.push_back("model '" + asked.shape.name + "'");
  if (!ask.gpu.empty() && model::gpu_info(ask.gpu).name != model::gpu_info(c.gpu).name) what.push_back("GPU '" + ask.gpu + "'");
  if (!ask.tier.empty() && canonical_tier(ask.tier) != canonical_tier(c.tier)) what.push_back("tier '" + ask.tier + "'");
  std::string s;
  for (const auto& w : what) s += (s.empty() ? "" : ", ") + w;
  return s;
}

}  // namespace

std::string default_coefficients_path(const std::string& gpu) {
  const model::GpuSpec* spec = model::find_gpu(model::known_gpus(), model::gpu_info(gpu).name);
  if (spec == nullptr || spec->default_coefficients.empty()) return "";
  return (scenarios_dir() / spec->default_coefficients).lexically_normal().string();
}

std::string default_predictor_gpu(const std::string& gpu) {
  return default_coefficients_path(gpu).empty() ? first_gpu_with_default().name : model::gpu_info(gpu).name;
}

namespace {

// What the choice prices from the stack's code with no or few measurements of it: said beside the answer, since
// its interval holds only the calibrated paths' errors.
std::vector<std::string> unmeasured_notes(const model::LoraChoice& lora) {
  std::vector<std::string> notes;
  if (!lora.full && lora.adapter_dtype == model::AdapterDtype::bfloat16)
    notes.push_back("bf16 adapters are priced from peft's code and checked on one H100 only (docs/method.md, \"bf16 "
                    "adapters\": the bf16 / fp32 step ratio within 1 % where the step is device-bound); the interval "
                    "holds the fp32 path's errors");
  if (lora.base_quant != model::BaseQuant::none)
    notes.push_back("a 4-bit base is priced from bitsandbytes' and peft's code and not measured here (docs/method.md, "
                    "\"QLoRA\"); the interval holds the bf16 path's errors");
  return notes;
}

Predictor choose(const PredictorAsk& ask) {
  if (ask.coefficients.empty()) return default_predictor(ask, {}, std::nullopt);
  Question q;
  q.c = io::load_coefficients(ask.coefficients);
  q.path = ask.coefficients;
  Built asked = asked_model(ask, q.c);
  if (ask.named_by_scenario) {
    const std::string other = mismatch(ask, q.c, asked);
    if (!other.empty())
      return default_predictor(ask, {ask.coefficients_where + ": " + display_path(q.path) + " is fitted for model '" +
                                     q.c.model + "' on '" + q.c.gpu + "', tier '" + q.c.tier + "', not " + other +
                                     ": answered by the default predictor instead (a fitted file answers only where "
                                     "its model, GPU and tier match; --coefficients F --transfer carries it)"},
                               std::move(asked));
  }
  q.gpu = ask.gpu;
  q.tier = ask.tier;
  resolve_stack(ask, q.tier, q.stack, false);
  Predictor p = assemble(ask, q, std::move(asked), Source::fitted_file);
  p.first_line = "fitted file " + display_path(q.path) +
                 (p.transfer.transferred() ? " (--transfer): " : " (model, GPU and tier match): ") + why(p.transfer) +
                 host_text(p);
  return p;
}

}  // namespace

Predictor choose_predictor(const PredictorAsk& ask) {
  Predictor p = choose(ask);
  for (auto& n : unmeasured_notes(p.lora)) p.notes.push_back(std::move(n));
  return p;
}

std::unique_ptr<model::StepModel> Predictor::step_model() const { return step_model(lora); }

std::unique_ptr<model::StepModel> Predictor::step_model(const model::LoraChoice& with) const {
  if (with.rank == lora.rank && with.targets == lora.targets && with.full == lora.full &&
      with.checkpointing == lora.checkpointing && with.autocast == lora.autocast &&
      with.adapter_dtype == lora.adapter_dtype && with.base_quant == lora.base_quant)
    return std::make_unique<model::StepModel>(shape, modules, transfer.coefficients, transfer.gpu, with);
  // Another plan launches another count: the model transfer's fixed cost and the stack's host side follow it.
  const double launches = launches_of(shape, modules, transfer.coefficients.tier, with);
  model::TransferAsk again = asked;
  if (again.target_launches > 0) again.target_launches = launches;
  model::Coefficients c = model::transfer_coefficients(fitted, again, true).coefficients;
  if (stack != nullptr) c = model::with_stack(c, *stack, launches);
  return std::make_unique<model::StepModel>(shape, modules, c, transfer.gpu, with);
}

double Predictor::wall_clock_half_width(bool padded_batches, double host_bound_share) const {
  // The predictor's own measured error: a transfer's on whole runs (the whole error of such predictions, the
  // source's fit inside it) or the calibrated file's held-out one.
  const model::HeldOut& h = transfer.coefficients.held_out;
  constexpr double kZ90 = 1.645;  // a file without held-out errors: its residual RMS as a normal error
  const double own = transfer.transferred() ? transfer.run_half_width.at(padded_batches)
                     : h.known              ? h.half_width.at(padded_batches)
                                            : kZ90 * transfer.coefficients.step_rms_rel;
  const model::StackError& s = transfer.stack_error;
  if (!s.known) return own;
  // The host-bound micro-batches carry the machine's host speed, which no calibration on other machines removes
  // (docs/host.md: 16.5-25.5 us a launch between H200 machines), transferred or not (docs/method.md, "Intervals").
  const double share = std::clamp(host_bound_share, 0.0, 1.0);
  return share * std::max(own, s.host_bound) + (1 - share) * std::max(own, s.device_bound);
}

}  // namespace stepcast::predict
