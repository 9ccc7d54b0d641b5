#include "model/memory.hpp"

#include <algorithm>
#include <string>

#include "model/counts.hpp"
#include "model/modules.hpp"
#include "model/errors.hpp"

namespace stepcast::model {

namespace {
constexpr double kGiB = 1073741824.0;
// A term beyond 2^60 bytes (1 EiB) is refused, never cast: six such terms still sum inside int64
// (docs/reliability.md), and a NaN or negative term means an input the readers should have refused.
constexpr double kMaxTermBytes = 1152921504606846976.0;
int64_t bytes_of(double gib) {
  const double bytes = gib * kGiB + 0.5;
  if (!(bytes >= 0 && bytes < kMaxTermBytes))
    throw InputError("a memory term of " + std::to_string(bytes / kGiB / 1e9) +
                     " billion GiB. Violated constraint: finite, >= 0, < 1 EiB");
  return static_cast<int64_t>(bytes);
}
}  // namespace

int64_t MemoryTable::total_bytes() const {
  int64_t total = 0;
  for (const auto& item : items) total += item.bytes;
  return total;
}

MemoryTable memory_table(const FeatureMaker& features, const MemoryFeatures& y, const std::array<double, kMemoryTerms>& m) {
  MemoryTable t;
  t.items.push_back({"weights", bytes_of(features.weights_gib()), "run"});
  t.items.push_back({"trainable_state", bytes_of(features.lora_gib()), "run"});
  t.items.push_back({"fixed_slack_optimizer_workspaces", bytes_of(m[kMemFixed] * y.y[kMemFixed]), "run"});
  t.items.push_back({"architecture_activations", bytes_of(m[kMemActivation] * y.y[kMemActivation]), "step"});
  t.items.push_back({"activations_logits_ce_per_token", bytes_of(m[kMemToken] * y.y[kMemToken]), "step"});
  t.items.push_back({"explicit_attention_masks", bytes_of(m[kMemMask] * y.y[kMemMask]), "step"});
  t.items.push_back({"math_attention_scores", bytes_of(m[kMemScore] * y.y[kMemScore]), "step"});
  double step = 0;
  for (int i = 0; i < kMemoryTerms; ++i)
    if (i != kMemFixed) step += m[i] * y.y[i];
  // A trained embedding's backward floor, where it sets the peak (model/features.hpp): the rest of the floor.
  if (y.floor_gib > step) t.items.push_back({"embedding_backward_floor", bytes_of(y.floor_gib - step), "step"});
  return t;
}

}  // namespace stepcast::model

