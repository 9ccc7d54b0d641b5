#pragma once
// The real model in LibTorch, allocated by walking the same parameter table as `stepcast describe`
// (model::expand_modules), so every tensor has the counted name and shape, and wired as the shape's family
// says (model/family.hpp: the block layout, v_norm, the attention scale, the embedding scale). Gemma-4 text
// (sliding + global attention, dense MLP beside 128 routed experts, logit softcap) and Llama-like configs.
// Each layer's mask path and K/V expansion come from the cost model's rule (model::plan_layer_at).
// Training as transformers + peft train (docs/harness.md): frozen bf16 base weights from a seeded random init created directly on the device, LoRA adapters
// (B = 0 at init, fp32 like peft's autocast_adapter_dtype), gradient checkpointing that recomputes each
// decoder layer in backward (reentrant, like torch.utils.checkpoint), fp32 logits before softcap and CE.
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/tier.hpp"
#include "model/batch.hpp"
#include "model/shape.hpp"

namespace stepcast::harness {

struct LoraOptions {
  int64_t rank = 16;  // 0 = no adapters (every parameter frozen: a forward/backward of activations only)
  double alpha = 32;
  double dropout = 0.05;
  std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  bool fp32 = true;  // peft casts bf16 adapters to fp32 (autocast_adapter_dtype=True) and the input with them
};

struct BuildOptions {
  LoraOptions lora;
  bool checkpointing = true;
  uint64_t seed = 1234;
  torch::Device device = torch::kCPU;
  torch::Dtype dtype = torch::kBFloat16;
  double init_std = 0.02;           // transformers' initializer_range for Gemma-4 and Llama
  int64_t ce_chunk_tokens = 4096;   // the chunked CE tier: tokens per chunk of logits
};

// A right-padded micro-batch on the device. Labels are the inputs with pads set to -100 (ignored);
// the loss shifts them by one as transformers' ForCausalLMLoss does.
struct Batch {
  torch::Tensor input_ids;  // [R, W] int64
  torch::Tensor labels;     // [R, W] int64, -100 on pads
  std::vector<int64_t> rows;
  int64_t width = 0;
  bool padded = false;
  int64_t kept_tokens = 0;  // sum over rows of (length - 1): positions with a next-token label
  // Packed rows (make_packed_batch): each row's documents, and how they meet in attention. A row's pad tail
  // (a pack row wider than its documents) is one more segment, never a document. Empty: one document a row.
  std::vector<std::vector<int64_t>> documents;
  model::DocumentAttention attention = model::DocumentAttention::block_mask;
  torch::Tensor positions;    // [R, W] int64, restarting at 0 in each segment (RoPE); undefined when unpacked
  torch::Tensor segments;     // [R, W] int64, the segment index of each token, unique over the batch
  torch::Tensor cu_seqlens;   // [segments + 1] int32, cumulative segment lengths over the flattened batch
  int64_t max_segment = 0;    // the longest segment (the varlen kernels' max_seqlen)
  bool packed() const { return !documents.empty(); }
};

Batch make_batch(const std::vector<int64_t>& rows, int64_t width, int64_t vocab_size, uint64_t seed,
                 const torch::Device& device);

// Rows of several documents each (`documents[r]` adds up to row r's tokens, at most `width`), as TRL's
// DataCollatorWithFlattening gives them: positions restart at each document, and the first token of a
// document is not a label (its previous token is the last of another document). Tokens as make_batch's.
Batch make_packed_batch(const std::vector<std::vector<int64_t>>& documents, int64_t width, int64_t vocab_size,
                        uint64_t seed, const torch::Device& device, model::DocumentAttention attention);

// The block-diagonal causal mask [R, 1, W, W] of a packed batch, true where query i may attend key j: same
// segment, causal, within `window` keys (0 = unlimited). What transformers builds from restarting
// position_ids under sdpa; the pad tail attends to itself only, so no row is fully masked.
torch::Tensor document_mask(const Batch& batch, int64_t window);

// Boolean attention mask [R, 1, W, W], true where query i may attend key j: causal, within `window`
// keys (0 = unlimited) and not a pad key. A pad query also sees itself so that no row is fully masked
// (a fully masked row gives NaN in some SDPA kernels; pad outputs never reach the loss).
torch::Tensor attention_mask(const std::vector<int64_t>& rows, int64_t width, int64_t window,
                             const torch::Device& device);

// What one layer type got in the last forward: the mask path and the SDPA backend chosen
// (at::_fused_sdp_choice: 0 math, 1 flash, 2 efficient, 3 cuDNN), and whether K/V were expanded.
struct LayerTypeInfo {
  std::string mask_path;  // "is_causal", "explicit" or "varlen" (documents by cumulative offsets)
  std::string backend;    // "math", "flash", "efficient", "cudnn", "overrideable", or "not-queried"
  bool gqa_expanded = false;
};

// FSDP's full shard (harness/distributed.hpp): `shard` is applied once to every frozen tensor of every decoder
// layer and the model keeps only its result; `gather` makes the full tensor again (from the shard and the full
// sizes) each time that layer runs: its forward, and under checkpointing its recompute in backward. Gathered
// tensors live only as long as that run's graph holds them (none after checkpointing's no-grad forward). The
// embedding, final norm and LM head stay whole, as FSDP's root unit keeps them gathered for the whole step.
struct LayerSharding {
  std::function<torch::Tensor(const torch::Tensor& full)> shard;
  std::function<torch::Tensor(const torch::Tensor& shard, c10::IntArrayRef full_sizes)> gather;
};

class Model {
 public:
  Model(const model::ModelShape& shape, const BuildOptions& options);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Mean CE over kept tokens; the graph is kept for backward. Run that backward before the next forward of
  // this model: the checkpointed segments (and the masks they recompute with) live in the model until then.
  torch::Tensor loss(const Batch& batch, const Tier& tier);
  // One forward + backward (gradients accumulate into the adapters). Returns the loss, detached.
  // `loss_scale` multiplies the loss before backward (1 / accumulation in a real run); the returned loss
  // is unscaled.
  torch::Tensor step(const Batch& batch, const Tier& tier, double loss_scale = 1.0);
  // Final-norm hidden states [R, W, hidden] (no grad graph needed by callers: the CE probe detaches).
  torch::Tensor hidden(const Batch& batch, const Tier& tier);
  // Softcapped fp32 logits [R, W, vocab] (tests: the inert-adapter gate).
  torch::Tensor logits(const Batch& batch, const Tier& tier);
  // The CE alone on given hidden states (the isolated-CE probe).
  torch::Tensor ce_loss(const torch::Tensor& hidden, const torch::Tensor& labels, const Tier& tier);

