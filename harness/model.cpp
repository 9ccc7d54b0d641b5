#include "harness/model.hpp"

#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <set>

#include "harness/device.hpp"
#include "model/errors.hpp"
#include "model/modules.hpp"

// LibTorch versions this file builds against: Debian's 1.13 (CPU, CI) and PyTorch 2.11 (CUDA, the H200).
// 1.13 has only the private at::_scaled_dot_product_attention (no scale, no enable_gqa) and no grouped GEMM.
#define STEPCAST_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
#define STEPCAST_HAS_SDPA STEPCAST_TORCH_AT_LEAST(2, 1)       // public SDPA with `scale`
#define STEPCAST_HAS_SDPA_GQA STEPCAST_TORCH_AT_LEAST(2, 5)   // enable_gqa
#define STEPCAST_HAS_SDPA_CUDNN STEPCAST_TORCH_AT_LEAST(2, 3) // setSDPUseCuDNN
#define STEPCAST_HAS_GROUPED_MM STEPCAST_TORCH_AT_LEAST(2, 9) // at::_grouped_mm with autograd
// at::_flash_attention_forward / _backward with window_size_left/right and at::_efficient_attention_forward
// / _backward with cumulative offsets (signatures in measurements/records/h200-api-probe.txt, PyTorch 2.11).
#define STEPCAST_HAS_VARLEN (TORCH_VERSION_MAJOR >= 2 && STEPCAST_TORCH_AT_LEAST(2, 5))

namespace stepcast::harness {
namespace {

using torch::Tensor;
using SegmentFn = std::function<Tensor(const Tensor&)>;

// Reentrant gradient checkpointing (torch.utils.checkpoint with use_reentrant=True): forward runs the
// segment without a graph (custom Functions run their forward with grad mode off), backward recomputes it
// with grad on and back-propagates through the recomputed graph. The segment is passed by address
// because a Function's non-tensor arguments cannot hold a std::function; the caller keeps it alive until
// backward has run. Dropout masks are not replayed (no RNG state is saved): the recompute draws new ones.
struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, Tensor input, const SegmentFn* segment) {
    ctx->saved_data["segment"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(segment));
    ctx->save_for_backward({input});
    return (*segment)(input);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto* segment = reinterpret_cast<const SegmentFn*>(static_cast<intptr_t>(ctx->saved_data["segment"].toInt()));
    Tensor input = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    Tensor output;
    {
      torch::AutoGradMode enable(true);
      output = (*segment)(input);
    }
    torch::autograd::backward({output}, {grads[0]});
    return {input.grad(), Tensor()};
  }
};

struct Adapter {
  Tensor a;  // [rank, in]
  Tensor b;  // [out, rank], zero at init: the adapter is inert until trained
  double scaling = 1.0;
};

struct Linear {
  Tensor weight;  // [out, in]
  Tensor bias;    // undefined when none
  int adapter = -1;
};

struct AttentionBlock {
  model::AttentionSpec spec;
  Linear q, k, v, o;
  Tensor q_norm, k_norm;
};

struct MoeBlock {
  Tensor router_proj;       // [E, hidden]
  Tensor router_scale;      // [hidden]
  Tensor per_expert_scale;  // [E]
  Tensor gate_up;           // [E, 2I, hidden]
  Tensor down;              // [E, hidden, I]
  // Qwen2-MoE's shared expert: an MLP every token passes through, scaled by sigmoid(shared_expert_gate(x)).
  bool has_shared = false;
  Linear shared_gate, shared_up, shared_down, shared_expert_gate;
};

struct Layer {
  AttentionBlock attn;
  bool has_mlp = false;
  Linear gate, up, down;
  bool has_moe = false;
  MoeBlock moe;
  std::map<std::string, Tensor> norms;  // hidden-sized norms by Hugging Face name (the family's layer_norms)
  Tensor layer_scalar;                  // the family's persistent per-layer buffer (ones), if it has one

  const Tensor& norm(const std::string& name) const { return norms.at(name); }
};

struct Rope {
  Tensor cos, sin;  // [W, head_dim], or [R, W, head_dim] for packed rows, in the model dtype
};

struct LayerPlan {
  Tensor mask;          // undefined on the is_causal and varlen paths
  bool is_causal = false;
  bool expand_kv = false;
  bool varlen = false;           // documents by cumulative offsets (packed rows, attention mode varlen)
  bool varlen_flash = false;     // flash's entry point; else the efficient kernel's
  int64_t window = 0;            // keys per query on the varlen path (0: unlimited)
};

// Everything one forward needs and a checkpointed backward needs again.
struct StepContext {
  std::map<std::string, Rope> rope;
  std::map<std::string, LayerPlan> plan;
  std::set<std::string> backend_recorded;
  std::deque<SegmentFn> segments;  // deque: stable addresses for CheckpointFunction
  bool training = true;
  Tensor cu_seqlens;               // packed batches: the segments' cumulative offsets (varlen) ...
  int64_t max_segment = 0;         // ... and the longest segment
};

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  Tensor xf = x.to(torch::kFloat);
  Tensor y = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps);
  if (weight.defined()) y = y * weight.to(torch::kFloat);
  return y.to(x.scalar_type());
}

