// Every family a fine-tuner brings, read from its published config.json (scenarios/models/SOURCES.md) and
// counted against the published totals (docs/families.md, "describe against published totals").
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/memory.hpp"
#include "model/modules.hpp"
#include "model/work.hpp"

using namespace stepcast;

namespace {
model::ModelShape load(const std::string& name) { return io::load_model(STEPCAST_SCENARIOS "/models/" + name + ".json"); }

// A config no scenario ships (a published one with keys left out), read from a temporary file.
model::ModelShape load_text(const std::string& stem, const std::string& json) {
  struct Temp {
    std::filesystem::path path;
    ~Temp() { std::filesystem::remove(path); }
  } file{std::filesystem::temp_directory_path() / ("stepcast_" + stem + "_" + std::to_string(::getpid()) + ".json")};
  std::ofstream(file.path) << json;
  return io::load_model_config(file.path.string());
}
}  // namespace

TEST_CASE("describe's totals equal the published checkpoint totals, family by family", "[family][golden]") {
  struct Case {
    std::string model;
    std::string family;
    int64_t total;  // the safetensors total (transformers' num_parameters()), docs/families.md cites each
  };
  auto c = GENERATE(values<Case>({
      {"mistral-7b", "mistral", 7'241'732'096},
      {"mixtral-8x7b", "mixtral", 46'702'792'704},
      {"qwen3-30b-a3b", "qwen3_moe", 30'532'122'624},
      {"qwen1.5-moe-a2.7b", "qwen2_moe", 14'315'784'192},
      {"deepseek-v2-lite", "deepseek_v2", 15'706'484'224},
      {"gemma-2-9b", "gemma2", 9'241'705'984},
      {"phi-3.5-mini", "phi3", 3'821'079'552},
      {"phi-4", "phi3", 14'659'507'200},
      {"olmo-2-7b", "olmo2", 7'298'617'344},
      {"pythia-160m", "gpt_neox", 162'322'944},
      {"llama-3.2-1b", "llama", 1'235'814'400},  // tied embeddings: one 128k x 2048 table
      {"qwen2.5-1.5b", "qwen2", 1'543'714'304},  // tied embeddings, q/k/v biases
      // Granite-3.1-2B: no published safetensors total found here; the model card's 2.53 B, counted by hand:
      // a tied 49155 x 2048 table, 40 layers of (2 x 2048^2 + 2 x 2048 x 512 + 3 x 2048 x 8192 + 2 x 2048), a norm.
      {"granite-3.1-2b", "granite", 49155LL * 2048 + 40LL * (2 * 2048 * 2048 + 2 * 2048 * 512 + 3 * 2048 * 8192 + 2 * 2048) + 2048},
      // Granite-3.3-8B: the same by hand, a tied 49159 x 4096 table and a 12800-wide MLP.
      {"granite-3.3-8b", "granite", 49159LL * 4096 + 40LL * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12800 + 2 * 4096) + 4096},
      // SmolLM3-3B (the safetensors index's total_parameters, 3,075,098,624), by hand: a tied 128256 x 2048 table,
      // 36 layers of (q, o 2048^2; k, v 2048 x 512: 4 K/V heads of 128; 3 x 2048 x 11008; 2 norms), a norm. Its NoPE
      // layers change no count.
      {"smollm3-3b", "smollm3", 128256LL * 2048 + 36LL * (2 * 2048 * 2048 + 2 * 2048 * 512 + 3 * 2048 * 11008 + 2 * 2048) + 2048},
      // Olmo-3-7B (the Hub's safetensors total, 7,298,011,136), by hand: untied 100278 x 4096 embedding and head,
      // 32 layers of (q, k, v, o 4096^2 each: 32 K/V heads; 3 x 4096 x 11008; q_norm, k_norm over all 32 heads and the
      // two post-norms, 4096 each), a norm. The sliding window changes no count.
      {"olmo-3-7b", "olmo3", 2LL * 100278 * 4096 + 32LL * (4 * 4096 * 4096 + 3 * 4096 * 11008 + 4 * 4096) + 4096},
      // GLM-4-9B-0414 (the Hub's safetensors total, 9,400,279,040), by hand: untied 151552 x 4096 embedding and head,
      // 40 layers of (q 4096^2 + a 4096 bias; k, v 4096 x 256 + a 256 bias each: 2 K/V heads of 128; o 4096^2, no bias;
      // the fused gate_up 4096 x 2 x 13696; down 13696 x 4096; four norms of 4096), a norm.
      {"glm-4-9b", "glm4",
       2LL * 151552 * 4096 +
           40LL * ((4096 * 4096 + 4096) + 2 * (4096 * 256 + 256) + 4096 * 4096 + 4096 * 2 * 13696 + 13696 * 4096 +
                   4 * 4096) +
           4096},
      // gpt-oss-20b in bf16 (20,914,757,184: GGUF general.parameter_count, the model lists' total; not the MXFP4
      // checkpoint's storage), by hand: untied 201088 x 2880 embedding and head, 24 layers of (q 2880 x 64 x 64 + 4096
      // bias; k, v 2880 x 8 x 64 + 512 bias each; o 4096 x 2880 + 2880 bias; 64 sinks; the router 32 x 2880 + 32 bias;
      // 32 experts of gate_up 2880 x 2 x 2880 + 5760 bias and down 2880 x 2880 + 2880 bias; two norms of 2880), a norm.
      {"gpt-oss-20b", "gpt_oss",
       2LL * 201088 * 2880 +
           24LL * ((2880 * 4096 + 4096) + 2 * (2880 * 512 + 512) + (4096 * 2880 + 2880) + 64 + (32 * 2880 + 32) +
                   32LL * (2880 * 5760 + 5760 + 2880 * 2880 + 2880) + 2 * 2880) +
           2880},
      // StarCoder2-7B (7,173,923,840, the Hub's 7.17 B), by hand: a tied 49152 x 4608 embedding, 32 layers of (q, o 4608^2
      // + a 4608 bias each; k, v 4608 x 512 + a 512 bias each: 4 K/V heads of 128; c_fc 4608 x 18432 + 18432, c_proj
      // 18432 x 4608 + 4608; two LayerNorms of 4608 with biases), a LayerNorm with its bias.
      {"starcoder2-7b", "starcoder2",
       49152LL * 4608 +
           32LL * (2 * (4608LL * 4608 + 4608) + 2 * (4608 * 512 + 512) + (4608LL * 18432 + 18432) +
                   (18432LL * 4608 + 4608) + 2 * 2 * 4608) +
           2 * 4608},
  }));
  INFO(c.model);
  const auto shape = load(c.model);
  CHECK(shape.family.name == c.family);
  CHECK(model::count_params(shape).total == c.total);
}

TEST_CASE("DeepSeek-V3: 671,026,419,200 checkpoint elements, the router biases being buffers", "[family][golden]") {
  const auto s = load("deepseek-v3");
  const auto p = model::count_params(s);
  // The main model's tensors in the checkpoint (FP8 scales left out) hold 671,026,419,200 elements; 58 MoE
  // layers x 256 of them are e_score_correction_bias, a buffer in transformers, not a parameter.
  CHECK(p.total + p.buffer_elements == 671'026'419'200);
  CHECK(p.buffer_elements == 58 * 256);
  CHECK(s.moe.dense_layers == std::vector<int64_t>{0, 1, 2});
  // The multi-token-prediction layer is in the checkpoint ("685B" with it) but not built: one MoE layer,
  // enorm, hnorm, the shared head's norm (3 x 7168) and eh_proj (2 x 7168 x 7168).
  const int64_t layer = 187'107'328 + 11'274'289'152 + 44'040'192 + 1'835'008 + 2 * 7168;
  CHECK(p.mtp_params == layer + 3 * 7168 + 2 * 7168LL * 7168);
}

TEST_CASE("multimodal wrappers are counted by their text_config", "[family][golden]") {
  // Published totals include the vision tower: Gemma-3-27B 27,432,406,640, Llama-4-Scout 108,641,793,536.
  const auto gemma3 = load("gemma-3-27b");
  CHECK(gemma3.family.name == "gemma3_text");
  CHECK(gemma3.vocab_size == 262208);  // Gemma3TextConfig's default: the published text_config omits it
  CHECK(model::count_params(gemma3).total == 27'009'346'304);
  const auto scout = load("llama-4-scout-17b-16e");
  CHECK(scout.family.name == "llama4_text");
  CHECK(model::count_params(scout).total == 107'769'861'120);
}

TEST_CASE("Gemma-2/3 alternate sliding and global layers as their configs' defaults say", "[family]") {
  const auto g2 = load("gemma-2-9b");
  CHECK(g2.layers[0].window == 4096);
  CHECK(g2.layers[1].window == 0);
  CHECK(g2.layers[0].logit_softcap == Approx(50.0));
  CHECK(g2.layers[0].scale == Approx(1.0 / 16.0));  // query_pre_attn_scalar 256
  CHECK(g2.final_logit_softcap == Approx(30.0));
  const auto g3 = load("gemma-3-27b");
  int64_t global = 0;
  for (const auto& a : g3.layers) global += a.window == 0 ? 1 : 0;
  CHECK(global == 10);  // layers 5, 11, ..., 59 of 62
  CHECK(g3.layers[5].window == 0);
  CHECK(g3.layers[0].qk_norm);
}

TEST_CASE("Llama-4 attends in chunks on its RoPE layers and globally on every 4th", "[family]") {
  const auto s = load("llama-4-scout-17b-16e");
  CHECK(s.layers[0].chunk == 8192);
  CHECK(s.layers[3].chunk == 0);
  CHECK(s.moe.num_experts == 16);
  CHECK(s.moe.shared_intermediate_size == 8192);
  CHECK(s.moe.dense_layers.empty());
  // Chunks of 4 over a row of 10: (1 + 2 + 3 + 4) + (1 + 2 + 3 + 4) + (1 + 2) pairs.
  model::AttentionSpec a;
  a.chunk = 4;
  CHECK(model::attended_pairs(a, 10, model::ScoreWork::causal_window) == Approx(23));
  CHECK(model::attended_pairs(a, 10, model::ScoreWork::causal) == Approx(55));
}

TEST_CASE("MLA: latent projections, q/k and v head dims, attention FLOPs", "[family][mla]") {
  const auto s = load("deepseek-v2-lite");
  const auto& a = s.layers[0];
  CHECK(a.mla());
  CHECK(a.head_dim == 192);
  CHECK(a.value_dim() == 128);
  CHECK(s.moe.shared_intermediate_size == 2 * 1408);
  CHECK(s.moe.dense_layers == std::vector<int64_t>{0});
  // QK^T over 192 and PV over 128 per head: 2 x 16 x (192 + 128) per pair.
  CHECK(model::attention_score_flops(a, 4, model::ScoreWork::full_square) == Approx(2.0 * 16 * 320 * 16));
  const auto f = model::gemm_flops_per_token(s);
  // Per layer: kv_a 2048x576, kv_b 512x4096, q 2048x3072; 27 layers, 2 FLOPs per weight.
  CHECK(f.latent_proj == Approx(27 * 2.0 * (2048 * 576 + 512 * 4096 + 2048 * 3072)));
  CHECK(f.shared_experts == Approx(26 * 2.0 * 3 * 2048 * 2816));
  const auto targets = model::default_lora_targets(s);
  CHECK(targets == std::vector<std::string>{"q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "gate_proj",
                                            "up_proj", "down_proj"});
  const auto v3 = model::default_lora_targets(load("deepseek-v3"));
  CHECK(v3.front() == "q_a_proj");
}

TEST_CASE("fused and renamed modules give each family its own LoRA targets", "[family][lora]") {
  CHECK(model::default_lora_targets(load("phi-4")) ==
        std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"});
  CHECK(model::default_lora_targets(load("pythia-160m")) ==
        std::vector<std::string>{"query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"});
  CHECK(model::default_lora_targets(load("llama-3-8b")) == model::default_lora_targets());
  const auto phi = load("phi-3.5-mini");
  const auto plan = model::plan_lora(phi, {"qkv_proj", "q_proj"}, 8);
  CHECK(plan.unmatched == std::vector<std::string>{"q_proj"});
  CHECK(plan.params == 32 * 8 * (3072 + 3 * 3072));
  // Qwen1.5-MoE's shared expert is plain nn.Linear, so peft wraps it; the routed experts are not.
  const auto qwen = model::plan_lora(load("qwen1.5-moe-a2.7b"), {"gate_proj"}, 4);
  CHECK(qwen.modules == 24);
}

TEST_CASE("OLMo-3: OLMo-2's block, sliding on three layers of four", "[family]") {
  const auto s = load("olmo-3-7b");
  CHECK(s.family.block == model::BlockLayout::post_norm);
  CHECK(s.family.qk_norm_whole);
  int64_t sliding = 0;
  for (const auto& a : s.layers) sliding += a.window == 4096 ? 1 : 0;
  CHECK(sliding == 24);
  CHECK(s.layers[3].window == 0);
  CHECK(s.layers[31].window == 0);
  // Without layer_types, Olmo3Config's default: every 4th layer full, the others sliding.
  const auto tiny = load_text("olmo3", R"({"model_type": "olmo3", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_hidden_layers": 8, "vocab_size": 100, "sliding_window": 16})");
  REQUIRE(tiny.num_layers() == 8);
  for (int64_t i = 0; i < 8; ++i) {
    INFO(i);
    CHECK(tiny.layers[static_cast<size_t>(i)].window == ((i + 1) % 4 != 0 ? 16 : 0));
  }
}

TEST_CASE("SmolLM3: Llama's layers, tied, and a window (when on) on the NoPE layers", "[family]") {
  const auto s = load("smollm3-3b");
  CHECK(s.family.block == model::BlockLayout::pre_norm);
  CHECK(s.tie_word_embeddings);
  for (const auto& a : s.layers) CHECK(a.window == 0);  // use_sliding_window: false
  // Without layer_types, SmolLM3Config slides the layers that skip RoPE: every no_rope_layer_interval-th ...
  const std::string tiny = R"({"model_type": "smollm3", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 8, "vocab_size": 100, )";
  const auto by_interval = load_text("smollm3", tiny + R"("use_sliding_window": true, "sliding_window": 16})");
  REQUIRE(by_interval.num_layers() == 8);
  for (int64_t i = 0; i < 8; ++i) {
    INFO(i);
    CHECK(by_interval.layers[static_cast<size_t>(i)].window == ((i + 1) % 4 == 0 ? 16 : 0));
  }
  // ... or those no_rope_layers marks 0 (a list longer than the stack is fine, a shorter one is not) ...
  const auto by_list = load_text("smollm3", tiny + R"("use_sliding_window": true, "sliding_window": 16,
      "no_rope_layers": [1, 0, 1, 1, 1, 1, 0, 1, 0]})");
  for (int64_t i = 0; i < 8; ++i) {
    INFO(i);
    CHECK(by_list.layers[static_cast<size_t>(i)].window == (i == 1 || i == 6 ? 16 : 0));
  }
  CHECK_THROWS_AS(load_text("smollm3", tiny + R"("use_sliding_window": true, "sliding_window": 16,
      "no_rope_layers": [1, 1, 1, 0]})"), InputError);
  // ... and none with use_sliding_window off (SmolLM3Config's default) or without a sliding_window.
  for (const auto& a : load_text("smollm3", tiny + R"("sliding_window": 16})").layers) CHECK(a.window == 0);
  for (const auto& a : load_text("smollm3", tiny + R"("use_sliding_window": true})").layers) CHECK(a.window == 0);
}

TEST_CASE("GLM-4: separate biased q/k/v, a fused gate_up_proj, four norms a layer and half-turned RoPE", "[family]") {
  const std::string tiny = R"({"architectures": ["Glm4ForCausalLM"], "model_type": "glm4", "hidden_size": 64,
      "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "num_hidden_layers": 2, "vocab_size": 100)";
  const auto s = load_text("glm4", tiny + "}");
  CHECK(s.family.name == "glm4");
  CHECK(s.family.block == model::BlockLayout::sandwich);
  CHECK_FALSE(s.tie_word_embeddings);
  CHECK(s.hidden_activation == "silu");
  for (const auto& a : s.layers) {
    CHECK(a.qkv_bias);  // Glm4Config.attention_bias = True when the config is silent
    CHECK_FALSE(a.o_bias);
    CHECK_FALSE(a.qk_norm);
    CHECK(a.window == 0);
    CHECK(a.partial_rotary_factor == Approx(0.5));  // Glm4Config's default
  }
  std::vector<std::string> layer0;
  for (const auto& m : model::expand_modules(s))
    if (m.layer == 0) layer0.push_back(m.name + (m.bias ? "+bias" : ""));
  CHECK(layer0 == std::vector<std::string>{"layers.0.self_attn.q_proj+bias", "layers.0.self_attn.k_proj+bias",
                                           "layers.0.self_attn.v_proj+bias", "layers.0.self_attn.o_proj",
                                           "layers.0.mlp.gate_up_proj", "layers.0.mlp.down_proj",
                                           "layers.0.input_layernorm", "layers.0.post_attention_layernorm",
                                           "layers.0.post_self_attn_layernorm", "layers.0.post_mlp_layernorm"});
  // By hand: untied 100 x 64 embedding and head; a layer holds q 64 x 64 + 64, k and v 64 x 32 + 32 each (2 K/V heads
  // of 16), o 64 x 64, gate_up 64 x 2 x 96, down 96 x 64 and four norms of 64; a final norm.
  const int64_t layer = (64 * 64 + 64) + 2 * (64 * 32 + 32) + 64 * 64 + 64 * 2 * 96 + 96 * 64 + 4 * 64;
  CHECK(model::count_params(s).total == 2 * 100 * 64 + 2 * layer + 64);
  // peft's all-linear: the fused MLP is one target, q, k and v three.
  CHECK(model::default_lora_targets(s) ==
        std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "gate_up_proj", "down_proj"});
  // The sandwich's two extra norms are in the memory-bound work and the recomputed layer, as Gemma-2's: against the
  // same config read as Phi-3 (pre-norm, 2 norms), 2 more hidden-wide passes a layer.
  std::string as_phi3 = tiny;
  as_phi3.replace(as_phi3.find(R"("glm4")"), 6, R"("phi3")");
  const auto phi = load_text("glm4_as_phi3", as_phi3 + R"(, "attention_bias": true, "partial_rotary_factor": 0.5})");
  const auto wg = model::token_work(s, model::LoraPlan{});
  const auto wp = model::token_work(phi, model::LoraPlan{});
  CHECK(wg.norm_bytes - wp.norm_bytes == Approx(2 * 2 * 2 * 2 * 64));  // layers x norms x (read + write) x bytes x h
  CHECK(wg.elementwise_bytes - wp.elementwise_bytes == Approx(2 * 2 * 2 * 2 * 64));
  CHECK(model::layer_working_set_bytes(s, 2) - model::layer_working_set_bytes(phi, 2) == Approx(2 * 2 * 64));
  // GLM-4-9B-0414 as published: 40 layers of 32 heads x 128 over 2 K/V heads, RoPE on 64 of the 128.
  const auto g = load("glm-4-9b");
  CHECK(g.num_layers() == 40);
  CHECK(g.layers[0].num_heads == 32);
  CHECK(g.layers[0].num_kv_heads == 2);
  CHECK(g.layers[0].head_dim == 128);
  CHECK(g.layers[0].partial_rotary_factor == Approx(0.5));
  // The config's own keys win: no biases, RoPE over the whole head.
  const auto plain = load_text("glm4", tiny + R"(, "attention_bias": false, "partial_rotary_factor": 1.0})");
  CHECK_FALSE(plain.layers[0].qkv_bias);
  CHECK(plain.layers[0].partial_rotary_factor == Approx(1.0));
}

namespace {
model::ModelShape tiny(const std::string& name) {
  return io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/" + name + ".json");
}
std::vector<std::string> layer0_names(const model::ModelShape& s) {
  std::vector<std::string> names;
  for (const auto& m : model::expand_modules(s))
    if (m.layer == 0) names.push_back(m.name + (m.bias ? "+bias" : ""));
  return names;
}
}  // namespace

TEST_CASE("GPT-OSS: biased q/k/v/o, sinks, biased router and experts, alternating windows, eager", "[family]") {
  const auto s = tiny("tiny-gpt-oss");
  CHECK(s.family.name == "gpt_oss");
  CHECK_FALSE(s.tie_word_embeddings);
  // GptOssConfig without layer_types: layer 0 slides within sliding_window, layer 1 attends fully; every layer eager.
  REQUIRE(s.num_layers() == 2);
  CHECK(s.layers[0].type == "sliding_attention");
  CHECK(s.layers[0].window == 8);
  CHECK(s.layers[1].type == "full_attention");
  CHECK(s.layers[1].window == 0);
  for (const auto& a : s.layers) {
    CHECK(a.qkv_bias);  // GptOssConfig.attention_bias = True when the config is silent
    CHECK(a.o_bias);
    CHECK(a.eager);
  }
  CHECK(s.moe.num_experts == 4);
  CHECK(s.moe.top_k == 2);
  CHECK(s.moe.intermediate_size == 48);
  CHECK(s.moe.dense_layers.empty());
  CHECK(layer0_names(s) == std::vector<std::string>{"layers.0.self_attn.q_proj+bias", "layers.0.self_attn.k_proj+bias",
                                                   "layers.0.self_attn.v_proj+bias", "layers.0.self_attn.o_proj+bias",
                                                   "layers.0.self_attn.sinks", "layers.0.mlp.router+bias",
                                                   "layers.0.mlp.experts.gate_up_proj+bias",
                                                   "layers.0.mlp.experts.down_proj+bias", "layers.0.input_layernorm",
                                                   "layers.0.post_attention_layernorm"});
  // By hand: untied 100 x 64 embedding and head; a layer holds q 64 x 64 + 64, k and v 64 x 32 + 32 each (2 K/V heads
  // of 16), o 64 x 64 + 64, 4 sinks, the router 4 x 64 + 4, gate_up 4 x 64 x 96 + 4 x 96, down 4 x 48 x 64 + 4 x 64 and
  // two norms of 64; a final norm.
  const int64_t layer = (64 * 64 + 64) + 2 * (64 * 32 + 32) + (64 * 64 + 64) + 4 + (4 * 64 + 4) + (4 * 64 * 96 + 4 * 96) +
                        (4 * 48 * 64 + 4 * 64) + 2 * 64;
  CHECK(model::count_params(s).total == 2 * 100 * 64 + 2 * layer + 64);
  CHECK(model::count_params(s).total == 113616);
  // peft's all-linear: the router and the stacked experts are not nn.Linear, the sinks a bare parameter.
  CHECK(model::default_lora_targets(s) == std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj"});
  // The sinks are added to the scores, no GEMM: the attention projections' FLOPs are 2 x their weights.
  const auto flops = model::gemm_flops_per_token(s);
  CHECK(flops.attention_proj == Approx(2.0 * 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64)));
  CHECK(flops.router == Approx(2.0 * 2 * 4 * 64));
  // The released checkpoint's MXFP4 quantization_config is refused by predictions, counted by describe.
  const auto q = load_text("gpt_oss_mxfp4", R"({"model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 48,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 2, "vocab_size": 100,
      "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8,
      "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]}})");
  CHECK(q.quantization == "mxfp4");
  CHECK(model::count_params(q).total == 113616);
}

TEST_CASE("GPT-OSS-20B as published: 24 layers, windows of 128 on the even ones, 32 experts top-4", "[family]") {
  const auto g = load("gpt-oss-20b");
  REQUIRE(g.num_layers() == 24);
  for (int64_t i = 0; i < 24; ++i) {
    const auto& a = g.layers[static_cast<size_t>(i)];
    CHECK(a.window == (i % 2 == 0 ? 128 : 0));
    CHECK(a.num_heads == 64);
    CHECK(a.num_kv_heads == 8);
    CHECK(a.head_dim == 64);
    CHECK(a.eager);
  }
  CHECK(g.moe.num_experts == 32);
  CHECK(g.moe.top_k == 4);
  CHECK(g.moe.intermediate_size == 2880);
  CHECK(g.dtype == "bfloat16");
  CHECK(g.quantization.empty());
}

TEST_CASE("StarCoder2: LayerNorms with biases, an ungated biased c_fc/c_proj MLP, a window on every layer", "[family]") {
  const auto s = tiny("tiny-starcoder2");
  CHECK(s.family.name == "starcoder2");
  CHECK(s.tie_word_embeddings);  // PretrainedConfig's default: the published config is silent
  CHECK(s.hidden_activation == "gelu_pytorch_tanh");
  CHECK(s.rms_norm_eps == Approx(1e-5));
  CHECK(s.mlp_bias);
  for (const auto& a : s.layers) {
    CHECK(a.qkv_bias);
    CHECK(a.o_bias);
    CHECK(a.window == 16);  // Mistral's mask: sliding_window on every layer
    CHECK_FALSE(a.eager);
  }
  CHECK(layer0_names(s) == std::vector<std::string>{"layers.0.self_attn.q_proj+bias", "layers.0.self_attn.k_proj+bias",
                                                   "layers.0.self_attn.v_proj+bias", "layers.0.self_attn.o_proj+bias",
                                                   "layers.0.mlp.c_fc+bias", "layers.0.mlp.c_proj+bias",
                                                   "layers.0.input_layernorm+bias",
                                                   "layers.0.post_attention_layernorm+bias"});
  // By hand: a tied 100 x 64 embedding; a layer holds q and o 64 x 64 + 64, k and v 64 x 32 + 32 (2 K/V heads of 16),
  // c_fc 64 x 128 + 128, c_proj 128 x 64 + 64, two LayerNorms of 64 + 64; a final LayerNorm of 64 + 64.
  const int64_t layer = 2 * (64 * 64 + 64) + 2 * (64 * 32 + 32) + (64 * 128 + 128) + (128 * 64 + 64) + 2 * 2 * 64;
  CHECK(model::count_params(s).total == 100 * 64 + 2 * layer + 2 * 64);
  CHECK(model::count_params(s).total == 65152);
  CHECK(model::default_lora_targets(s) ==
        std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "c_fc", "c_proj"});
  // use_bias: false drops every linear's bias (the LayerNorms keep theirs); sliding_window null: no window.
  const std::string plain = R"({"model_type": "starcoder2", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100,
      "use_bias": false, "sliding_window": null})";
  const auto nb = load_text("starcoder2_nobias", plain);
  CHECK_FALSE(nb.mlp_bias);
  CHECK_FALSE(nb.layers[0].qkv_bias);
  CHECK(nb.layers[0].window == 0);
  CHECK(model::count_params(nb).total == 65152 - 2 * (64 + 32 + 32 + 64 + 128 + 64));
  // A bad value is exit 2's InputError at the key.
  CHECK_THROWS_AS(load_text("starcoder2_bad", R"({"model_type": "starcoder2", "hidden_size": 64, "intermediate_size": 128,
      "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100, "use_bias": "sometimes"})"),
                  InputError);
}
