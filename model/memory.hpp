#pragma once
// The memory peak as an itemised table (llm.c's fill_in_activation_sizes): one row per cost, so a
// prediction can be compared line by line with what the allocator saw.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/features.hpp"
#include "model/memory_rates.hpp"
#include "model/quantization.hpp"

namespace stepcast::model {

struct MemoryItem {
  std::string name;
  int64_t bytes = 0;
  std::string lifetime;  // "run" (weights, adapters), "step" (activations), "layer" (transient workspace)
};

struct MemoryTable {
  std::vector<MemoryItem> items;
  int64_t total_bytes() const;
  double total_gib() const { return static_cast<double>(total_bytes()) / 1073741824.0; }
};

// The table for one micro-batch from its memory features and the memory coefficients (by MemoryTerm).
MemoryTable memory_table(const FeatureMaker& features, const MemoryFeatures& y, const std::array<double, kMemoryTerms>& m);

// What a micro-batch's memory depends on besides its shape.
struct TrainingSetup {
  int64_t lora_rank = 16;                 // 0 = full fine-tuning
  std::vector<std::string> lora_targets;  // empty = the shape's own (default_lora_targets(shape))
  bool full = false;                      // every parameter trains (--full), as with lora_rank 0
  bool ce_chunked = false;                // the loss over a chunk of tokens at a time (the harness: 1024)
  bool padded = false;                    // padded or packed rows: every layer type gets an explicit mask
  // Where final_logit_softcapping is applied. transformers' *ForCausalLM forward caps lm_head's output in the
  // model's dtype, before its loss casts to fp32 (modeling_gemma2.py, modeling_gemma4.py): tanh saves a bf16
  // copy (activation_bytes per logit). The harness caps after the fp32 cast (harness/model.cpp
  // softcapped_logits): 4 bytes. Measured: Gemma-2 9B at 2 x 8192 on transformers + peft holds 59.8 GiB of
  // activations; the fp32 rule said 67.4, the model-dtype rule 59.9 (docs/families.md, "Whole runs").
  bool softcap_in_model_dtype = false;
  int64_t activation_bytes = 2;           // bfloat16 activations
  // A recomputed layer as transformers + peft run it (peft_layer_working_set_bytes) rather than as the harness
  // does (layer_working_set_bytes): set for the hf_peft stack.
  bool peft_layers = false;
  double lora_dropout = 0.05;             // peft's lora_dropout: > 0 saves a mask and an fp32 copy per adapter
  bool lora_autocast = false;             // the step under torch.autocast(bf16): adapters save bf16 inputs
  AdapterDtype lora_dtype = AdapterDtype::float32;  // bf16 adapters: no fp32 copies, bf16 AdamW states
  // Gradient checkpointing. false: every layer keeps what autograd saved in its forward until its backward
  // (transformers + peft: peft_saved_bytes_per_token; the harness: its working set), docs/method.md, "Checkpointing off".
  bool recompute = true;
  // Every layer through eager_attention_forward (TierRules::eager_attn), as AttentionSpec::eager marks one family's.
  bool eager_attention = false;
  BaseQuant base_quant = BaseQuant::none;  // QLoRA: the base's nn.Linear weights in 4 bits (model/quantization.hpp)
};

// The base model's weights: every parameter in the weights' dtype, or under QLoRA the 4-bit layers packed with their
// absmax (tied embeddings once), plus the one dense copy a 4-bit layer's call dequantizes while its GEMM runs.
double base_weight_bytes(const ModelShape& shape, const ModuleTable& modules, BaseQuant quant);

// The allocator-level constants of the architecture memory model. Defaults: least squares over the 52 H200
// harness records of Gemma-4 26B-A4B without the math backend at 16384 (measurements/records/
// h200-gemma-4-26b-a4b.jsonl and -gqa-expand.jsonl), peak_gib less weights, LoRA state and saved layer
// inputs: RMS 0.016 GiB, largest error 0.035 GiB (0.06 % of the peak); docs/families.md, "Memory from the
// architecture". One vocabulary cannot tell a per-token allocator share from the logit bytes: it is in them.
struct ArchitectureMemoryConstants {
  // Per (token x vocab) on the full loss path, derived from the stack (harness/model.cpp `ce`, LibTorch's
  // autograd): the bf16 logits are cast to fp32 and freed (the cast's backward keeps nothing); cross_entropy
  // is log_softmax + nll_loss, and log_softmax saves its fp32 output (4 bytes). The peak is in its backward:
  // the saved output, the fp32 gradient nll_loss hands it (4) and the fp32 gradient it returns (4) = 12 bytes.
  // The 0.05 above 12 is the Gemma-4 fit's residual (a per-token allocator share that one vocabulary cannot
  // separate). Large-vocabulary families measure 12.1 (docs/families.md, "Measured").
  double logit_bytes = 12.05;
  // Where the config sets final_logit_softcapping (Gemma-2, Gemma-4) and the stack caps in fp32 (the harness):
  // tanh(logits / cap) * cap, and tanh saves its output for its backward: one more fp32 copy alive through the
  // loss (4 bytes). With it the Gemma-4 records' fitted 16.05 is 12.05 + 4. (transformers caps in the model's
  // dtype: TrainingSetup::softcap_in_model_dtype.)
  double softcap_logit_bytes = 4.0;
  double chunked_logit_bytes = 8.07;   // per (token x vocab) on the chunked path (one 2 x 4096 record: the
                                       // harness's chunked loss still holds 8 bytes per logit of the batch)
  double mask_bytes = 1.20;            // per element of each explicit R x W x W boolean mask
};

ArchitectureMemoryRates architecture_rates(const ModelShape& shape, const ModuleTable& modules,
                                           const TrainingSetup& setup, const ArchitectureMemoryConstants& constants = {});
ArchitectureMemoryRates architecture_rates(const ModelShape& shape, const TrainingSetup& setup,
                                           const ArchitectureMemoryConstants& constants = {});

// Peak memory of one micro-batch of `rows` x `width` under gradient checkpointing, from the architecture:
// weights (the config's dtype), what trains (LoRA adapters in fp32 with gradients and AdamW states, or every
// parameter's gradient and AdamW states in the weights' dtype), every layer's saved input, the larger of the
// logits/loss path and one layer's recompute working set (attention projections, MLP, top-k expert and
// shared-expert intermediates), and the explicit masks.
MemoryTable architecture_memory(const ModelShape& shape, const TrainingSetup& setup, int64_t rows, int64_t width,
                                const ArchitectureMemoryConstants& constants = {});

// Bytes of every tensor a run keeps from start to end, in the order a run allocates them: the weights (model
// build), the adapters (the LoRA wrap), their gradients (the first backward) and AdamW's two states (the first
// optimizer step); under full fine-tuning, gradients and states shaped like the weights. For the allocator's
// footprint (model/allocator.hpp).
std::vector<int64_t> persistent_tensor_bytes(const ModelShape& shape, const TrainingSetup& setup);

// Bytes per token that autograd keeps from the forward to the backward of every decoder layer (summed) and the
// final norm, as transformers + peft run a step without gradient checkpointing; `targets` the adapters' modules
// (setup's, resolved), `full` whether every parameter trains.
double peft_saved_bytes_per_token(const ModelShape& shape, const ModuleTable& modules, const TrainingSetup& setup,
                                  const std::vector<std::string>& targets, bool full);

// Bytes per token of one decoder layer's recompute working set (the largest layer of the shape).
double layer_working_set_bytes(const ModelShape& shape, int64_t activation_bytes);
// The same for transformers + peft (docs/families.md, "The layer a run recomputes"): per token, the largest over
// layers of what one layer allocates in its recompute and still holds when its last adapter runs, the peak of a
// family whose logits path is small (Mistral-7B: 475.5 KiB measured, 474.0 by this rule).
AdapterPath adapter_path(const TrainingSetup& setup);  // model/adapters.hpp, of lora_autocast and lora_dtype
// `part` attention: what the same layer holds of its attention half alone (the input norm's fp32 input, q, k, v,
// the attention output and o_proj's, the attention projections' adapters), as when eager scores peak in the
// attention's backward.
enum class LayerPart { whole, attention };
double peft_layer_working_set_bytes(const ModelShape& shape, const ModuleTable& modules,
                                    const std::vector<std::string>& lora_targets, double lora_dropout,
                                    int64_t activation_bytes, AdapterPath path = AdapterPath::fp32,
                                    LayerPart part = LayerPart::whole);

}  // namespace stepcast::model
