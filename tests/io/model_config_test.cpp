// Hugging Face config.json parsing: families, and bad configs named precisely.
#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/errors.hpp"
#include "model/counts.hpp"
#include "model/features.hpp"
#include "model/tiers.hpp"
#include "model/work.hpp"
#include "temp_file.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;

namespace {
std::string error_of(const std::string& json) {
  testing::TempFile f(json, ".json");
  try {
    io::load_model_config(f.path());
  } catch (const InputError& e) {
    return std::string(e.what()).substr(f.path().size());
  }
  return "";
}
}  // namespace

TEST_CASE("a gemma4 config with a text_config is read from the text_config", "[config]") {
  testing::TempFile f(R"({"model_type": "gemma4", "text_config": {"model_type": "gemma4_text", "hidden_size": 64,
    "vocab_size": 100, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 16,
    "num_key_value_heads": 1, "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"]}})",
                      ".json");
  const auto s = io::load_model_config(f.path());
  CHECK(s.model_type == "gemma4_text");
  CHECK(s.num_layers() == 2);
  CHECK(s.layers[0].window == 8);
  CHECK(s.layers[1].window == 0);
  CHECK(s.tie_word_embeddings);
}

TEST_CASE("dense families: qwen2 has q,k,v biases, qwen3 has q/k norms, mistral a window", "[config]") {
  const std::string base = R"("hidden_size": 64, "vocab_size": 100, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 16)";
  testing::TempFile q2("{\"model_type\": \"qwen2\", " + base + "}", ".json");
  testing::TempFile q3("{\"model_type\": \"qwen3\", " + base + ", \"head_dim\": 32}", ".json");
  testing::TempFile mi("{\"model_type\": \"mistral\", " + base + "}", ".json");
  const auto s2 = io::load_model_config(q2.path());
  CHECK(s2.layers[0].qkv_bias);
  CHECK_FALSE(s2.layers[0].o_bias);
  CHECK(s2.layers[0].window == 0);  // use_sliding_window defaults to false in Qwen2
  // 3 biases: q (64) + k (32) + v (32) per layer on top of the weights.
  const auto s3 = io::load_model_config(q3.path());
  CHECK(s3.layers[0].qk_norm);
  CHECK(s3.layers[0].head_dim == 32);
  CHECK(io::load_model_config(mi.path()).layers[1].window == 16);
  const auto p2 = model::count_params(s2);
  const auto p3 = model::count_params(s3);
  CHECK(p2.total > 0);
  CHECK(p3.total > 0);
}

TEST_CASE("partial_rotary_factor is read at the top level or in a flat rope_parameters, above 0 and at most 1", "[config]") {
  const std::string base = R"({"model_type": "phi3", "hidden_size": 64, "vocab_size": 100, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2)";
  testing::TempFile none(base + "}", ".json");
  testing::TempFile top(base + R"(, "partial_rotary_factor": 0.75})", ".json");
  // transformers 5 saves it inside rope_parameters (Phi-4-mini: 0.75).
  testing::TempFile flat(base + R"(, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
    "partial_rotary_factor": 0.75}})", ".json");
  CHECK(io::load_model_config(none.path()).layers[0].partial_rotary_factor == Approx(1.0));
  for (const auto* f : {&top, &flat}) {
    const auto s = io::load_model_config(f->path());
    for (const auto& a : s.layers) CHECK(a.partial_rotary_factor == Approx(0.75));
  }
  // It changes no count, only RoPE's elementwise pass: (4 + 2) heads x 16 dims x (1 - 0.75) fewer elements a layer,
  // each read and written in 2 bytes, over 2 layers.
  const auto full = model::token_work(io::load_model_config(none.path()), model::LoraPlan{});
  const auto part = model::token_work(io::load_model_config(top.path()), model::LoraPlan{});
  CHECK(model::count_params(io::load_model_config(top.path())).total ==
        model::count_params(io::load_model_config(none.path())).total);
  CHECK(full.elementwise_bytes - part.elementwise_bytes == Approx(2 * 2 * 2 * 6 * 16 * 0.25));
  CHECK_THAT(error_of(base + R"(, "partial_rotary_factor": 1.5})"),
             Contains("partial_rotary_factor = 1.5"));
  CHECK_THAT(error_of(base + R"(, "rope_parameters": {"partial_rotary_factor": 0}})"),
             Contains("rope_parameters.partial_rotary_factor = 0"));
}

