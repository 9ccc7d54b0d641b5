// stepcast describe: the shape of a model as the cost model sees it.
#include <nlohmann/json.hpp>

#include <bit>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/app.hpp"
#include "report/csv.hpp"
#include "cli/figures.hpp"
#include "model/limits.hpp"
#include "report/format.hpp"
#include "report/json_output.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/features.hpp"
#include "model/gpus.hpp"
#include "model/memory.hpp"
#include "model/modules.hpp"
#include "model/tiers.hpp"
#include "planner/batching.hpp"

namespace stepcast::cli {

using io::load_model;
using report::billions;
using report::fixed;
using report::with_commas;
namespace {

struct DescribeOptions {
  std::string model;
  std::vector<std::string> lora_targets;  // empty: the shape's own (model::default_lora_targets(shape))
  int64_t lora_rank = 16;
  bool full = false;  // full fine-tuning: the memory estimate trains every parameter
  int64_t width = 4096;
  bool width_given = false;
  // One micro-batch whose attention path to show (docs/families.md): rows right-padded to --width (--padded-rows),
  // or rows as wide as the longest (--rows), or one packed row of documents (--documents).
  std::vector<int64_t> rows;
  std::vector<int64_t> padded_rows;
  std::vector<int32_t> documents;
  std::string pack_attention = "block-mask";
  std::string tier = "hf-peft/sdpa-grouped_mm";
  std::string gpu = "NVIDIA H200";
  Format format = Format::text;
};

bool shows_path(const DescribeOptions& o) { return !o.rows.empty() || !o.padded_rows.empty() || !o.documents.empty(); }

// The micro-batch the flags describe; every problem with them at once (exit 2).
model::MicroBatch path_batch(DescribeOptions& o) {
  std::vector<std::string> problems;
  const int given = (o.rows.empty() ? 0 : 1) + (o.padded_rows.empty() ? 0 : 1) + (o.documents.empty() ? 0 : 1);
  if (given > 1) problems.push_back("--rows, --padded-rows, --documents: " + std::to_string(given) +
                                    " given. Violated constraint: one micro-batch, one of them");
  model::MicroBatch b;
  if (!o.documents.empty()) {
    int64_t tokens = 0;
    for (int32_t d : o.documents) tokens += d;
    b.rows = {tokens};
    b.packed = true;
    b.documents = static_cast<int64_t>(o.documents.size());
    b.document_lengths = o.documents;
    for (int32_t d : o.documents) b.sum_doc_len_sq += static_cast<double>(d) * d;
    const auto attention = planner::parse_pack_attention(o.pack_attention);
    if (!attention) {
      std::string names;
      for (const auto& n : planner::pack_attention_names()) names += (names.empty() ? "" : ", ") + n;
      problems.push_back("--pack-attention '" + o.pack_attention + "'. Violated constraint: one of " + names);
    } else {
      b.attention = *attention;
    }
  } else {
    b.rows = o.rows.empty() ? o.padded_rows : o.rows;
  }
  int64_t longest = 0;
  for (int64_t r : b.rows) longest = std::max(longest, r);
  if (!o.padded_rows.empty() && !o.width_given)
    problems.push_back("--padded-rows: no --width. Violated constraint: the padded width is given (--rows pads to the "
                       "longest row)");
  b.width = o.width_given ? o.width : longest;
  if (longest > limits::kMaxWidth)
    problems.push_back("rows: " + std::to_string(longest) + " tokens. Violated constraint: <= " +
                       std::to_string(limits::kMaxWidth));
  if (b.width < longest)
    problems.push_back("--width " + std::to_string(b.width) + ". Violated constraint: >= the longest row (" +
                       std::to_string(longest) + ")");
  if (b.num_rows() > limits::kMaxRows)
    problems.push_back("rows: " + std::to_string(b.num_rows()) + ". Violated constraint: <= " +
                       std::to_string(limits::kMaxRows));
  if (!problems.empty()) throw InputError(problems);
  o.width = b.width;
  return b;
}

nlohmann::json path_json(const model::ModelShape& shape, const DescribeOptions& o, const model::MicroBatch& b) {
  const model::TierRules tier = model::parse_tier(o.tier);
  const model::GpuInfo gpu = model::gpu_info(o.gpu);
  const model::FeatureMaker f(shape, tier, gpu, model::LoraChoice{o.lora_rank, o.lora_targets});
  nlohmann::json j;
  j["tier"] = model::tier_label(tier);
  j["gpu"] = gpu.name;
  j["sm"] = tier.kernel_sm > 0 ? tier.kernel_sm : gpu.sm;
  j["rows"] = b.rows;
  j["width"] = b.width;
  j["packed"] = b.packed;
  if (b.packed) {
    j["documents"] = o.documents;
    j["pack_attention"] = planner::pack_attention_name(b.attention);
  }
  j["real_tokens"] = b.real_tokens();
  j["padded_tokens"] = b.padded_tokens() - b.real_tokens();
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& p : model::attention_paths(f, b))
    layers.push_back({{"type", p.type},
                      {"count", p.layers},
                      {"mask", p.mask},
                      {"explicit_mask", p.plan.explicit_mask},
                      {"kv", p.kv},
                      {"backend", p.plan.eager ? std::string("eager") : model::backend_name(p.plan.backend)},
                      {"varlen", p.plan.varlen},
                      {"why", p.why},
                      {"work", p.work},
                      {"pairs_per_layer", p.pairs},
                      {"forward_tflop", p.forward_tflop},
                      {"term", p.term},
                      {"mask_gb_per_forward", p.mask_gb}});
  j["layers"] = layers;
  j["first_seen_graphs"] = std::popcount(f.cudnn_graphs(b));  // what a new shape builds (docs/host.md)
  nlohmann::json shares = nlohmann::json::array();
  for (const auto& s : model::padded_shares(f, b))
    shares.push_back({{"term", s.term}, {"work", s.work}, {"padded", s.padded},
                      {"padded_share", s.work > 0 ? s.padded / s.work : 0.0}});
  j["padded_share"] = shares;
  return j;
}

void print_path(const nlohmann::json& p, std::ostream& out) {
  out << "  attention path  tier " << p["tier"].get<std::string>() << " on " << p["gpu"].get<std::string>() << " (sm"
      << p["sm"] << "), " << p["rows"].size() << (p["packed"].get<bool>() ? " packed row" : " rows") << " x "
      << p["width"] << ", " << p["padded_tokens"] << " padded tokens of "
      << p["padded_tokens"].get<int64_t>() + p["real_tokens"].get<int64_t>() << "\n";
  for (const auto& l : p["layers"]) {
    out << "    " << l["type"].get<std::string>() << " x" << l["count"] << ": mask " << l["mask"].get<std::string>()
        << "; K/V " << l["kv"].get<std::string>() << "; backend " << l["backend"].get<std::string>() << "\n"
        << "      why: " << l["why"].get<std::string>() << "\n"
        << "      work: " << l["work"].get<std::string>() << ", " << fixed(l["pairs_per_layer"].get<double>() / 1e6, 1)
        << " M pairs a layer, " << fixed(l["forward_tflop"].get<double>(), 3) << " TFLOP forward, priced by "
        << l["term"].get<std::string>();
    if (l["mask_gb_per_forward"].get<double>() > 0)
      out << "; masks " << fixed(l["mask_gb_per_forward"].get<double>(), 3) << " GB a forward";
    out << "\n";
  }
  const int graphs = p["first_seen_graphs"].get<int>();
  out << "  a new rows x width builds " << graphs << " cuDNN attention graph" << (graphs == 1 ? "" : "s")
      << " (the first-seen cost is per graph, docs/host.md)\n";
  out << "  padded positions' share of the step's work (GEMMs, norms, LM head and logits run on every position):\n";
  for (const auto& s : p["padded_share"])
    out << "    " << s["term"].get<std::string>() << ": " << fixed(s["padded"].get<double>(), 3) << " of "
        << fixed(s["work"].get<double>(), 3) << " (" << fixed(100 * s["padded_share"].get<double>(), 1) << " %)\n";
}

void check_targets(const model::ModelShape& shape, const model::LoraPlan& plan) {
  if (plan.unmatched.empty()) return;
  std::string valid;
  for (const auto& n : model::lora_able_names(shape)) valid += (valid.empty() ? "" : ", ") + n;
  std::vector<std::string> problems;
  for (const auto& t : plan.unmatched)
    problems.push_back("--lora-targets: '" + t + "' names no nn.Linear module of " + shape.name +
                       ". Violated constraint: one of " + valid);
  throw InputError(problems);
}

nlohmann::json describe_json(const model::ModelShape& shape, const DescribeOptions& o) {
  const auto params = model::count_params(shape);
  const auto lora = model::plan_lora(shape, o.lora_targets, o.lora_rank);
  const auto flops = model::gemm_flops_per_token(shape);
  nlohmann::json j;
  j["model"] = shape.name;
  j["model_type"] = shape.model_type;
  j["family"] = shape.family.name;
  j["total_params"] = params.total;
  j["active_params"] = params.active_per_token;
  j["embedding_params"] = params.embedding;
  j["trainable_params"] = lora.params;
  j["parameter_tensors"] = params.tensors;
  j["quantization"] = shape.quantization.empty() ? nlohmann::json(nullptr) : nlohmann::json(shape.quantization);
  j["state_dict_entries"] = params.state_dict_entries;
  j["checkpoint_elements"] = params.total + params.buffer_elements;
  j["mtp_params_not_built"] = params.mtp_params;
  j["head"] = shape.head == model::Head::lm_head ? "lm_head" : shape.head == model::Head::none ? "none" : "classifier";
  j["params_by_component"] = params.by_component;
  j["lora_rank"] = lora.rank;
  j["lora_targets"] = lora.targets;
  j["lora_modules_by_target"] = lora.modules_by_target;
  j["lora_modules"] = lora.modules;
  j["lora_params"] = lora.params;
  j["weight_bytes"] = {{"bfloat16", model::weight_bytes(shape, "bfloat16")},
                       {"float32", model::weight_bytes(shape, "float32")},
                       {"float8_e4m3fn", model::weight_bytes(shape, "float8_e4m3fn")}};
  j["gemm_flops_per_token"] = {{"attention_proj", flops.attention_proj}, {"latent_proj", flops.latent_proj},
                               {"dense_mlp", flops.dense_mlp},           {"experts", flops.experts},
                               {"shared_experts", flops.shared_experts}, {"router", flops.router},
                               {"lm_head", flops.lm_head},               {"total", flops.total()}};
  j["hidden_size"] = shape.hidden_size;
  j["vocab_size"] = shape.vocab_size;
  j["tie_word_embeddings"] = shape.tie_word_embeddings;
  j["final_logit_softcap"] = shape.final_logit_softcap;
  j["moe"] = {{"num_experts", shape.moe.num_experts},
              {"top_k", shape.moe.top_k},
              {"intermediate_size", shape.moe.intermediate_size},
              {"shared_intermediate_size", shape.moe.shared_intermediate_size},
              {"dense_layers", shape.moe.dense_layers}};
  j["dense_intermediate_size"] = shape.intermediate_size;
  j["attention_width"] = o.width;
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& g : model::layers_by_type(shape)) {
    const double w = static_cast<double>(o.width);
    layers.push_back({{"type", g.type},
                      {"count", g.indices.size()},
                      {"indices", g.indices},
                      {"num_heads", g.spec.num_heads},
                      {"head_dim", g.spec.head_dim},
                      {"num_kv_heads", g.spec.num_kv_heads},
                      {"window", g.spec.window},
                      {"has_v_proj", g.spec.has_v_proj},
                      {"v_head_dim", g.spec.value_dim()},
                      {"kv_lora_rank", g.spec.kv_lora_rank},
                      {"q_lora_rank", g.spec.q_lora_rank},
                      {"chunk", g.spec.chunk},
                      {"eager", g.spec.eager},
                      {"sinks", shape.family.attention_sinks},
                      {"partial_rotary_factor", g.spec.partial_rotary_factor},
                      {"score_flops_per_token_window_honoured",
                       model::attention_score_flops(g.spec, o.width, model::ScoreWork::causal_window) / w},
                      {"score_flops_per_token_full_square",
                       model::attention_score_flops(g.spec, o.width, model::ScoreWork::full_square) / w}});
  }
  j["layers"] = layers;
  // One row of `width` tokens, from the architecture (model/memory.hpp, docs/families.md).
  model::TrainingSetup setup;
  setup.lora_rank = o.full ? 0 : o.lora_rank;
  setup.lora_targets = o.lora_targets;
  setup.full = o.full;
  const model::MemoryTable memory = model::architecture_memory(shape, setup, 1, o.width);
  nlohmann::json items = nlohmann::json::object();
  for (const auto& item : memory.items) items[item.name] = item.bytes;
  j["architecture_memory"] = {{"rows", 1}, {"width", o.width}, {"full", o.full}, {"items_bytes", items},
                              {"total_gib", memory.total_gib()}};
  return j;
}

