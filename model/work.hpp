#pragma once
// The forward work of one token through a shape, by the category a step model prices separately: GEMM
// FLOPs of the frozen base, of the LoRA adapters, of the router, of the routed and the shared experts and
// of MLA's latent projections; attention FLOPs per layer shape; and the bytes that memory-bound kernels
// (norms, activations, residual adds, RoPE) move. Forward only: the step model applies its own backward and
// recompute multiples (docs/method.md). Every figure walks the family table (model::expand_modules), so a
// family's fused or latent modules are priced as they are built (docs/families.md).
#include <cstdint>
#include <string>
#include <vector>

#include "model/counts.hpp"
#include "model/shape.hpp"

namespace stepcast::model {

// Forward work per processed token (2 FLOPs per multiply-add).
struct TokenWork {
  double dense_gemm_flops = 0;     // attention q/k/v/o (or fused qkv), dense MLP, LM head
  double lora_gemm_flops = 0;      // x A then (x A) B over every wrapped module: 2 rank (in + out)
  double router_flops = 0;         // router projections (and Qwen2-MoE's shared-expert gate)
  double expert_gemm_flops = 0;    // the top-k routed experts' MLPs
  double shared_expert_flops = 0;  // shared experts, every token
  double latent_proj_flops = 0;    // MLA: q_a/q_b (or q), kv_a_proj_with_mqa, kv_b_proj
  double elementwise_bytes = 0;    // bytes read and written by norms, activations, residual adds and RoPE
  double norm_bytes = 0;           // of those, the norms' (RMSNorm/LayerNorm, q/k, MLA latent): one pass each
  // The routed experts (docs/method.md, "Experts by tokens per expert"): top_k (hidden + expert width) elements per
  // MoE layer, what the dispatch moves; and the share of elementwise_bytes that is their gated activations (shared
  // experts excluded), which the experts' roofline prices with them instead.
  double routed_elements = 0;
  double routed_activation_bytes = 0;

  double gemm_flops() const {
    return dense_gemm_flops + lora_gemm_flops + router_flops + expert_gemm_flops + shared_expert_flops +
           latent_proj_flops;
  }
};

// The work of one token: `lora` as plan_lora gives it (rank 0 or no targets: no adapter work), activations
// in `activation_bytes` per element (2 for bfloat16).
TokenWork token_work(const ModelShape& shape, const ModuleTable& modules, const LoraPlan& lora,
                     int64_t activation_bytes = 2);
TokenWork token_work(const ModelShape& shape, const LoraPlan& lora, int64_t activation_bytes = 2);

// One attention layer shape and how many layers have it.
struct AttentionWork {
  std::string type;       // "sliding_attention", "full_attention", "chunked_attention"
  int64_t layers = 0;
  AttentionSpec spec;     // heads, qk head dim (MLA: nope + rope), v head dim, window, chunk

  // FLOPs of QK^T and PV per (query, key) pair on one layer: 2 heads (qk_dim + v_dim).
  double flops_per_pair() const;
  // Forward FLOPs of one row of width W on all `layers` layers of this shape.
  double row_flops(int64_t width, ScoreWork work) const;
};

std::vector<AttentionWork> attention_work(const ModelShape& shape);

}  // namespace stepcast::model