  // Every parameter once (the tied embedding once), HF names ("layers.3.self_attn.q_proj.weight").
  std::vector<std::pair<std::string, torch::Tensor>> named_parameters() const;
  int64_t parameter_count() const;
  std::vector<torch::Tensor> adapter_parameters() const;  // lora_A, lora_B of every wrapped module
  int64_t lora_modules() const;
  void zero_grad();  // drops adapter (and any) gradients so memory returns to the baseline
  void set_checkpointing(bool on);
  void set_adapters_enabled(bool on);
  // Once, before any step: from then on named_parameters() and parameter_count() are this rank's shards.
  void shard_layers(LayerSharding sharding);
  const std::map<std::string, LayerTypeInfo>& layer_info() const;
  // Every rows x width this model has run a forward at (step, loss, hidden, logits), and how many forwards:
  // per-shape kernel plans (cuBLAS heuristics, SDPA and grouped-GEMM choices, RoPE tables) are built on the
  // first forward at a shape, which is what the first-seen probe and the run probe's `first_seen` observe.
  bool seen(int64_t rows, int64_t width) const;
  int64_t forwards() const;
  const model::ModelShape& shape() const;
  const BuildOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Sets the SDPA backend flags of at::globalContext() for a tier (all on for sdpa-auto).
void apply_attention_backend(const Tier& tier);

}  // namespace stepcast::harness