TEST_CASE("bad model configs name the field and the rule", "[config][validation]") {
  struct Case {
    std::string json;
    std::string expected;
  };
  auto c = GENERATE(values<Case>({
      {R"({"model_type": "llama", "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1})",
       "hidden_size is missing. Violated constraint: required"},
      {R"({"model_type": "llama", "hidden_size": "big", "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1})",
       ":1:40: hidden_size = 'big'. Violated constraint: an integer"},
      {R"({"model_type": "llama", "hidden_size": 0, "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1})",
       "hidden_size = 0. Violated constraint: > 0"},
      {R"({"model_type": "gpt2"})", "model_type = 'gpt2'. Violated constraint: one of"},
      {R"({"model_type": "internlm2"})", "another family needs its entry: docs/families.md"},
      {R"({"hidden_size": 3})", "model_type is missing"},
      {"{\"model_type\": \"llama\",\n \"hidden_size\": 64,,}", ":2:20: malformed JSON"},
      {"", ":1:1: the file is empty"},
      {R"({"model_type": "gemma4_text", "hidden_size": 64, "vocab_size": 100, "intermediate_size": 32, "num_hidden_layers": 2,
          "num_attention_heads": 2, "head_dim": 16, "num_key_value_heads": 1, "sliding_window": 8,
          "layer_types": ["sliding_attention"]})",
       "layer_types has 1 entries. Violated constraint: == num_hidden_layers (2)"},
      {R"({"model_type": "gemma4_text", "hidden_size": 64, "vocab_size": 100, "intermediate_size": 32, "num_hidden_layers": 1,
          "num_attention_heads": 2, "head_dim": 16, "num_key_value_heads": 1, "enable_moe_block": true})",
       "num_experts is missing"},
      // Unbuildable shapes: 7 K/V heads cannot be shared by 32 heads; 30 heads do not split 64 dims.
      {R"({"model_type": "llama", "hidden_size": 64, "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 1,
          "num_attention_heads": 32, "num_key_value_heads": 7, "head_dim": 2})",
       "num_key_value_heads = 7. Violated constraint: divides num_attention_heads = 32"},
      {R"({"model_type": "llama", "hidden_size": 64, "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 1,
          "num_attention_heads": 30})",
       ":2:34: num_attention_heads = 30 does not divide hidden_size = 64"},
      {R"({"model_type": "qwen3_moe", "hidden_size": 64, "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_experts": 4, "num_experts_per_tok": 8, "moe_intermediate_size": 8})",
       "num_experts_per_tok = 8. Violated constraint: <= the number of experts (4)"},
      {R"({"model_type": "qwen2_moe", "hidden_size": 64, "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
          "mlp_only_layers": [2]})",
       "mlp_only_layers"},
      {R"({"model_type": "deepseek_v2", "hidden_size": 64, "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8})",
       "kv_lora_rank is missing"},
      {R"({"architectures": ["LlamaForTokenRegression"], "model_type": "llama", "hidden_size": 64, "vocab_size": 10,
          "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4})",
       ":1:20: architectures[0] = 'LlamaForTokenRegression'. Violated constraint: a class ending in ForCausalLM"},
      {R"({"model_type": "llama4_text", "hidden_size": 64, "vocab_size": 10, "intermediate_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_local_experts": 2, "num_experts_per_tok": 1, "no_rope_layers": [1, 1, 0]})",
       "no_rope_layers has 3 entries. Violated constraint: == num_hidden_layers (2)"},
  }));
  CHECK_THAT(error_of(c.json), Contains(c.expected));
}