void print_text(const nlohmann::json& j, std::ostream& out) {
  out << j["model"].get<std::string>() << " (" << j["model_type"].get<std::string>() << ")\n";
  out << "  parameters   " << with_commas(j["total_params"]) << " (" << billions(j["total_params"])
      << "), active per token " << billions(j["active_params"]) << ", embedding " << billions(j["embedding_params"])
      << "\n";
  out << "  tensors      " << j["parameter_tensors"].get<int64_t>() << " parameter tensors, "
      << j["state_dict_entries"].get<int64_t>() << " state-dict entries\n";
  out << "  weights      " << fixed(j["weight_bytes"]["bfloat16"].get<double>() / (1024.0 * 1024 * 1024), 2)
      << " GiB in bfloat16, " << fixed(j["weight_bytes"]["float32"].get<double>() / (1024.0 * 1024 * 1024), 2)
      << " GiB in float32\n";
  if (!j["quantization"].is_null())
    out << "  quantized    " << j["quantization"].get<std::string>()
        << " (quantization_config): counted as unquantized tensors; predict and plan refuse it\n";
  out << "  by component";
  for (const auto& [name, n] : j["params_by_component"].items()) out << "  " << name << " " << billions(n);
  out << "\n  layers       " << j["layers"].size() << " types\n";
  for (const auto& l : j["layers"]) {
    out << "    " << l["type"].get<std::string>() << " x" << l["count"].get<int64_t>() << ": " << l["num_heads"]
        << " heads x " << l["head_dim"] << ", " << l["num_kv_heads"] << " KV heads"
        << (l["has_v_proj"].get<bool>() ? "" : ", K=V (no v_proj)")
        << (l["window"].get<int64_t>() > 0 ? ", window " + std::to_string(l["window"].get<int64_t>()) : "")
        << (l["chunk"].get<int64_t>() > 0 ? ", chunks of " + std::to_string(l["chunk"].get<int64_t>()) : "")
        << (l["sinks"].get<bool>() ? ", attention sinks" : "")
        << (l["eager"].get<bool>() ? ", eager attention (transformers' default: no SDPA; W x W scores materialised)" : "")
        << (l["kv_lora_rank"].get<int64_t>() > 0 ? ", MLA (kv rank " + std::to_string(l["kv_lora_rank"].get<int64_t>()) +
                                                       ", v " + std::to_string(l["v_head_dim"].get<int64_t>()) + ")"
                                                 : "")
        << "\n";
  }
  if (j["moe"]["num_experts"].get<int64_t>() > 0)
    out << "  experts      " << j["moe"]["num_experts"] << " experts, top-" << j["moe"]["top_k"] << ", width "
        << j["moe"]["intermediate_size"] << ", shared width " << j["moe"]["shared_intermediate_size"] << ", "
        << j["moe"]["dense_layers"].size() << " layers with a dense MLP of width " << j["dense_intermediate_size"]
        << " instead\n";
  if (j["mtp_params_not_built"].get<int64_t>() > 0)
    out << "  MTP          " << with_commas(j["mtp_params_not_built"])
        << " parameters in multi-token-prediction layers (in the checkpoint, not built by transformers)\n";
  out << "  head         " << j["head"].get<std::string>() << "\n";
  out << "  LoRA         rank " << j["lora_rank"] << " on " << j["lora_modules"] << " modules:";
  for (const auto& [name, n] : j["lora_modules_by_target"].items()) out << " " << name << " " << n;
  out << "\n               " << with_commas(j["lora_params"]) << " trainable parameters\n";
  out << "  GEMM FLOPs per token (forward): ";
  const auto& f = j["gemm_flops_per_token"];
  out << "attention proj " << fixed(f["attention_proj"].get<double>() / 1e9, 3) << " G, latent proj "
      << fixed(f["latent_proj"].get<double>() / 1e9, 3) << " G, dense MLP "
      << fixed(f["dense_mlp"].get<double>() / 1e9, 3) << " G, experts " << fixed(f["experts"].get<double>() / 1e9, 3)
      << " G, shared experts " << fixed(f["shared_experts"].get<double>() / 1e9, 3)
      << " G, router " << fixed(f["router"].get<double>() / 1e9, 3) << " G, LM head "
      << fixed(f["lm_head"].get<double>() / 1e9, 3) << " G\n";
  const auto& mem = j["architecture_memory"];
  out << "  peak memory  " << fixed(mem["total_gib"].get<double>(), 2) << " GiB for 1 x " << j["attention_width"]
      << (mem["full"].get<bool>() ? " (full fine-tuning)" : " (LoRA)") << ", from the architecture:";
  for (const auto& [name, bytes] : mem["items_bytes"].items())
    out << " " << name << " " << fixed(bytes.get<double>() / (1024.0 * 1024 * 1024), 2);
  out << "\n";
  out << "  attention-score FLOPs per token at width " << j["attention_width"] << " (forward, all layers of a type):\n";
  for (const auto& l : j["layers"]) {
    const double n = l["count"].get<double>();
    out << "    " << l["type"].get<std::string>() << ": "
        << fixed(n * l["score_flops_per_token_window_honoured"].get<double>() / 1e9, 3) << " G causal"
        << (l["window"].get<int64_t>() > 0 ? " within the window" : "") << ", "
        << fixed(n * l["score_flops_per_token_full_square"].get<double>() / 1e9, 3) << " G if W x W is computed\n";
  }
}