Tensor rotate_half(const Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

Tensor apply_rope(const Tensor& x, const Rope& rope) {  // x [R, W, H, D]
  const bool per_row = rope.cos.dim() == 3;  // packed rows: positions differ per row
  const Tensor cos = per_row ? rope.cos.unsqueeze(2) : rope.cos.unsqueeze(0).unsqueeze(2);
  const Tensor sin = per_row ? rope.sin.unsqueeze(2) : rope.sin.unsqueeze(0).unsqueeze(2);
  return x * cos + rotate_half(x) * sin;
}

// "Proportional" partial RoPE as transformers builds it for Gemma-4's global layers: frequencies over the
// full head_dim, the first partial_rotary_factor share rotating, the rest with frequency 0 (identity).
// `positions`: [W] or [R, W] token positions (packed rows restart them at each document).
Rope make_rope(const model::AttentionSpec& spec, const Tensor& positions, torch::Dtype dtype, const torch::Device& device) {
  const int64_t half = spec.head_dim / 2;
  const auto rotating = static_cast<int64_t>(std::floor(spec.partial_rotary_factor * static_cast<double>(half)));
  auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(device);
  Tensor inv_freq = torch::zeros({half}, f32);
  if (rotating > 0) {
    Tensor i = torch::arange(rotating, f32);
    inv_freq.narrow(0, 0, rotating).copy_(torch::pow(spec.rope_theta, -2.0 * i / static_cast<double>(spec.head_dim)));
  }
  Tensor freqs = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq;
  Tensor emb = torch::cat({freqs, freqs}, -1);
  return Rope{emb.cos().to(dtype), emb.sin().to(dtype)};
}

Tensor repeat_kv(const Tensor& x, int64_t n_rep) {  // [R, KV, W, D] -> [R, KV * n_rep, W, D] (transformers)
  if (n_rep == 1) return x;
  const auto s = x.sizes();
  return x.unsqueeze(2).expand({s[0], s[1], n_rep, s[2], s[3]}).reshape({s[0], s[1] * n_rep, s[2], s[3]});
}

[[maybe_unused]] std::string backend_name(int64_t choice) {
  switch (choice) {
    case 0: return "math";
    case 1: return "flash";
    case 2: return "efficient";
    case 3: return "cudnn";
    case 4: return "overrideable";
    default: return "unknown-" + std::to_string(choice);
  }
}

// Explicit math attention for LibTorch 1.13, whose private SDPA cannot take a scale.
Tensor math_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool is_causal,
                      double scale) {
  Tensor scores = torch::matmul(q, k.transpose(-2, -1)).to(torch::kFloat) * scale;
  if (mask.defined()) {
    scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  } else if (is_causal) {
    const int64_t w = q.size(-2);
    Tensor upper = torch::ones({w, w}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
    scores = scores.masked_fill(upper, -std::numeric_limits<float>::infinity());
  }
  return torch::matmul(torch::softmax(scores, -1).to(q.scalar_type()), v);
}

#if STEPCAST_HAS_VARLEN
// Causal attention over the documents of a flattened batch, by cumulative offsets: q [T, H, D], k and v
// [T, KV, D] (flash takes KV < H natively; the efficient kernel gets them expanded). Forward saves the output
// and its logsumexp, backward calls the kernel's own backward (as PyTorch's SDPA autograd does).
// custom_mask_type 1 = causal from the top-left of each document (efficient kernel).
struct VarlenAttention : public torch::autograd::Function<VarlenAttention> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, Tensor q, Tensor k, Tensor v, Tensor cu_seqlens,
                        int64_t max_seqlen, double scale, int64_t window, bool flash) {
    const std::optional<int64_t> left = window > 0 ? std::optional<int64_t>(window - 1) : std::nullopt;
    const std::optional<int64_t> right = window > 0 ? std::optional<int64_t>(0) : std::nullopt;
    Tensor out, lse, rng_a, rng_b;
    if (flash) {
      std::tie(out, lse, rng_a, rng_b, std::ignore) = at::_flash_attention_forward(
          q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, 0.0, true, false, scale, left, right);
    } else {
      std::tie(out, lse, rng_a, rng_b, std::ignore, std::ignore) = at::_efficient_attention_forward(
          q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), std::nullopt, cu_seqlens, cu_seqlens, max_seqlen,
          max_seqlen, 0.0, 1, true, scale);
      out = out.squeeze(0);
    }
    ctx->save_for_backward({q, k, v, out, lse, cu_seqlens, rng_a, rng_b});
    ctx->saved_data["max_seqlen"] = max_seqlen;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["window"] = window;
    ctx->saved_data["flash"] = flash;
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4], &cu = saved[5];
    const int64_t max_seqlen = ctx->saved_data["max_seqlen"].toInt();
    const double scale = ctx->saved_data["scale"].toDouble();
    const int64_t window = ctx->saved_data["window"].toInt();
    const Tensor grad = grads[0].contiguous();
    Tensor dq, dk, dv;
    if (ctx->saved_data["flash"].toBool()) {
      const std::optional<int64_t> left = window > 0 ? std::optional<int64_t>(window - 1) : std::nullopt;
      const std::optional<int64_t> right = window > 0 ? std::optional<int64_t>(0) : std::nullopt;
      std::tie(dq, dk, dv) = at::_flash_attention_backward(grad, q, k, v, out, lse, cu, cu, max_seqlen, max_seqlen,
                                                           0.0, true, saved[6], saved[7], scale, left, right);
    } else {
      std::tie(dq, dk, dv, std::ignore) = at::_efficient_attention_backward(
          grad.unsqueeze(0), q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), std::nullopt, out.unsqueeze(0), cu, cu,
          max_seqlen, max_seqlen, lse, 0.0, saved[6], saved[7], 1, false, scale);
      dq = dq.squeeze(0);
      dk = dk.squeeze(0);
      dv = dv.squeeze(0);
    }
    return {dq, dk, dv, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};
#endif

// [T, KV, D] -> [T, KV * n_rep, D], each K/V head repeated for its query heads (repeat_kv's order).
[[maybe_unused]] Tensor repeat_kv_flat(const Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  const auto s = x.sizes();
  return x.unsqueeze(2).expand({s[0], s[1], n_rep, s[2]}).reshape({s[0], s[1] * n_rep, s[2]});
}

// A packed batch's segments: each row's documents, then its pad tail (if any) as one more segment.
struct Segments {
  Tensor positions, ids;         // [R, W] int64 on the CPU
  std::vector<int32_t> cumulative;  // over the flattened batch, starting at 0
  int64_t longest = 0;
};

Segments packed_segments(const std::vector<std::vector<int64_t>>& documents, int64_t width) {
  const auto n = static_cast<int64_t>(documents.size());
  Segments s;
  s.positions = torch::empty({n, width}, torch::kLong);
  s.ids = torch::empty({n, width}, torch::kLong);
  s.cumulative.push_back(0);
  int64_t id = 0;
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int64_t> lengths = documents[static_cast<size_t>(r)];
    int64_t used = 0;
    for (int64_t len : lengths) used += len;
    if (used < width) lengths.push_back(width - used);
    int64_t start = 0;
    for (int64_t len : lengths) {
      s.positions[r].narrow(0, start, len).copy_(torch::arange(len, torch::kLong));
      s.ids[r].narrow(0, start, len).fill_(id++);
      s.cumulative.push_back(static_cast<int32_t>(s.cumulative.back() + len));
      s.longest = std::max(s.longest, len);
      start += len;
    }
  }
  return s;
}

}  // namespace

