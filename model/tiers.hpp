#pragma once
// Kernel tiers: a label (Contract 1's `tier`) plus what it means for the cost model: which SDPA
// backend each attention layer takes on each mask path, how much of the score matrix that backend
// computes, and how the experts run. Coefficients are kept per tier; the rules below let one set of
// coefficients predict the penalty when padding switches a layer off its `is_causal` path.
#include <cstdint>
#include <string>

#include "model/counts.hpp"
#include "model/shape.hpp"

namespace stepcast::model {

enum class Backend { flash, efficient, cudnn, math };
enum class ExpertImpl { loop, grouped };

std::string backend_name(Backend b);

// What the device is, as far as kernel choice and memory capacity go.
struct GpuInfo {
  std::string name;
  int sm = 0;                 // compute capability x10 (90 = Hopper, 120 = consumer/workstation Blackwell); 0 = unknown
  double capacity_gib = 0;    // device memory the allocator can use; 0 = unknown
};

// Known devices by the driver's name. Capacities: what torch.cuda.get_device_properties reports
// (H200: ~139.8 GiB of its 141 GB; RTX PRO 6000 Blackwell: ~95.0 GiB of 96 GB; H100 80 GB: ~79.1 GiB).
GpuInfo gpu_info(const std::string& name);

struct TierRules {
  std::string label;
  bool known = false;           // false: an unknown label; every term free, HF-like mask semantics assumed
  // "auto" lets the SDPA dispatcher choose (rules below); otherwise the one backend enabled.
  bool auto_backend = true;
  Backend forced = Backend::efficient;
  // How K/V heads meet the query heads (the harness's tier extras, harness/tier.hpp): `hf` passes
  // enable_gqa when there is no mask and expands K/V (repeat_kv) when there is one; `expand` always
  // expands (transformers 5.17 on Gemma-4, traced); `native` always passes enable_gqa.
  enum class Gqa { hf, expand, native };
  Gqa gqa = Gqa::hf;
  bool enable_gqa = false;      // kept for callers; true when gqa == native
  bool mask_always = false;     // `mask-explicit`: never the is_causal fast path
  bool ce_chunked = false;      // `ce-chunked`: memory-lean cross-entropy
  // SDPA has no window argument: a sliding layer gets an explicit mask (so no is_causal path and,
  // for a kernel that cannot skip masked tiles, W x W work). A window-aware kernel does W*min(W,window).
  bool honours_window = false;
  ExpertImpl experts = ExpertImpl::loop;
  bool recompute = false;       // gradient checkpointing: one more forward per backward
  int kernel_sm = 0;            // arch the kernels were built for (the seed: sm80 CUTLASS on sm_120); 0 = native
};

// Parses a label. The harness's grammar `<attention>/<experts>[/<extra>...]` (attention sdpa-auto,
// sdpa-flash, sdpa-efficient, sdpa-cudnn, sdpa-math; experts loop or grouped; extras ce-chunked,
// mask-explicit, gqa-expand, gqa-native), plus `hf-sdpa-<backend>[-sm<NN>][+ckpt]/<experts>` for
// Hugging Face stacks with a forced backend built for an older arch (the seed's sm80 CUTLASS kernels on
// sm_120). Anything else is unknown (known = false) and is still accepted.
TierRules tier_from_label(const std::string& label);

// What one attention layer does for one micro-batch.
struct LayerPlan {
  Backend backend = Backend::efficient;
  bool explicit_mask = false;
  ScoreWork work = ScoreWork::causal;
};

// The SDPA dispatcher's choice (PyTorch 2.x priority on sm90+: cuDNN, flash, efficient, math), from
// the facts in DESIGN.md: flash rejects explicit masks and head_dim > 256; efficient takes masks and
// head_dim 512 but not enable_gqa; cuDNN takes masks, head_dim <= 256 on sm90 (<= 128 on
// sm120), not before sm90; math takes everything.
Backend choose_backend(const AttentionSpec& layer, bool explicit_mask, bool enable_gqa, int sm);

// The plan of one layer: explicit mask when the batch is padded or packed, or the layer has a window
// shorter than the width that the kernel cannot be told about (transformers' sdpa mask logic: a
// sliding layer whose window covers the width keeps is_causal); work from the backend and the mask.
LayerPlan plan_layer(const TierRules& tier, const AttentionSpec& layer, bool padded_or_packed, int sm,
                     bool wider_than_window = true);

}  // namespace stepcast::model