TEST_CASE("architectures decides the head: an embedding model has no lm_head", "[config]") {
  const std::string body = R"("model_type": "qwen3", "hidden_size": 64, "vocab_size": 100, "intermediate_size": 32,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16)";
  testing::TempFile lm(R"({"architectures": ["Qwen3ForCausalLM"], )" + body + "}", ".json");
  testing::TempFile embed(R"({"architectures": ["Qwen3Model"], )" + body + "}", ".json");
  testing::TempFile score(R"({"architectures": ["Qwen3ForSequenceClassification"], "id2label": {"0": "no", "1": "maybe",
    "2": "yes"}, )" + body + "}", ".json");
  const auto with_head = model::count_params(io::load_model_config(lm.path()));
  const auto embedding = io::load_model_config(embed.path());
  CHECK(embedding.head == model::Head::none);
  CHECK(with_head.total - model::count_params(embedding).total == 100 * 64);  // lm_head [vocab, hidden]
  CHECK(model::gemm_flops_per_token(embedding).lm_head == 0);
  const auto classifier = io::load_model_config(score.path());
  CHECK(classifier.num_labels == 3);
  CHECK(with_head.total - model::count_params(classifier).total == 100 * 64 - 3 * 64);
}

TEST_CASE("a quantized checkpoint is counted, and refused by every prediction at its quantization_config", "[config]") {
  testing::TempFile f(R"({"model_type": "llama", "hidden_size": 64, "vocab_size": 100, "intermediate_size": 32,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
    "quantization_config": {"load_in_4bit": true, "bnb_4bit_quant_type": "nf4", "quant_method": "bitsandbytes"}})",
                      ".json");
  const auto shape = io::load_model_config(f.path());
  CHECK(shape.quantization == "bitsandbytes");
  CHECK(shape.quantization_where == f.path() + ":3:28");
  CHECK(model::count_params(shape).total > 0);  // describe still counts it
  try {
    const model::FeatureMaker features(shape, model::tier_from_label("hf-peft/sdpa-grouped_mm"),
                                       model::gpu_info("NVIDIA H200"), model::LoraChoice{});
    FAIL("a quantized checkpoint was priced as if its weights were bf16");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Contains(f.path() + ":3:28: quantization_config (quant_method 'bitsandbytes')"));
  }
}

TEST_CASE("Qwen-MoE: decoder_sparse_step and mlp_only_layers keep dense layers", "[config]") {
  testing::TempFile f(R"({"model_type": "qwen2_moe", "hidden_size": 8, "vocab_size": 10, "intermediate_size": 6,
    "num_hidden_layers": 4, "num_attention_heads": 2, "num_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 3, "shared_expert_intermediate_size": 5, "decoder_sparse_step": 2, "mlp_only_layers": [3]})",
                      ".json");
  const auto s = io::load_model_config(f.path());
  CHECK(s.moe.dense_layers == std::vector<int64_t>{0, 2, 3});  // layer 1 alone: (1 + 1) % 2 == 0, not MLP-only
  // By hand, h = 8: attention 4 x 64 + q,k,v biases 24 = 280, 2 norms 16. Dense layer: 3 x 8 x 6 = 144.
  // MoE layer: router 32, experts 4 x 3 x 8 x 3 = 288, shared 3 x 8 x 5 = 120, shared gate 8.
  const int64_t dense = 280 + 16 + 144, moe = 280 + 16 + 32 + 288 + 120 + 8;
  CHECK(model::count_params(s).total == 3 * dense + moe + 2 * 80 + 8);
}

TEST_CASE("model names resolve under the shipped models folder", "[config]") {
  CHECK_THAT(io::resolve_model_path("llama-3-8b"), Contains("scenarios/models/llama-3-8b.json"));
  CHECK_THROWS_AS(io::resolve_model_path("no-such-model"), InputError);
}