Batch make_packed_batch(const std::vector<std::vector<int64_t>>& documents, int64_t width, int64_t vocab_size,
                        uint64_t seed, const torch::Device& device, model::DocumentAttention attention) {
  Diagnostics d;
  std::vector<int64_t> rows;
  for (size_t r = 0; r < documents.size(); ++r) {
    int64_t tokens = 0;
    if (documents[r].empty()) d.add("documents[" + std::to_string(r) + "] is empty. Violated constraint: >= 1 document a row");
    for (int64_t len : documents[r]) {
      if (len < 1) d.add("documents[" + std::to_string(r) + "] holds a document of " + std::to_string(len) +
                         " tokens. Violated constraint: >= 1 token");
      tokens += len;
    }
    rows.push_back(tokens);
  }
  d.throw_if_any();
  Batch b = make_batch(rows, width, vocab_size, seed, torch::kCPU);
  for (size_t r = 0; r < documents.size(); ++r) {
    int64_t start = 0;
    for (size_t i = 0; i < documents[r].size(); ++i) {
      if (i > 0) b.labels[static_cast<int64_t>(r)][start] = -100;  // not predicted from the previous document
      b.kept_tokens -= i > 0 ? 1 : 0;
      start += documents[r][i];
    }
  }
  const Segments s = packed_segments(documents, width);
  b.documents = documents;
  b.attention = attention;
  b.input_ids = b.input_ids.to(device);
  b.labels = b.labels.to(device);
  b.positions = s.positions.to(device);
  b.segments = s.ids.to(device);
  b.cu_seqlens = torch::tensor(s.cumulative, torch::kInt).to(device);
  b.max_segment = s.longest;
  return b;
}

torch::Tensor document_mask(const Batch& b, int64_t window) {
  const int64_t width = b.width;
  Tensor idx = torch::arange(width, torch::TensorOptions().dtype(torch::kLong).device(b.segments.device()));
  Tensor q = idx.view({width, 1});
  Tensor k = idx.view({1, width});
  Tensor allowed = k.le(q);
  if (window > 0) allowed = allowed.logical_and(k.gt(q - window));  // within a document: its own positions
  Tensor same = b.segments.unsqueeze(2).eq(b.segments.unsqueeze(1));  // [R, W, W]
  return same.logical_and(allowed.unsqueeze(0)).unsqueeze(1);
}

Batch make_batch(const std::vector<int64_t>& rows, int64_t width, int64_t vocab_size, uint64_t seed,
                 const torch::Device& device) {
  Diagnostics d;
  if (rows.empty()) d.add("rows is empty. Violated constraint: at least one row");
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r] < 2 || rows[r] > width)
      d.add("rows[" + std::to_string(r) + "] = " + std::to_string(rows[r]) + ". Violated constraint: 2 <= row <= width (" +
            std::to_string(width) + ")");
  d.throw_if_any();
  const auto n = static_cast<int64_t>(rows.size());
  auto gen = at::detail::createCPUGenerator(seed);
  Tensor ids = torch::randint(1, vocab_size, {n, width}, gen, torch::TensorOptions().dtype(torch::kLong));
  Tensor labels = ids.clone();
  Batch b;
  b.rows = rows;
  b.width = width;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t len = rows[static_cast<size_t>(r)];
    b.kept_tokens += len - 1;
    if (len < width) {
      b.padded = true;
      ids[r].narrow(0, len, width - len).fill_(0);  // pad id 0 (Gemma's pad_token_id)
      labels[r].narrow(0, len, width - len).fill_(-100);
    }
  }
  b.input_ids = ids.to(device);
  b.labels = labels.to(device);
  return b;
}

torch::Tensor attention_mask(const std::vector<int64_t>& rows, int64_t width, int64_t window,
                             const torch::Device& device) {
  auto long_opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  Tensor idx = torch::arange(width, long_opts);
  Tensor q = idx.view({width, 1});
  Tensor k = idx.view({1, width});
  Tensor allowed = k.le(q);
  if (window > 0) allowed = allowed.logical_and(k.gt(q - window));
  Tensor lengths = torch::tensor(rows, torch::TensorOptions().dtype(torch::kLong)).to(device);
  Tensor key_real = k.view({1, 1, width}).lt(lengths.view({-1, 1, 1}));          // [R, 1, W]
  Tensor mask = allowed.unsqueeze(0).logical_and(key_real);                        // [R, W, W]
  mask = mask.logical_or(torch::eye(width, torch::TensorOptions().dtype(torch::kBool).device(device)).unsqueeze(0));
  return mask.unsqueeze(1);
}

void apply_attention_backend(const Tier& tier) {
#if STEPCAST_HAS_SDPA
  auto& ctx = at::globalContext();
  const bool all = tier.auto_backend;
  ctx.setSDPUseFlash(all || tier.forced == model::Backend::flash);
  ctx.setSDPUseMemEfficient(all || tier.forced == model::Backend::efficient);
  ctx.setSDPUseMath(all || tier.forced == model::Backend::math);
#if STEPCAST_HAS_SDPA_CUDNN
  ctx.setSDPUseCuDNN(all || tier.forced == model::Backend::cudnn);
#endif
#else
  (void)tier;  // LibTorch 1.13 (CPU): the harness uses explicit math attention whatever the tier says
#endif
}

// Every frozen tensor of a decoder layer, in one fixed order (the order FSDP shards and gathers them in).
template <class L, class F>
void for_each_frozen(L& l, F&& visit) {
  for (auto* lin : {&l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o, &l.gate, &l.up, &l.down}) {
    if (lin->weight.defined()) visit(lin->weight);
    if (lin->bias.defined()) visit(lin->bias);
  }
  for (auto* t : {&l.attn.q_norm, &l.attn.k_norm, &l.moe.router_proj, &l.moe.router_scale, &l.moe.per_expert_scale,
                  &l.moe.gate_up, &l.moe.down, &l.layer_scalar})
    if (t->defined()) visit(*t);
  for (auto& [name, t] : l.norms) visit(t);
}