namespace stepcast::model {
namespace {

// A gated MLP (gate_proj or a fused gate_up): gate, up and activation, and their product, where an ungated one has up
// and activation.
bool gated_mlp(const ModelShape& shape) {
  return !shape.family.names.gate_proj.empty() || !shape.family.names.fused_gate_up.empty();
}

// Elements per token of one layer's norm outputs (one hidden-wide output each).
double norm_elements(const ModelShape& shape, int64_t layer) {
  double norms = static_cast<double>(shape.family.layer_norms.size());
  if (shape.has_experts(layer)) norms += static_cast<double>(shape.family.expert_layer_norms.size());
  return norms * static_cast<double>(shape.hidden_size);
}

// Elements per token of one layer's attention half that its recompute keeps for the backward: q, k, v, the
// attention output and o_proj's output; MLA's latents.
double attention_elements(const ModelShape& shape, int64_t layer) {
  const AttentionSpec& a = shape.layers[static_cast<size_t>(layer)];
  double e = static_cast<double>(a.num_heads * a.head_dim + a.num_kv_heads * (a.head_dim + a.value_dim()) +
                                 a.num_heads * a.value_dim() + shape.hidden_size);
  if (a.mla()) e += static_cast<double>(a.q_lora_rank + a.kv_lora_rank + a.rope_head_dim);
  return e;
}

// Elements per token that one layer's recompute keeps for its backward: the attention half's; the dense MLP's gate,
// up and activation (or up and activation); for each of the top-k experts and the shared experts the same; the
// router's logits; the layer's norm outputs.
double layer_elements(const ModelShape& shape, int64_t layer) {
  const double h = static_cast<double>(shape.hidden_size);
  double e = attention_elements(shape, layer);
  const double mlp_factor = gated_mlp(shape) ? 3.0 : 2.0;
  if (shape.has_dense_mlp(layer)) e += mlp_factor * static_cast<double>(shape.intermediate_size);
  if (shape.has_experts(layer)) {
    e += static_cast<double>(shape.moe.top_k) * (mlp_factor * static_cast<double>(shape.moe.intermediate_size) + h);
    e += mlp_factor * static_cast<double>(shape.moe.shared_intermediate_size) + static_cast<double>(shape.moe.num_experts);
  }
  return e + norm_elements(shape, layer);
}

int64_t checked_bytes(double bytes, const std::string& what) {
  if (!(bytes >= 0 && bytes < kMaxTermBytes))
    throw InputError("memory: " + what + " of " + std::to_string(bytes / kGiB) +
                     " GiB. Violated constraint: finite, >= 0, < 1 EiB (a smaller micro-batch)");
  return static_cast<int64_t>(bytes + 0.5);
}

// Explicit masks alive in one step: one per layer type whose window bites or, padded, every type.
double explicit_masks(const ModelShape& shape, const TrainingSetup& setup, int64_t width) {
  double masks = 0;
  for (const LayerGroup& g : layers_by_type(shape))
    if (setup.padded || g.spec.eager || setup.eager_attention || (g.spec.window > 0 && width >= g.spec.window) || (g.spec.chunk > 0 && width > g.spec.chunk)) masks += 1;
  return masks;
}

}  // namespace

AdapterPath adapter_path(const TrainingSetup& setup) {
  return adapter_path(setup.lora_autocast, setup.lora_dtype);
}

double layer_working_set_bytes(const ModelShape& shape, int64_t activation_bytes) {
  double largest = 0;
  for (int64_t layer = 0; layer < shape.num_layers(); ++layer) largest = std::max(largest, layer_elements(shape, layer));
  return largest * static_cast<double>(activation_bytes);
}

namespace {

// The gated MLP's product act(gate) * up, down_proj's saved input, per token (the harness's fused MLP keeps none).
double gated_products(const ModelShape& shape, int64_t layer) {
  if (!gated_mlp(shape)) return 0;
  double e = 0;
  if (shape.has_dense_mlp(layer)) e += static_cast<double>(shape.intermediate_size);
  if (shape.has_experts(layer))
    e += static_cast<double>(shape.moe.top_k * shape.moe.intermediate_size + shape.moe.shared_intermediate_size);
  return e;
}

}  // namespace

namespace {

// Which tensor a trained linear's weight gradient reads: q, k, v (or fused qkv, MLA's down projections) share the
// norm's output, the MLP's gate and up (and the router) share the other norm's, o_proj and down_proj read their own.
std::string input_key(const ModelShape& shape, const Module& m) {
  const ModuleNames& n = shape.family.names;
  if (m.short_name == n.o_proj || m.short_name == n.down_proj || m.component == Component::experts ||
      m.in_features != shape.hidden_size)
    return m.name;
  const bool ffn = m.component == Component::dense_mlp || m.component == Component::shared_experts ||
                   m.component == Component::router;
  return ffn ? "ffn input" : "attention input";
}

// The same, told apart across layers: the tensor one module of one layer reads.
std::string layer_input_key(const ModelShape& shape, const Module& m) {
  return std::to_string(m.layer) + " " + input_key(shape, m);
}

}  // namespace

// Read from peft's lora.Linear.forward (x = x.to(fp32); result = result + lora_B(lora_A(dropout(x))) * scaling;
// result.to(bf16)), transformers' RMSNorm (hidden.to(fp32), saved by pow and mul) and decoder layer, and checked
// against the allocator's history of Mistral-7B at 2 x 2048 (measurements/records/h200-lora-rank): bytes per token,
// a = activation bytes,
//   the harness's layer elements with each norm's output replaced by its fp32 input (4 h)       (a x elements)
//   + the gated MLP's product (down_proj's input)                                                (a x I)
//   + per adapter: dropout's fp32 output and its 1-byte mask, or without dropout the fp32 cast    (5 or 4 x d_in)
//   + at the layer's last adapter (down_proj: the rest of the layer is saved by then), alive while it runs: its
//     fp32 cast of x (held by forward's local x when dropout makes a second copy), lora_B's fp32 output and its
//     scaled copy, the base output                                                                 (4 d_in + (8 + a) d_out)
//   + the residual stream's running sum and the gradient arriving from the layer above             (2 a h)
// Under torch.autocast(bf16) (`autocast`) lora_A saves autocast's bf16 cast of its input in place of the fp32
// one: the mask and 2 bytes, or 2 without dropout (3 or 2 x d_in); at the last adapter the fp32 cast of x stays
// alive (4 d_in) with, first, dropout's fp32 output until lora_A has cast it (4 d_in, dropout only), then the bf16
// output, its scaled copy and the base output ((4 + a) d_out), whichever is larger.
// bf16 adapters (`bf16`) save dropout's bf16 output and its mask (3 x d_in), or without dropout x itself: a tensor
// nothing else keeps (a frozen linear saves nothing), counted once per distinct input as its a x d_in (down_proj's,
// the gated product, is in the layer's elements already); at the last adapter lora_B's bf16 output, its scaled copy
// and the base output ((4 + a) d_out).
double peft_layer_working_set_bytes(const ModelShape& shape, const ModuleTable& modules,
                                    const std::vector<std::string>& lora_targets, double lora_dropout,
                                    int64_t activation_bytes, AdapterPath path, LayerPart part) {
  const double a = static_cast<double>(activation_bytes);
  const double h = static_cast<double>(shape.hidden_size);
  const bool dropout = lora_dropout > 0;
  const bool attention = part == LayerPart::attention;
  std::vector<double> adapters(static_cast<size_t>(shape.num_layers()), 0.0);
  std::vector<double> last(static_cast<size_t>(shape.num_layers()), 0.0);  // modules come in forward order
  std::vector<std::string> shared_inputs;                                   // (layer, input) x already counted
  for (const Module& m : modules) {
    if (m.kind != ModuleKind::linear || m.layer < 0 || m.layer >= shape.num_layers()) continue;
    if (std::find(lora_targets.begin(), lora_targets.end(), m.short_name) == lora_targets.end()) continue;
    if (attention && m.component != Component::attention_proj && m.component != Component::latent_proj) continue;
    const double in = static_cast<double>(m.in_features), out = static_cast<double>(m.out_features);
    const auto l = static_cast<size_t>(m.layer);
    if (path == AdapterPath::bf16) {
      const std::string key = layer_input_key(shape, m);
      const bool first = std::find(shared_inputs.begin(), shared_inputs.end(), key) == shared_inputs.end();
      if (first) shared_inputs.push_back(key);
      if (dropout) adapters[l] += 3.0 * in;
      else if (first && m.short_name != shape.family.names.down_proj) adapters[l] += a * in;
      last[l] = (4.0 + a) * out;
    } else if (path == AdapterPath::autocast) {
      adapters[l] += (dropout ? 3.0 : 2.0) * in;
      last[l] = 4.0 * in + std::max(dropout ? 4.0 * in : 0.0, (4.0 + a) * out);
    } else {
      adapters[l] += (dropout ? 5.0 : 4.0) * in;
      last[l] = (dropout ? 4.0 * in : 0.0) + (8.0 + a) * out;
    }
  }
  double largest = 0;
  for (int64_t layer = 0; layer < shape.num_layers(); ++layer) {
    const auto l = static_cast<size_t>(layer);
    if (attention) {  // the input norm's fp32 input; o_proj's backward, the last adapter's, has run
      largest = std::max(largest, a * attention_elements(shape, layer) + 4.0 * h + adapters[l] + 2.0 * a * h);
      continue;
    }
    const double norms = norm_elements(shape, layer);
    const double base = a * (layer_elements(shape, layer) - norms + gated_products(shape, layer)) + 4.0 * norms;
    largest = std::max(largest, base + adapters[l] + last[l] + 2.0 * a * h);
  }
  return largest;
}

namespace {

// Bytes per token one layer's trained linears keep: each distinct input once (a routed expert's input and
// down_proj's once per top-k expert).
double trained_linear_inputs(const ModelShape& shape, const ModuleTable& modules, int64_t layer, double a) {
  std::vector<std::string> seen;
  double bytes = 0;
  for (const Module& m : modules) {
    if (m.layer != layer || (m.kind != ModuleKind::linear && m.kind != ModuleKind::experts &&
                             m.kind != ModuleKind::router))
      continue;
    const std::string key = input_key(shape, m);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    const double copies = m.component == Component::experts ? static_cast<double>(shape.moe.top_k) : 1.0;
    bytes += copies * a * static_cast<double>(m.in_features);
  }
  return bytes;
}

// Elements per token a layer's RMSNorms normalise: its hidden-sized norms, q_norm and k_norm over every head, MLA's
// latent norms. transformers' RMSNorm keeps an fp32 copy of each (hidden.to(fp32), saved by pow and mul).
double norm_widths(const ModelShape& shape, int64_t layer) {
  const AttentionSpec& s = shape.layers[static_cast<size_t>(layer)];
  double elements = norm_elements(shape, layer);
  if (s.qk_norm || shape.family.qk_norm_whole)
    elements += static_cast<double>((s.num_heads + s.num_kv_heads) * s.head_dim);
  if (s.mla()) elements += static_cast<double>(s.q_lora_rank + s.kv_lora_rank);
  return elements;
}

// What the fused SDPA kernel keeps (q, k, v as it receives them, its output, the fp32 log-sum-exp per head) and
// what the MLP's activation keeps: the gate's output (the activation's input), the activation's output and up's
// output (their product's inputs); an ungated MLP the activation's input. Per top-k expert the same, and the
// expert output the routing weight multiplies; the router's fp32 softmax.
double core_saved(const ModelShape& shape, int64_t layer, double a) {
  const AttentionSpec& s = shape.layers[static_cast<size_t>(layer)];
  double bytes = a * static_cast<double>(s.num_heads * s.head_dim + s.num_kv_heads * (s.head_dim + s.value_dim()) +
                                         s.num_heads * s.value_dim()) +
                 4.0 * static_cast<double>(s.num_heads);
  const double per_width = gated_mlp(shape) ? 3.0 * a : a;
  if (shape.has_dense_mlp(layer)) bytes += per_width * static_cast<double>(shape.intermediate_size);
  if (shape.has_experts(layer)) {
    const double k = static_cast<double>(shape.moe.top_k);
    bytes += k * (per_width * static_cast<double>(shape.moe.intermediate_size) + a * static_cast<double>(shape.hidden_size));
    bytes += per_width * static_cast<double>(shape.moe.shared_intermediate_size) + 4.0 * static_cast<double>(shape.moe.num_experts);
  }
  return bytes;
}

}  // namespace

// Read from the sources (docs/method.md, "Checkpointing off"): without recompute each layer keeps what autograd saved
// in its forward. PyTorch saves a matmul's input only when its weight needs a gradient, so a frozen linear keeps
// nothing; peft's adapter keeps dropout's fp32 output and mask (or the fp32 cast), lora_B its rank-wide input; the
// residual stream's bf16 tensors are read by the next norm's cast and the residual add, which save nothing.
double peft_saved_bytes_per_token(const ModelShape& shape, const ModuleTable& modules, const TrainingSetup& s,
                                  const std::vector<std::string>& targets, bool full) {
  const double a = static_cast<double>(s.activation_bytes);
  const double h = static_cast<double>(shape.hidden_size);
  const AdapterPath path = adapter_path(s);
  const bool dropout = s.lora_dropout > 0;
  // bf16 adapters without dropout: lora_A saves x itself, once per distinct input (shared_x)
  const bool shared_x = path == AdapterPath::bf16 && !dropout;
  const double per_input = path == AdapterPath::bf16       ? (dropout ? 3.0 : 0.0)
                           : path == AdapterPath::autocast ? (dropout ? 3.0 : 2.0)
                                                           : (dropout ? 5.0 : 4.0);
  const double per_rank = path == AdapterPath::fp32 ? 4.0 : 2.0;
  std::vector<double> layers(static_cast<size_t>(shape.num_layers()), 0.0);
  std::vector<std::string> seen;
  if (!full)
    for (const Module& m : modules) {
      if (m.kind != ModuleKind::linear || m.layer < 0 || m.layer >= shape.num_layers()) continue;
      if (std::find(targets.begin(), targets.end(), m.short_name) == targets.end()) continue;
      double& layer = layers[static_cast<size_t>(m.layer)];
      layer += per_input * static_cast<double>(m.in_features) + per_rank * static_cast<double>(s.lora_rank);
      const std::string key = layer_input_key(shape, m);
      const bool first = std::find(seen.begin(), seen.end(), key) == seen.end();
      if (first) seen.push_back(key);
      if (shared_x && first) layer += a * static_cast<double>(m.in_features);
    }
  double total = 4.0 * h + (full ? a * h : 0.0);  // the final norm's fp32 copy; a trained head's input
  for (int64_t layer = 0; layer < shape.num_layers(); ++layer) {
    double bytes = layers[static_cast<size_t>(layer)] + 4.0 * norm_widths(shape, layer) + core_saved(shape, layer, a);
    if (full)  // trained norm weights keep their bf16 input, trained linears theirs
      bytes += a * norm_widths(shape, layer) + trained_linear_inputs(shape, modules, layer, a);
    total += bytes;
  }
  return total;
}

double ArchitectureMemoryRates::layer_working_bytes(double tokens, double scores) const {
  const double layer = tokens * working_set_bytes_per_token;
  if (eager_peak_bytes <= 0) return layer;
  return std::max(layer, tokens * eager_attention_bytes_per_token + scores * eager_peak_bytes);
}

double ArchitectureMemoryRates::step_bytes(double tokens, double scores) const {
  return tokens * saved_bytes_per_token + scores * eager_saved_bytes +
         std::max(tokens * logits_bytes_per_token, layer_working_bytes(tokens, scores));
}

namespace {

// Eager attention's score tensors, R x heads x W x (W + 1) (docs/families.md, "Eager attention"), bytes per element.
// GPT-OSS's eager_attention_forward (the sink column joins the row before the softmax) runs its softmax in the
// activations' dtype; its recompute holds at most three copies at once: in the forward the scores and the next op's
// output beside the softmax's saved output; in the backward the softmax's output and the matmul's saved
// probabilities with the gradient arriving. Without recompute each layer keeps its two saved ones. Unmeasured.
constexpr double kEagerPeakScoreCopies = 3;
constexpr double kEagerSavedScoreCopies = 2;
// transformers' eager_attention_forward of every other family: softmax(scores, dtype=torch.float32).to(bf16). At
// the recomputed layer's peak, four fp32 tensors: the softmax's saved output and three the autograd engine allocates
// in the softmax's backward (the op count has two: the gradient in and out). Measured on Llama-3-8B, H100: 15.6 by a
// least-squares fit over 17 score-bound micro-batches (measurements/records/h100-eager-attention), and the
// allocator's history at 2 x 4096 (measurements/records/h100-eager-fp32-softmax: 4.00 + 12.13 GiB).
constexpr double kEagerFp32SoftmaxPeakBytes = 16;
// Without recompute each layer keeps the softmax's fp32 output and the bf16 probabilities PV's matmul saved.
constexpr double kEagerFp32SoftmaxSavedBytes = 4;  // plus the activations' bytes
// A capped layer (Gemma-2's attn_logit_softcapping) also keeps tanh's output, in the activations' dtype, until tanh's
// backward, which runs after the softmax's: one more copy at the peak and among the saved ones. Unmeasured.

void set_eager_scores(const ModelShape& shape, const TrainingSetup& setup, ArchitectureMemoryRates& r) {
  const double a = static_cast<double>(setup.activation_bytes);
  const bool fp32_softmax = !shape.family.attention_sinks;
  const double peak = fp32_softmax ? kEagerFp32SoftmaxPeakBytes : kEagerPeakScoreCopies * a;
  const double saved = fp32_softmax ? kEagerFp32SoftmaxSavedBytes + a : kEagerSavedScoreCopies * a;
  for (const AttentionSpec& l : shape.layers) {
    if (!l.eager && !setup.eager_attention) continue;
    const double heads = static_cast<double>(l.num_heads);
    const double capped = l.logit_softcap > 0 ? a : 0.0;
    if (setup.recompute) r.eager_peak_bytes = std::max(r.eager_peak_bytes, (peak + capped) * heads);
    else r.eager_saved_bytes += (saved + capped) * heads;
  }
}

}  // namespace

double base_weight_bytes(const ModelShape& shape, const ModuleTable& modules, BaseQuant quant) {
  const auto dtype = static_cast<double>(dtype_bytes(shape.dtype));
  double bytes = static_cast<double>(count_params(shape, modules).total) * dtype, largest = 0;
  if (quant == BaseQuant::none) return bytes;
  for (const Module& m : modules) {
    if (!quantized(m, quant)) continue;
    const auto params = static_cast<double>(m.weight_params());
    bytes += quantized_weight_bytes(params, quant) - params * dtype;
    largest = std::max(largest, params);
  }
  return bytes + largest * kDequantComputeBytes;  // the one dense copy a call dequantizes, alive while its GEMM runs
}

ArchitectureMemoryRates architecture_rates(const ModelShape& shape, const TrainingSetup& setup,
                                           const ArchitectureMemoryConstants& c) {
  return architecture_rates(shape, expand_modules(shape), setup, c);
}

ArchitectureMemoryRates architecture_rates(const ModelShape& shape, const ModuleTable& modules,
                                           const TrainingSetup& setup, const ArchitectureMemoryConstants& c) {
  ArchitectureMemoryRates r;
  const auto targets = setup.lora_targets.empty() ? default_lora_targets(modules) : setup.lora_targets;
  r.weight_bytes = base_weight_bytes(shape, modules, setup.base_quant);
  r.full = setup.full || setup.lora_rank == 0;
  if (r.full) {
    // Gradients and AdamW's two moments in the weights' dtype (torch.optim.AdamW keeps them like the parameter).
    r.gradient_bytes = r.weight_bytes;
    r.optimizer_state_bytes = 2.0 * r.weight_bytes;
  } else {
    // The parameter, its gradient and AdamW's two moments in the adapters' dtype: 4 bytes each (peft's fp32), 2 (bf16).
    const double params = static_cast<double>(plan_lora(modules, targets, setup.lora_rank).params);
    const double bytes = adapter_param_bytes(setup.lora_dtype);
    r.trainable_param_bytes = bytes * params;
    r.gradient_bytes = bytes * params;
    r.optimizer_state_bytes = 2.0 * bytes * params;
  }
  r.trainable_bytes = r.trainable_param_bytes + r.gradient_bytes + r.optimizer_state_bytes;
  const double act = static_cast<double>(setup.activation_bytes);
  r.saved_bytes_per_token = static_cast<double>(shape.num_layers() * shape.hidden_size) * act;
  const double vocab = static_cast<double>(shape.head == Head::lm_head ? shape.vocab_size : shape.num_labels);
  // The chunked path's constant comes from one Gemma-4 record with its softcap inside: not split.
  const double softcap_bytes = setup.softcap_in_model_dtype ? act : c.softcap_logit_bytes;
  const double softcap = shape.final_logit_softcap > 0 ? softcap_bytes : 0.0;
  r.logits_bytes_per_token = vocab * (setup.ce_chunked ? c.chunked_logit_bytes : c.logit_bytes + softcap);
  const auto peft_layer = [&](LayerPart part) {  // a full fine-tune: no adapters in the layer
    return r.full ? peft_layer_working_set_bytes(shape, modules, {}, 0.0, setup.activation_bytes, AdapterPath::fp32, part)
                  : peft_layer_working_set_bytes(shape, modules, targets, setup.lora_dropout, setup.activation_bytes,
                                                 adapter_path(setup), part);
  };
  r.working_set_bytes_per_token =
      setup.peft_layers ? peft_layer(LayerPart::whole) : layer_working_set_bytes(shape, setup.activation_bytes);
  r.mask_bytes = c.mask_bytes;
  set_eager_scores(shape, setup, r);
  if (r.eager_peak_bytes > 0)  // the harness runs no eager attention: its whole layer stands in
    r.eager_attention_bytes_per_token =
        setup.peft_layers ? peft_layer(LayerPart::attention) : r.working_set_bytes_per_token;
  if (!setup.recompute && setup.peft_layers) {  // what autograd saved in every layer, instead of checkpoint inputs
    r.saved_bytes_per_token = peft_saved_bytes_per_token(shape, modules, setup, targets, r.full);
  } else if (!setup.recompute) {  // the harness: every layer's working set stays alive until its backward
    r.saved_bytes_per_token += static_cast<double>(shape.num_layers()) * r.working_set_bytes_per_token;
  }
  return r;
}

std::vector<int64_t> persistent_tensor_bytes(const ModelShape& shape, const TrainingSetup& setup) {
  const int64_t dtype = dtype_bytes(shape.dtype);
  const bool full = setup.full || setup.lora_rank == 0;
  const auto targets = setup.lora_targets.empty() ? default_lora_targets(shape) : setup.lora_targets;
  std::vector<int64_t> weights, trained;
  for (const Module& m : expand_modules(shape)) {
    if (quantized(m, setup.base_quant)) {  // Params4bit's packed codes, and its absmax beside them
      const auto params = static_cast<double>(m.weight_params());
      weights.push_back(static_cast<int64_t>(params / 2));
      weights.push_back(static_cast<int64_t>(quantized_weight_bytes(params, setup.base_quant) - params / 2));
    } else {
      weights.push_back(m.weight_params() * dtype);
    }
    if (m.bias_params() > 0) weights.push_back(m.bias_params() * dtype);
    if (full) {
      trained.push_back(m.weight_params() * dtype);
      if (m.bias_params() > 0) trained.push_back(m.bias_params() * dtype);
    } else if (m.kind == ModuleKind::linear &&
               std::find(targets.begin(), targets.end(), m.short_name) != targets.end()) {
      trained.push_back(setup.lora_rank * m.in_features * 4);   // lora_A [r, in], fp32
      trained.push_back(m.out_features * setup.lora_rank * 4);  // lora_B [out, r], fp32
    }
  }
  std::vector<int64_t> all = weights;
  if (!full) all.insert(all.end(), trained.begin(), trained.end());  // the adapters themselves
  all.insert(all.end(), trained.begin(), trained.end());              // their gradients
  for (int state = 0; state < 2; ++state) all.insert(all.end(), trained.begin(), trained.end());  // exp_avg, exp_avg_sq
  return all;
}

MemoryTable architecture_memory(const ModelShape& shape, const TrainingSetup& setup, int64_t rows, int64_t width,
                                const ArchitectureMemoryConstants& c) {
  const ArchitectureMemoryRates r = architecture_rates(shape, setup, c);
  const double tokens = static_cast<double>(rows) * static_cast<double>(width);
  const double scores = static_cast<double>(rows) * static_cast<double>(width) * static_cast<double>(width + 1);
  const double saved = tokens * r.saved_bytes_per_token + scores * r.eager_saved_bytes;
  const double logits = tokens * r.logits_bytes_per_token;
  const double working_set = r.layer_working_bytes(tokens, scores);
  const double masks = static_cast<double>(rows) * static_cast<double>(width) * static_cast<double>(width) *
                       explicit_masks(shape, setup, width) * r.mask_bytes;
  MemoryTable t;
  t.items.push_back({"weights", checked_bytes(r.weight_bytes, "weights"), "run"});
  t.items.push_back({r.full ? "gradients_and_adamw_states" : "lora_params_grads_adamw_fp32", checked_bytes(r.trainable_bytes, "trainable state"), "run"});
  t.items.push_back({"saved_layer_inputs", checked_bytes(saved, "saved layer inputs"), "step"});
  if (logits >= working_set) t.items.push_back({"logits_and_loss", checked_bytes(logits, "logits"), "step"});
  else t.items.push_back({"layer_recompute_working_set", checked_bytes(working_set, "layer working set"), "layer"});
  t.items.push_back({"explicit_attention_masks", checked_bytes(masks, "masks"), "step"});
  return t;
}

}  // namespace stepcast::model
