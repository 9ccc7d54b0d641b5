// The step work per token by category (model/work.hpp), against hand counts on tiny configs.
#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/work.hpp"
#include "temp_file.hpp"

using namespace stepcast;

namespace {
model::ModelShape tiny_llama() { return io::load_model_config(STEPCAST_TEST_DATA "/configs/tiny-llama.json"); }
}  // namespace

TEST_CASE("a dense model's work: base GEMMs, LoRA GEMMs and elementwise bytes by hand", "[work]") {
  // tiny-llama: h 64, I 96, 4 heads and 2 K/V heads of 16, 2 layers, vocab 128, untied.
  const auto s = tiny_llama();
  const auto w = model::token_work(s, model::plan_lora(s, {"q_proj", "v_proj"}, 4));
  const double attention = 2.0 * (64 * 64 + 2 * 64 * 32 + 64 * 64);  // q, k, v, o
  const double mlp = 2.0 * 3 * 64 * 96;
  CHECK(w.dense_gemm_flops == Approx(2 * attention + 2 * mlp + 2.0 * 64 * 128));
  CHECK(w.lora_gemm_flops == Approx(2.0 * 2 * (4 * (64 + 64) + 4 * (64 + 32))));  // x A, (x A) B
  CHECK(w.expert_gemm_flops == 0);
  CHECK(w.latent_proj_flops == 0);
  // Per layer: 2 norms and 2 residual adds over 64, RoPE on 6 heads of 16, SiLU(gate) * up over 1.5 x 96;
  // the final norm 64; each element read and written once in bfloat16.
  const double elements = 2 * (2 * 64 + 2 * 64 + 6 * 16 + 1.5 * 96) + 64;
  CHECK(w.elementwise_bytes == Approx(2 * 2 * elements));
  CHECK(model::token_work(s, model::plan_lora(s, {"q_proj"}, 0)).lora_gemm_flops == 0);
}

TEST_CASE("MoE work: top-k routed experts, shared experts and the router, per token", "[work][moe]") {
  testing::TempFile f(R"({"model_type": "qwen2_moe", "hidden_size": 8, "vocab_size": 10, "intermediate_size": 6,
    "num_hidden_layers": 2, "num_attention_heads": 2, "num_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 3, "shared_expert_intermediate_size": 5, "mlp_only_layers": [0]})",
                      ".json");
  const auto s = io::load_model_config(f.path());
  const auto w = model::token_work(s, model::plan_lora(s, {}, 0));
  CHECK(w.expert_gemm_flops == Approx(2.0 * 2 * 3 * 8 * 3));  // one MoE layer, top-2 of gate, up, down
  CHECK(w.shared_expert_flops == Approx(2.0 * 3 * 8 * 5));
  CHECK(w.router_flops == Approx(2.0 * (8 * 4 + 8 * 1)));    // router and shared_expert_gate
  CHECK(w.dense_gemm_flops == Approx(2.0 * (2 * 4 * 8 * 8 + 3 * 8 * 6 + 8 * 10)));
}

TEST_CASE("MLA attention work uses nope + rope for q.k and v_head_dim for p.v", "[work][mla]") {
  const auto s = io::load_model(STEPCAST_SCENARIOS "/models/deepseek-v2-lite.json");
  const auto groups = model::attention_work(s);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].layers == 27);
  CHECK(groups[0].flops_per_pair() == Approx(2.0 * 16 * (192 + 128)));
  CHECK(groups[0].row_flops(8, model::ScoreWork::causal) == Approx(27 * 2.0 * 16 * 320 * 36));
  const auto w = model::token_work(s, model::plan_lora(s, {"kv_b_proj"}, 8));
  CHECK(w.latent_proj_flops == Approx(27 * 2.0 * (2048 * 3072 + 2048 * 576 + 512 * 4096)));
  CHECK(w.lora_gemm_flops == Approx(27 * 2.0 * 8 * (512 + 4096)));
}

TEST_CASE("a sliding window and chunks bound the attention work of long rows", "[work]") {
  const auto gemma2 = io::load_model(STEPCAST_SCENARIOS "/models/gemma-2-9b.json");
  const auto groups = model::attention_work(gemma2);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].type == "sliding_attention");
  CHECK(groups[0].layers == 21);
  // Beyond the window the sliding layers grow linearly: doubling a 16384 row doubles their work minus the
  // shared first-window triangle, while the global layers' work grows four-fold.
  const double s1 = groups[0].row_flops(16384, model::ScoreWork::causal_window);
  const double s2 = groups[0].row_flops(32768, model::ScoreWork::causal_window);
  CHECK(s2 / s1 == Approx((4096.0 * 4097 / 2 + (32768 - 4096) * 4096.0) / (4096.0 * 4097 / 2 + (16384 - 4096) * 4096.0)));
  const double g1 = groups[1].row_flops(16384, model::ScoreWork::causal_window);
  CHECK(groups[1].row_flops(32768, model::ScoreWork::causal_window) / g1 == Approx(32768.0 * 32769 / (16384.0 * 16385)));
}