struct Model::Impl {
  model::ModelShape shape;
  const model::Family& family;  // shape.family: how the layers are wired
  BuildOptions opt;
  torch::TensorOptions wopt;
  Tensor embed, final_norm, lm_head;
  std::vector<Layer> layers;
  std::vector<Adapter> adapters;
  std::vector<std::pair<std::string, Tensor>> params;
  bool checkpointing = true;
  bool adapters_on = true;
  std::map<std::string, LayerTypeInfo> info;
  std::unique_ptr<StepContext> ctx;
  std::set<std::pair<int64_t, int64_t>> shapes_run;  // rows x width of every forward
  int64_t forwards = 0;
  int sm = 0;  // the device's compute capability (90 on the H200; 0 on the CPU): which varlen kernels exist
  LayerSharding sharding;  // FSDP: layers hold shards, gathered around each run of a layer; empty: whole layers
  std::vector<std::vector<std::vector<int64_t>>> full_sizes;  // per layer, per frozen tensor (for_each_frozen)

  static int compute_capability(const torch::Device& device) {
    const DeviceInfo d = device_info(device);
    return d.cuda ? d.compute_major * 10 + d.compute_minor : 0;
  }

  Impl(const model::ModelShape& s, const BuildOptions& o)
      : shape(s), family(shape.family), opt(o), checkpointing(o.checkpointing), sm(compute_capability(o.device)) {
    wopt = torch::TensorOptions().dtype(opt.dtype).device(opt.device);
    torch::NoGradGuard no_grad;
    torch::manual_seed(opt.seed);
    build();
  }

  Tensor add(const std::string& name, Tensor t) {
    params.emplace_back(name, t);
    return t;
  }
  Tensor normal(const std::string& name, std::vector<int64_t> sizes) {
    return add(name, torch::empty(sizes, wopt).normal_(0.0, opt.init_std));
  }
  Tensor ones(const std::string& name, std::vector<int64_t> sizes) { return add(name, torch::ones(sizes, wopt)); }

  bool lora_target(const std::string& short_name) const {
    const auto& t = opt.lora.targets;
    return opt.lora.rank > 0 && std::find(t.begin(), t.end(), short_name) != t.end();
  }

  // An nn.Linear and, where the LoRA targets name it, its adapter (drawn right after the weight, as peft
  // wraps a module once it exists).
  Linear linear(const model::Module& m) {
    Linear l;
    l.weight = normal(m.weight_name(), m.weight_shape());
    if (m.bias) l.bias = add(m.name + ".bias", torch::zeros({m.out_features}, wopt));
    if (lora_target(m.short_name)) {
      auto aopt = torch::TensorOptions().dtype(opt.lora.fp32 ? torch::kFloat : opt.dtype).device(opt.device);
      const double bound = 1.0 / std::sqrt(static_cast<double>(m.in_features));  // kaiming_uniform(a=sqrt(5)), as peft
      Adapter a;
      a.a = torch::empty({opt.lora.rank, m.in_features}, aopt).uniform_(-bound, bound).requires_grad_(true);
      a.b = torch::zeros({m.out_features, opt.lora.rank}, aopt).requires_grad_(true);
      a.scaling = opt.lora.alpha / static_cast<double>(opt.lora.rank);
      l.adapter = static_cast<int>(adapters.size());
      adapters.push_back(a);
    }
    return l;
  }

  [[noreturn]] static void cannot_build(const model::Module& m) {
    throw Error("harness: no slot for module '" + m.name + "' (" + m.short_name +
                "): a new module kind needs its slot here and its use in the forward (docs/families.md)");
  }

  void place_linear(Layer& layer, const model::Module& m) {
    const std::string& n = m.short_name;
    if (m.component == model::Component::shared_experts || n == "shared_expert_gate") return place_shared(layer.moe, m);
    if (n == "q_proj") layer.attn.q = linear(m);
    else if (n == "k_proj") layer.attn.k = linear(m);
    else if (n == "v_proj") layer.attn.v = linear(m);
    else if (n == "o_proj") layer.attn.o = linear(m);
    else if (n == "gate_proj") layer.gate = linear(m);
    else if (n == "up_proj") layer.up = linear(m);
    else if (n == "down_proj") layer.down = linear(m);
    else cannot_build(m);
    layer.has_mlp |= m.component == model::Component::dense_mlp;
  }

  void place_shared(MoeBlock& moe, const model::Module& m) {
    const std::string& n = m.short_name;
    moe.has_shared = true;
    if (n == "shared_expert_gate") moe.shared_expert_gate = linear(m);
    else if (n == "gate_proj") moe.shared_gate = linear(m);
    else if (n == "up_proj") moe.shared_up = linear(m);
    else if (n == "down_proj") moe.shared_down = linear(m);
    else cannot_build(m);
  }

  void place_norm(Layer& layer, const model::Module& m) {
    if (m.short_name == "self_attn.q_norm") layer.attn.q_norm = ones(m.weight_name(), m.weight_shape());
    else if (m.short_name == "self_attn.k_norm") layer.attn.k_norm = ones(m.weight_name(), m.weight_shape());
    else layer.norms[m.short_name] = ones(m.weight_name(), m.weight_shape());
  }

  void place_expert_part(Layer& layer, const model::Module& m) {
    layer.has_moe = true;
    MoeBlock& moe = layer.moe;
    if (m.kind == model::ModuleKind::router) moe.router_proj = normal(m.weight_name(), m.weight_shape());
    else if (m.short_name == "scale") moe.router_scale = ones(m.weight_name(), m.weight_shape());
    else if (m.short_name == "per_expert_scale") moe.per_expert_scale = ones(m.weight_name(), m.weight_shape());
    else if (m.short_name == "gate_up_proj") moe.gate_up = normal(m.weight_name(), m.weight_shape());
    else if (m.short_name == "down_proj") moe.down = normal(m.weight_name(), m.weight_shape());
    else cannot_build(m);
  }

  // What `describe` reads but the harness cannot run yet: another block wiring, fused or latent projections,
  // shared experts without Qwen2-MoE's gate (Llama-4, DeepSeek: their routers differ too), an ungated MLP and
  // LayerNorms with biases (StarCoder2), GPT-OSS's sinks, eager softmax, expert biases and clamped SwiGLU. Refused by
  // name before anything is allocated, rather than run a forward that is not the model's (docs/families.md has the checklist).
  void refuse_unbuilt() const {
    std::string why;
    if (family.block != model::BlockLayout::pre_norm && family.block != model::BlockLayout::gemma4_sandwich)
      why = "its block wiring";
    else if (!family.names.fused_qkv.empty() || !family.names.fused_gate_up.empty()) why = "fused projections";
    else if (!shape.layers.empty() && shape.layers.front().mla()) why = "multi-head latent attention";
    else if (shape.moe.shared_intermediate_size > 0 && !family.shared_expert_gate) why = "ungated shared experts";
    else if (family.names.gate_proj.empty()) why = "an ungated MLP";
    else if (family.norm_bias) why = "LayerNorms with biases";
    else if (family.attention_sinks || family.eager_attention)
      why = "eager attention with per-head sink logits in the softmax";
    else if (family.expert_bias) why = "experts and router with biases and a clamped SwiGLU";
    if (!why.empty())
      throw InputError("harness: family '" + family.name + "' is described but not built yet (" + why +
                       "). Violated constraint: a family the harness builds (docs/families.md)");
  }