std::string kind_name(model::ModuleKind k) {
  switch (k) {
    case model::ModuleKind::embedding: return "embedding";
    case model::ModuleKind::lm_head: return "lm_head";
    case model::ModuleKind::linear: return "linear";
    case model::ModuleKind::experts: return "experts";
    case model::ModuleKind::router: return "router";
    case model::ModuleKind::norm: return "norm";
    case model::ModuleKind::scale: return "scale";
  }
  return "?";
}

// --format csv: one row per parameter tensor, and whether LoRA wraps it.
report::Table modules_table(const model::ModelShape& shape, const DescribeOptions& o) {
  const std::set<std::string> targets(o.lora_targets.begin(), o.lora_targets.end());
  report::Table t;
  t.columns = {"name", "short_name", "kind", "component", "layer", "in_features", "out_features", "copies", "params",
               "lora_target"};
  for (const auto& m : model::expand_modules(shape))
    t.rows.push_back({m.name, m.short_name, kind_name(m.kind), model::component_name(m.component), std::to_string(m.layer),
                      std::to_string(m.in_features), std::to_string(m.out_features), std::to_string(m.copies),
                      std::to_string(m.params()),
                      m.kind == model::ModuleKind::linear && targets.count(m.short_name) > 0 ? "true" : "false"});
  return t;
}

}  // namespace

