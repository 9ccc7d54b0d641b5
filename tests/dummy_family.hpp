#pragma once
// A made-up family for tests: what adding a family takes (docs/families.md), one table entry plus its config
// (tests/data/configs/tiny-dummy.json). Llama-like wiring with Qwen2-style q/k/v biases, Qwen3-style q/k norms,
// a Mistral-style window on its sliding layers, tied embeddings and GELU: every flag differs from Llama's.
#include "model/family.hpp"

namespace stepcast::testing {

inline void register_dummy_family() {
  static const bool registered = [] {
    model::Family f;
    f.name = "stepcast_dummy";
    f.model_types = {"stepcast_dummy"};
    f.schema = model::ConfigSchema::llama;
    f.block = model::BlockLayout::pre_norm;
    f.qk_norm = true;
    f.qkv_bias_default = true;
    f.o_bias_with_qkv = false;
    f.tie_default = true;
    f.activation_default = "gelu_pytorch_tanh";
    model::register_family(f);
    return true;
  }();
  (void)registered;
}

}  // namespace stepcast::testing
