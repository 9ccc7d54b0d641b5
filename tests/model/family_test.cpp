// Families as data: the built-in table, and a dummy family added as one entry plus a config, counted by hand.
#include "catch.hpp"
#include "dummy_family.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/family.hpp"

using namespace stepcast;

TEST_CASE("the built-in families cover the configs stepcast reads", "[family]") {
  CHECK(model::find_family("gemma4_text")->name == "gemma4_text");
  CHECK(model::find_family("gemma4")->name == "gemma4_text");  // the multimodal wrapper's text_config
  for (const std::string t : {"llama", "mistral", "qwen2", "qwen3"}) {
    INFO(t);
    REQUIRE(model::find_family(t) != nullptr);
    CHECK(model::find_family(t)->block == model::BlockLayout::pre_norm);
  }
  CHECK(model::find_family("gpt2") == nullptr);
  CHECK(model::find_family("qwen3")->qk_norm);
  CHECK_FALSE(model::find_family("qwen2")->o_bias_with_qkv);
  CHECK(model::find_family("mistral")->window_on_every_layer);
}

TEST_CASE("a family's model_type belongs to one family", "[family]") {
  model::Family clash;
  clash.name = "clash";
  clash.model_types = {"llama"};
  CHECK_THROWS_AS(model::register_family(clash), InputError);
  model::Family empty;
  empty.name = "empty";
  CHECK_THROWS_AS(model::register_family(empty), InputError);
}

TEST_CASE("a dummy family: one table entry and a config give describe's counts", "[family][golden]") {
  testing::register_dummy_family();
  const auto shape = io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/tiny-dummy.json");
  CHECK(shape.family.name == "stepcast_dummy");
  CHECK(shape.tie_word_embeddings);
  CHECK(shape.hidden_activation == "gelu_pytorch_tanh");
  REQUIRE(shape.num_layers() == 2);
  CHECK(shape.layers[0].window == 6);
  CHECK(shape.layers[1].window == 0);
  CHECK(shape.layers[0].qkv_bias);
  CHECK_FALSE(shape.layers[0].o_bias);
  CHECK(shape.layers[0].qk_norm);
  // By hand, h = 32, V = 50, I = 24, 4 heads, 2 K/V heads, head_dim 8, per layer:
  //   q 32x32 + 32, k 32x16 + 16, v 32x16 + 16, o 32x32, q_norm 8, k_norm 8, MLP 3 x 32x24, 2 norms x 32 = 5,520;
  // two layers, the tied embedding 50x32 and the final norm 32: 12,672.
  const auto p = model::count_params(shape);
  CHECK(p.total == 12'672);
  CHECK(p.embedding == 1'600);
  CHECK(p.tensors == 30);             // 1 + 2 x 14 + 1
  CHECK(p.state_dict_entries == 31);  // + the tied lm_head alias
  const auto lora = model::plan_lora(shape, model::default_lora_targets(), 4);
  CHECK(lora.modules == 14);
  CHECK(lora.params == 2 * 4 * ((32 + 32) + 2 * (32 + 16) + (32 + 32) + 3 * (32 + 24)));
  CHECK(lora.unmatched.empty());
}