void add_describe_command(CLI::App& app) {
  auto opts = std::make_shared<DescribeOptions>();
  CLI::App* cmd = app.add_subcommand("describe", "Show a model's shape: parameters, layers by type, LoRA targets, FLOPs");
  cmd->footer(
      "Examples:\n"
      "  stepcast describe --model gemma-4-26b-a4b\n"
      "  stepcast describe --model path/to/config.json --lora-targets q_proj,v_proj --lora-rank 8 --format json\n"
      "  stepcast describe --model gemma-4-26b-a4b --format csv   (one row per parameter tensor)\n"
      "  stepcast describe --model llama-3-8b --width 8192 --padded-rows 8192,5000   (mask, backend, work per layer type)\n"
      "  stepcast describe --model gemma-4-26b-a4b --rows 4096,4096 --format json\n"
      "  stepcast describe --model mistral-7b --width 8192 --documents 3000,2000,3000 --pack-attention block-mask\n"
      "The model is a Hugging Face config.json path or a name under scenarios/models/.");
  cmd->add_option("--model", opts->model, "config.json path, or a model name under scenarios/models/")->required();
  cmd->add_option("--lora-targets", opts->lora_targets,
                  "Comma-separated nn.Linear short names that LoRA wraps (default: every nn.Linear of the model "
                  "but the head, peft's all-linear; Llama: q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj)")
      ->delimiter(',');
  cmd->add_option("--lora-rank", opts->lora_rank, "LoRA rank r (each wrapped module gains r*(in+out) parameters)")
      ->check(CLI::Range(int64_t{1}, limits::kMaxLoraRank))
      ->default_str("16");
  cmd->add_flag("--full", opts->full, "Full fine-tuning in the memory estimate: gradients and AdamW states of every parameter");
  auto* width = cmd->add_option("--width", opts->width,
                                 "Width (tokens per row) at which to show attention-score FLOPs and peak memory; the "
                                 "padded width of --padded-rows (default 4096, or the longest of --rows)")
                    ->check(CLI::Range(int64_t{1}, limits::kMaxWidth));
  cmd->add_option("--rows", opts->rows, "One micro-batch, comma-separated real tokens per row, right-padded to the "
                                        "longest (or to --width): show each layer type's attention path")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, limits::kMaxWidth));
  cmd->add_option("--padded-rows", opts->padded_rows, "The same, right-padded to --width")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, limits::kMaxWidth));
  cmd->add_option("--documents", opts->documents, "One packed row of these documents' lengths (--width wide)")
      ->delimiter(',')
      ->check(CLI::Range(1, static_cast<int>(limits::kMaxWidth)));
  cmd->add_option("--pack-attention", opts->pack_attention,
                  "How the --documents meet in attention: block-mask (transformers' sdpa), varlen or cross")
      ->default_str("block-mask");
  cmd->add_option("--tier", opts->tier,
                  "The stack whose path to show: hf-peft/sdpa-<grouped_mm|eager> (transformers + peft under "
                  "attn_implementation=\"sdpa\"), hf-peft/flash_attention_2-<grouped_mm|eager> (under "
                  "\"flash_attention_2\", the flash-attn package), hf-peft/eager-<grouped_mm|eager> (under \"eager\": "
                  "scores materialised on every layer) or a harness tier, e.g. sdpa-auto/grouped/gqa-expand")
      ->default_str("hf-peft/sdpa-grouped_mm");
  cmd->add_option("--gpu", opts->gpu, "GPU whose SDPA rules apply (scenarios/gpus.yaml name or alias)")
      ->default_str("NVIDIA H200");
  add_format_option(cmd, opts->format, true);
  cmd->callback([opts, width]() {
    opts->width_given = width->count() > 0;
    const model::ModelShape shape = load_model(opts->model);
    if (opts->lora_targets.empty()) opts->lora_targets = model::default_lora_targets(shape);
    check_targets(shape, model::plan_lora(shape, opts->lora_targets, opts->lora_rank));
    const bool path = shows_path(*opts);
    const model::MicroBatch batch = path ? path_batch(*opts) : model::MicroBatch{};
    nlohmann::json j = describe_json(shape, *opts);
    if (path) j["attention_path"] = path_json(shape, *opts, batch);
    require_figures(j, io::resolve_model_path(opts->model) + ":1:1");
    if (opts->format == Format::json) {
      report::print_json(std::cout, "describe", j);
    } else if (opts->format == Format::csv) {
      report::write_csv(std::cout, modules_table(shape, *opts));
    } else {
      print_text(j, std::cout);
      if (path) print_path(j["attention_path"], std::cout);
    }
  });
}

}  // namespace stepcast::cli