  // One walk over the parameter table that `describe` counts (model::expand_modules), in its order, so the
  // seeded initialisation draws in the order it always has and every tensor has the counted name and shape.
  void build() {
    refuse_unbuilt();
    layers.resize(static_cast<size_t>(shape.num_layers()));
    for (int64_t i = 0; i < shape.num_layers(); ++i) layers[static_cast<size_t>(i)].attn.spec = shape.layers[static_cast<size_t>(i)];
    for (const model::Module& m : model::expand_modules(shape)) {
      Layer* layer = m.layer >= 0 ? &layers[static_cast<size_t>(m.layer)] : nullptr;
      switch (m.kind) {
        case model::ModuleKind::embedding: embed = normal(m.weight_name(), m.weight_shape()); break;
        case model::ModuleKind::lm_head: lm_head = normal(m.weight_name(), m.weight_shape()); break;
        case model::ModuleKind::linear: place_linear(*layer, m); break;
        case model::ModuleKind::norm:
          if (layer == nullptr) final_norm = ones(m.weight_name(), m.weight_shape());
          else place_norm(*layer, m);
          break;
        case model::ModuleKind::router:
        case model::ModuleKind::experts:
        case model::ModuleKind::scale: place_expert_part(*layer, m); break;
      }
    }
    if (family.layer_scalar_buffer)
      for (Layer& layer : layers) layer.layer_scalar = torch::ones({1}, wopt);  // a buffer, not a parameter
  }

  const Tensor& output_weight() const { return shape.tie_word_embeddings ? embed : lm_head; }

  Tensor act(const Tensor& x) const {
    if (shape.hidden_activation.rfind("gelu", 0) == 0) return at::gelu(x, "tanh");
    return at::silu(x);
  }

  Tensor apply(const Linear& l, const Tensor& x, bool training) const {
    Tensor y = at::linear(x, l.weight, l.bias);
    if (l.adapter < 0 || !adapters_on) return y;
    const Adapter& a = adapters[static_cast<size_t>(l.adapter)];
    Tensor xin = x.to(a.a.scalar_type());
    if (training && opt.lora.dropout > 0) xin = torch::dropout(xin, opt.lora.dropout, true);
    Tensor delta = at::linear(at::linear(xin, a.a), a.b) * a.scaling;
    return (y + delta).to(x.scalar_type());  // peft: base result + fp32 adapter, cast back to the base dtype
  }

  Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const LayerPlan& plan, bool gqa_native,
              double scale, const std::string& type, StepContext& c) {
#if STEPCAST_HAS_SDPA
    const c10::optional<Tensor> mask = plan.mask.defined() ? c10::optional<Tensor>(plan.mask) : c10::nullopt;
#if STEPCAST_HAS_SDPA_GQA
    if (q.is_cuda() && c.backend_recorded.insert(type).second)
      info[type].backend = backend_name(at::_fused_sdp_choice(q, k, v, mask, 0.0, plan.is_causal, scale, gqa_native));
    return at::scaled_dot_product_attention(q, k, v, mask, 0.0, plan.is_causal, scale, gqa_native);
#else
    (void)gqa_native;
    if (q.is_cuda() && c.backend_recorded.insert(type).second)
      info[type].backend = backend_name(at::_fused_sdp_choice(q, k, v, mask, 0.0, plan.is_causal, scale));
    return at::scaled_dot_product_attention(q, k, v, mask, 0.0, plan.is_causal, scale);
#endif
#else
    (void)gqa_native;
    if (c.backend_recorded.insert(type).second) info[type].backend = "math";  // explicit math below, by construction
    return math_attention(q, k, v, plan.mask, plan.is_causal, scale);
#endif
  }

  // q [R, W, H, D], k and v [R, W, KV, D]: the batch flattened to its tokens, documents by cumulative offsets.
  Tensor varlen_attention(const Tensor& q, const Tensor& k, const Tensor& v, const LayerPlan& plan, int64_t n_rep,
                          double scale, StepContext& c) const {
#if STEPCAST_HAS_VARLEN
    const Tensor& cu = c.cu_seqlens;
    auto flat = [](const Tensor& t) { return t.reshape({-1, t.size(2), t.size(3)}).contiguous(); };
    Tensor kf = flat(k), vf = flat(v);
    if (plan.expand_kv) {
      kf = repeat_kv_flat(kf, n_rep).contiguous();
      vf = repeat_kv_flat(vf, n_rep).contiguous();
    }
    return VarlenAttention::apply(flat(q), kf, vf, cu, c.max_segment, scale, plan.window, plan.varlen_flash);
#else
    (void)q; (void)k; (void)v; (void)plan; (void)n_rep; (void)scale; (void)c;
    throw InputError("attention 'varlen' needs LibTorch >= 2.5 with CUDA; this LibTorch is " +
                     std::string(TORCH_VERSION) + ". Violated constraint: --pack-attention block-mask");
#endif
  }

  Tensor attention(const AttentionBlock& b, const Tensor& x, StepContext& c) {
    const auto& s = b.spec;
    const int64_t rows = x.size(0), width = x.size(1);
    Tensor q = apply(b.q, x, c.training).view({rows, width, s.num_heads, s.head_dim});
    Tensor k = apply(b.k, x, c.training).view({rows, width, s.num_kv_heads, s.head_dim});
    Tensor v = s.has_v_proj ? apply(b.v, x, c.training).view({rows, width, s.num_kv_heads, s.head_dim}) : k;
    if (s.qk_norm) {
      q = rms_norm(q, b.q_norm, shape.rms_norm_eps);
      k = rms_norm(k, b.k_norm, shape.rms_norm_eps);
    }
    const Rope& rope = c.rope.at(s.type);
    q = apply_rope(q, rope).transpose(1, 2);
    k = apply_rope(k, rope).transpose(1, 2);
    if (family.v_norm) v = rms_norm(v, Tensor(), shape.rms_norm_eps);  // scale-free (Gemma-4)
    v = v.transpose(1, 2);
    const LayerPlan& plan = c.plan.at(s.type);
    const int64_t n_rep = s.num_heads / s.num_kv_heads;
    const double scale = family.attention_scale > 0 ? family.attention_scale
                                                    : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
    if (plan.varlen) {
      Tensor out = varlen_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), plan, n_rep, scale, c);
      return apply(b.o, out.reshape({rows, width, s.num_heads * s.head_dim}), c.training);
    }
    if (plan.expand_kv) {
      k = repeat_kv(k, n_rep);
      v = repeat_kv(v, n_rep);
    }
    Tensor out = sdpa(q, k, v, plan, !plan.expand_kv && n_rep > 1, scale, s.type, c);
    out = out.transpose(1, 2).reshape({rows, width, s.num_heads * s.head_dim});
    return apply(b.o, out, c.training);
  }

  Tensor dense_mlp(const Layer& l, const Tensor& x, bool training) const {
    return apply(l.down, act(apply(l.gate, x, training)) * apply(l.up, x, training), training);
  }

  // transformers' Gemma4TextRouter: scale-free RMSNorm, x scale x hidden^-0.5, projection, softmax, top-k,
  // renormalise, x per-expert scale. Qwen3-MoE / Mixtral (Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock): the
  // projection of the layer's input, softmax in fp32, top-k, renormalised where norm_topk_prob says so.
  std::pair<Tensor, Tensor> route(const MoeBlock& m, const Tensor& flat) const {
    if (!family.router_scales) {
      Tensor probs = torch::softmax(at::linear(flat, m.router_proj).to(torch::kFloat), -1);
      auto [weights, index] = probs.topk(shape.moe.top_k, -1);
      if (shape.moe.norm_topk_prob) weights = weights / weights.sum(-1, true);
      return {weights.to(flat.scalar_type()), index};
    }
    Tensor h = rms_norm(flat, Tensor(), shape.rms_norm_eps);
    if (m.router_scale.defined()) h = h * m.router_scale * std::pow(static_cast<double>(shape.hidden_size), -0.5);
    Tensor probs = torch::softmax(at::linear(h, m.router_proj), -1);
    auto [weights, index] = probs.topk(shape.moe.top_k, -1);
    weights = weights / weights.sum(-1, true);
    if (m.per_expert_scale.defined()) weights = weights * m.per_expert_scale.index_select(0, index.reshape(-1)).view_as(index);
    return {weights, index};
  }

  // transformers' eager experts: one gate_up / down GEMM pair per expert that got tokens, host syncs included.
  Tensor experts_loop(const MoeBlock& m, const Tensor& x, const Tensor& weights, const Tensor& index) const {
    Tensor out = torch::zeros_like(x);
    Tensor expert_mask, hit;
    {
      torch::NoGradGuard no_grad;
      expert_mask = torch::one_hot(index, shape.moe.num_experts).permute({2, 1, 0});  // [E, K, T]
      hit = expert_mask.sum({-1, -2}).gt(0).nonzero().reshape(-1).to(torch::kCPU);
    }
    const auto* experts = hit.data_ptr<int64_t>();
    for (int64_t i = 0; i < hit.numel(); ++i) {
      const int64_t e = experts[i];
      std::vector<Tensor> where = torch::where(expert_mask[e]);
      const Tensor& top_pos = where[0];
      const Tensor& token = where[1];
      std::vector<Tensor> gate_up = at::linear(x.index_select(0, token), m.gate_up[e]).chunk(2, -1);
      Tensor h = act(gate_up[0]) * gate_up[1];
      Tensor y = at::linear(h, m.down[e]) * weights.index({token, top_pos}).unsqueeze(-1);
      out.index_add_(0, token, y.to(out.scalar_type()));
    }
    return out;
  }

  // Tokens sorted by expert, two grouped GEMMs (bf16, int32 cumulative offsets), one scatter-add.
  Tensor experts_grouped(const MoeBlock& m, const Tensor& x, const Tensor& weights, const Tensor& index) const {
#if STEPCAST_HAS_GROUPED_MM
    const int64_t k = shape.moe.top_k;
    Tensor flat = index.reshape(-1);
    auto sorted = flat.sort();
    Tensor perm = std::get<1>(sorted);
    Tensor token = torch::div(perm, k, "floor");
    Tensor offsets = torch::bincount(flat, {}, shape.moe.num_experts).cumsum(0).to(torch::kInt);
    Tensor xs = x.index_select(0, token);
    std::vector<Tensor> gate_up = at::_grouped_mm(xs, m.gate_up.transpose(-2, -1), offsets).chunk(2, -1);
    Tensor h = act(gate_up[0]) * gate_up[1];
    Tensor y = at::_grouped_mm(h, m.down.transpose(-2, -1), offsets);
    y = y * weights.reshape(-1).index_select(0, perm).unsqueeze(-1);
    return torch::zeros_like(x).index_add(0, token, y.to(x.scalar_type()));
#else
    (void)m; (void)x; (void)weights; (void)index;
    throw InputError("tier experts 'grouped' needs at::_grouped_mm (LibTorch >= 2.9); this LibTorch is " +
                     std::string(TORCH_VERSION) + ". Violated constraint: use experts 'loop'");
#endif
  }

  // Layer `i`, gathered first when the layers are sharded: the full weights die with this run's graph.
  Tensor run_layer(size_t i, const Tensor& x, StepContext& c, const Tier& tier) {
    if (!sharding.gather) return layer_forward(layers[i], x, c, tier);
    Layer full = layers[i];
    size_t k = 0;
    for_each_frozen(full, [&](Tensor& t) { t = sharding.gather(t, full_sizes[i][k++]); });
    return layer_forward(full, x, c, tier);
  }

  void shard_layers(LayerSharding s) {
    if (sharding.gather) throw Error("harness: the layers are sharded already (Model::shard_layers runs once)");
    std::map<const c10::TensorImpl*, Tensor> shard_of_full;
    full_sizes.assign(layers.size(), {});
    for (size_t i = 0; i < layers.size(); ++i) {
      for_each_frozen(layers[i], [&](Tensor& t) {
        full_sizes[i].push_back(t.sizes().vec());
        Tensor shard = s.shard(t);
        shard_of_full[t.unsafeGetTensorImpl()] = shard;
        t = shard;
      });
    }
    for (auto& [name, t] : params)  // the table holds the same tensors: the full ones must go from it too
      if (auto it = shard_of_full.find(t.unsafeGetTensorImpl()); it != shard_of_full.end()) t = it->second;
    sharding = std::move(s);
  }

  Tensor layer_forward(const Layer& l, const Tensor& x, StepContext& c, const Tier& tier) {
    switch (family.block) {
      case model::BlockLayout::pre_norm: return pre_norm_layer(l, x, c, tier);
      case model::BlockLayout::gemma4_sandwich: return gemma4_layer(l, x, c, tier);
      case model::BlockLayout::sandwich:
      case model::BlockLayout::post_norm:
      case model::BlockLayout::parallel_residual: break;  // refused when built (refuse_unbuilt)
    }
    return x;
  }

  // transformers' Qwen2MoeSparseMoeBlock: shared_expert(x) * sigmoid(shared_expert_gate(x)), added to the routed
  // experts' output; `x` is the post-attention norm's output, as the router's.
  Tensor shared_expert(const MoeBlock& m, const Tensor& x, bool training) const {
    Tensor y = apply(m.shared_down, act(apply(m.shared_gate, x, training)) * apply(m.shared_up, x, training), training);
    return torch::sigmoid(apply(m.shared_expert_gate, x, training)) * y;
  }

  // Llama: x + attn(norm(x)), then h + mlp(norm(h)); on a layer with experts (Qwen3-MoE, Mixtral) the
  // routed experts take the MLP's place, plus Qwen2-MoE's gated shared expert.
  Tensor pre_norm_layer(const Layer& l, const Tensor& x, StepContext& c, const Tier& tier) {
    const double eps = shape.rms_norm_eps;
    Tensor h = x + attention(l.attn, rms_norm(x, l.norm("input_layernorm"), eps), c);
    Tensor normed = rms_norm(h, l.norm("post_attention_layernorm"), eps);
    if (!l.has_moe) return h + dense_mlp(l, normed, c.training);
    Tensor flat = normed.reshape({-1, shape.hidden_size});
    auto [weights, index] = route(l.moe, flat);
    Tensor y = tier.experts == model::ExpertImpl::grouped ? experts_grouped(l.moe, flat, weights, index)
                                                          : experts_loop(l.moe, flat, weights, index);
    if (l.moe.has_shared) y = y + shared_expert(l.moe, flat, c.training);
    return h + y.reshape(h.sizes());
  }

  // transformers' Gemma4TextDecoderLayer.forward, norm for norm.
  Tensor gemma4_layer(const Layer& l, const Tensor& x, StepContext& c, const Tier& tier) {
    const double eps = shape.rms_norm_eps;
    Tensor residual = x;
    Tensor h = rms_norm(attention(l.attn, rms_norm(x, l.norm("input_layernorm"), eps), c),
                        l.norm("post_attention_layernorm"), eps);
    h = residual + h;
    residual = h;
    Tensor m = l.has_mlp ? dense_mlp(l, rms_norm(h, l.norm("pre_feedforward_layernorm"), eps), c.training)
                         : torch::zeros_like(h);
    if (l.has_moe) {
      Tensor m1 = rms_norm(m, l.norm("post_feedforward_layernorm_1"), eps);
      Tensor flat = residual.reshape({-1, shape.hidden_size});
      auto [weights, index] = route(l.moe, flat);
      Tensor m2 = rms_norm(flat, l.norm("pre_feedforward_layernorm_2"), eps);
      m2 = tier.experts == model::ExpertImpl::grouped ? experts_grouped(l.moe, m2, weights, index)
                                                      : experts_loop(l.moe, m2, weights, index);
      m2 = rms_norm(m2.reshape(residual.sizes()), l.norm("post_feedforward_layernorm_2"), eps);
      m = m1 + m2;
    }
    h = residual + rms_norm(m, l.norm("post_feedforward_layernorm"), eps);
    if (l.layer_scalar.defined()) h = h * l.layer_scalar;
    return h;
  }

  // The cost model's rule for one layer (model::plan_layer_at): the mask path and K/V expansion that are
  // predicted are the ones run. sm 0: the backend is the dispatcher's to choose here (recorded below), not
  // predicted. Packed rows take their document attention's path; only varlen needs the device's sm, which
  // decides whether a varlen kernel exists at all (docs/planner.md).
  model::LayerPlan layer_rule(const Batch& b, const Tier& tier, const model::AttentionSpec& spec) const {
    if (!b.packed()) return model::plan_layer_at(tier, spec, b.padded, 0, b.width);
    model::MicroBatch mb;
    mb.rows = b.rows;
    mb.width = b.width;
    mb.packed = true;
    mb.attention = b.attention;
    const model::AttentionPath path = model::attention_path(mb);
    return model::plan_layer_at(tier, spec, path, path == model::AttentionPath::varlen ? sm : 0, b.width);
  }

  // A packed row's explicit mask is block-diagonal (documents apart) unless documents attend to each other.
  Tensor explicit_mask_for(const Batch& b, int64_t window) const {
    if (b.packed() && b.attention != model::DocumentAttention::cross) return document_mask(b, window);
    return attention_mask(b.rows, b.width, window, opt.device);
  }

  void plan(const Batch& b, const Tier& tier, StepContext& c) {
    info.clear();
    c.cu_seqlens = b.cu_seqlens;
    c.max_segment = b.max_segment;
    const Tensor positions = b.packed() ? b.positions : torch::arange(b.width, torch::TensorOptions().device(opt.device));
    for (const auto& spec : shape.layers) {
      if (c.plan.count(spec.type)) continue;
      c.rope[spec.type] = make_rope(spec, positions, opt.dtype, opt.device);
      const model::LayerPlan rule = layer_rule(b, tier, spec);
      const bool explicit_mask = rule.explicit_mask && !rule.varlen;
      LayerPlan p;
      p.varlen = rule.varlen;
      p.varlen_flash = rule.backend == model::Backend::flash;
      p.window = spec.window;
      p.is_causal = !explicit_mask && !rule.varlen;
      if (explicit_mask) p.mask = explicit_mask_for(b, spec.window);
#if STEPCAST_HAS_SDPA_GQA
      p.expand_kv = rule.expand_kv;
#else
      p.expand_kv = true;  // no enable_gqa before LibTorch 2.5
#endif
      c.plan[spec.type] = p;
      LayerTypeInfo& li = info[spec.type];
      li.mask_path = p.varlen ? "varlen" : explicit_mask ? "explicit" : "is_causal";
      li.gqa_expanded = p.expand_kv && spec.num_heads != spec.num_kv_heads;
      li.backend = p.varlen ? (p.varlen_flash ? "flash" : "efficient") : "not-queried";
    }
  }

  Tensor body(const Batch& b, const Tier& tier) {
    apply_attention_backend(tier);
    shapes_run.emplace(static_cast<int64_t>(b.rows.size()), b.width);
    ++forwards;
    ctx = std::make_unique<StepContext>();
    StepContext& c = *ctx;
    c.training = torch::GradMode::is_enabled();
    plan(b, tier, c);
    Tensor x = torch::embedding(embed, b.input_ids);
    if (family.scaled_embedding) x = x * std::sqrt(static_cast<double>(shape.hidden_size));
    // transformers' enable_input_require_grads: without it a frozen embedding would cut the graph and the
    // first checkpointed layer's adapters would get no gradient.
    if (c.training) x.requires_grad_(true);
    for (size_t i = 0; i < layers.size(); ++i) {
      if (checkpointing && c.training) {
        c.segments.emplace_back([this, i, &c, tier](const Tensor& in) { return run_layer(i, in, c, tier); });
        x = CheckpointFunction::apply(x, &c.segments.back());
      } else {
        x = run_layer(i, x, c, tier);
      }
    }
    return rms_norm(x, final_norm, shape.rms_norm_eps);
  }

  Tensor softcapped_logits(const Tensor& h) const {
    Tensor logits = at::linear(h, output_weight()).to(torch::kFloat);
    if (shape.final_logit_softcap > 0)
      logits = torch::tanh(logits / shape.final_logit_softcap) * shape.final_logit_softcap;
    return logits;
  }

  static Tensor shifted(const Tensor& labels) {  // transformers' ForCausalLMLoss: labels[:, 1:] then -100
    Tensor pad = torch::full({labels.size(0), 1}, -100, labels.options());
    return torch::cat({labels.narrow(1, 1, labels.size(1) - 1), pad}, 1);
  }

  Tensor ce(const Tensor& h, const Tensor& labels, const Tier& tier) {
    const int64_t vocab = shape.vocab_size;
    Tensor target = shifted(labels).reshape(-1);
    if (!tier.ce_chunked) {
      Tensor logits = softcapped_logits(h).view({-1, vocab});
      return at::cross_entropy_loss(logits, target, {}, at::Reduction::Mean, -100);
    }
    // Chunked: logits of `ce_chunk_tokens` tokens at a time, each chunk checkpointed so only one chunk's
    // fp32 logits live at once (forward and backward).
    Tensor flat = h.reshape({-1, shape.hidden_size});
    const int64_t n = flat.size(0);
    const int64_t chunk = std::max<int64_t>(1, opt.ce_chunk_tokens);
    if (!ctx) ctx = std::make_unique<StepContext>();
    Tensor total;
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t len = std::min(chunk, n - start);
      Tensor t = target.narrow(0, start, len);
      ctx->segments.emplace_back([this, t, vocab](const Tensor& in) {
        return at::cross_entropy_loss(softcapped_logits(in).view({-1, vocab}), t, {}, at::Reduction::Sum, -100);
      });
      Tensor part = torch::GradMode::is_enabled() && flat.requires_grad()
                        ? CheckpointFunction::apply(flat.narrow(0, start, len), &ctx->segments.back())
                        : ctx->segments.back()(flat.narrow(0, start, len));
      total = total.defined() ? total + part : part;
    }
    return total / target.ne(-100).sum().clamp_min(1).to(torch::kFloat);
  }
};

Model::Model(const model::ModelShape& shape, const BuildOptions& options)
    : impl_(std::make_unique<Impl>(shape, options)) {}
Model::~Model() = default;

torch::Tensor Model::loss(const Batch& batch, const Tier& tier) {
  Tensor h = impl_->body(batch, tier);
  return impl_->ce(h, batch.labels, tier);
}

torch::Tensor Model::step(const Batch& batch, const Tier& tier, double loss_scale) {
  Tensor l = loss(batch, tier);
  if (loss_scale == 1.0) {
    l.backward();
  } else {
    (l * loss_scale).backward();
  }
  impl_->ctx.reset();  // masks, RoPE tables and segments: back to the baseline
  return l.detach();
}

torch::Tensor Model::hidden(const Batch& batch, const Tier& tier) {
  torch::NoGradGuard no_grad;
  Tensor h = impl_->body(batch, tier);
  impl_->ctx.reset();
  return h;
}

torch::Tensor Model::logits(const Batch& batch, const Tier& tier) {
  torch::NoGradGuard no_grad;
  Tensor h = impl_->body(batch, tier);
  impl_->ctx.reset();
  return impl_->softcapped_logits(h);
}

torch::Tensor Model::ce_loss(const torch::Tensor& hidden, const torch::Tensor& labels, const Tier& tier) {
  return impl_->ce(hidden, labels, tier);
}

std::vector<std::pair<std::string, torch::Tensor>> Model::named_parameters() const { return impl_->params; }

int64_t Model::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, t] : impl_->params) n += t.numel();
  return n;
}

std::vector<torch::Tensor> Model::adapter_parameters() const {
  std::vector<Tensor> out;
  for (const auto& a : impl_->adapters) {
    out.push_back(a.a);
    out.push_back(a.b);
  }
  return out;
}

int64_t Model::lora_modules() const { return static_cast<int64_t>(impl_->adapters.size()); }

void Model::zero_grad() {
  for (auto& a : impl_->adapters) {
    a.a.mutable_grad().reset();
    a.b.mutable_grad().reset();
  }
  impl_->ctx.reset();
}

void Model::set_checkpointing(bool on) { impl_->checkpointing = on; }
void Model::set_adapters_enabled(bool on) { impl_->adapters_on = on; }
void Model::shard_layers(LayerSharding sharding) { impl_->shard_layers(std::move(sharding)); }
const std::map<std::string, LayerTypeInfo>& Model::layer_info() const { return impl_->info; }
const model::ModelShape& Model::shape() const { return impl_->shape; }
bool Model::seen(int64_t rows, int64_t width) const { return impl_->shapes_run.count({rows, width}) > 0; }
int64_t Model::forwards() const { return impl_->forwards; }
const BuildOptions& Model::options() const { return impl_->opt; }

}  // namespace stepcast::harness
