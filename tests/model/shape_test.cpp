// Shape arithmetic against known answers (Hugging Face's own counts) and hand-computed small cases.
#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"

using namespace stepcast;

namespace {
model::ModelShape gemma() { return io::load_model(STEPCAST_SCENARIOS "/models/gemma-4-26b-a4b.json"); }
model::ModelShape llama() { return io::load_model(STEPCAST_SCENARIOS "/models/llama-3-8b.json"); }
}  // namespace

TEST_CASE("Gemma-4 26B-A4B has Hugging Face's 25,233 M parameters", "[shape][golden]") {
  const auto p = model::count_params(gemma());
  CHECK(p.total == 25'233'141'760);
  CHECK(p.total / 1'000'000 == 25'233);
  // 627 parameter tensors; the state dict adds 30 layer_scalar buffers and the tied lm_head alias.
  CHECK(p.tensors == 627);
  CHECK(p.state_dict_entries == 658);
  // "A4B": about 3.8 B active per token (8 of 128 experts).
  CHECK(p.active_per_token == 3'822'530'560);
  CHECK(p.embedding == 262144LL * 2816);
}

TEST_CASE("Gemma-4 layer types follow layer_types", "[shape]") {
  const auto s = gemma();
  const auto groups = model::layers_by_type(s);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].type == "sliding_attention");
  CHECK(groups[0].indices.size() == 25);
  CHECK(groups[0].spec.head_dim == 256);
  CHECK(groups[0].spec.num_kv_heads == 8);
  CHECK(groups[0].spec.window == 1024);
  CHECK(groups[0].spec.has_v_proj);
  CHECK(groups[1].type == "full_attention");
  CHECK(groups[1].indices == std::vector<int64_t>{5, 11, 17, 23, 29});
  CHECK(groups[1].spec.head_dim == 512);
  CHECK(groups[1].spec.num_kv_heads == 2);
  CHECK_FALSE(groups[1].spec.has_v_proj);
  CHECK(groups[1].spec.partial_rotary_factor == Approx(0.25));
  CHECK(s.final_logit_softcap == Approx(30.0));
  CHECK(s.tie_word_embeddings);
}

TEST_CASE("LoRA on the seven standard targets hits 205 modules of Gemma-4", "[shape][lora][golden]") {
  const auto plan = model::plan_lora(gemma(), model::default_lora_targets(), 16);
  CHECK(plan.modules == 205);  // 25x4 + 5x3 attention + 30x3 MLP
  CHECK(plan.modules_by_target.at("v_proj") == 25);
  CHECK(plan.modules_by_target.at("q_proj") == 30);
  CHECK(plan.unmatched.empty());
  // Hand count: r * (in + out) per module, r = 16, h = 2816.
  const int64_t h = 2816, r = 16;
  const int64_t sliding = (h + 4096) + (h + 2048) * 2 + (4096 + h);
  const int64_t full = (h + 8192) + (h + 1024) + (8192 + h);
  const int64_t mlp = 2 * (h + 2112) + (2112 + h);
  CHECK(plan.params == r * (25 * sliding + 5 * full + 30 * mlp));
}

TEST_CASE("LoRA targets that match nothing are reported", "[shape][lora]") {
  const auto plan = model::plan_lora(gemma(), {"q_proj", "gate_up_proj", "q_prj"}, 8);
  CHECK(plan.unmatched == std::vector<std::string>{"gate_up_proj", "q_prj"});
  CHECK(plan.modules == 30);
}

TEST_CASE("Llama-3-8B has 8,030,261,248 parameters", "[shape][golden]") {
  const auto s = llama();
  const auto p = model::count_params(s);
  CHECK(p.total == 8'030'261'248);
  CHECK(p.active_per_token == p.total);
  CHECK(model::plan_lora(s, model::default_lora_targets(), 16).modules == 32 * 7);
  CHECK(model::weight_bytes(s, "bfloat16") == 2 * 8'030'261'248LL);
  CHECK(model::weight_bytes(s, "float32") == 4 * 8'030'261'248LL);
}

TEST_CASE("GEMM FLOPs per token are twice the weights a token touches", "[shape][flops]") {
  const auto f = model::gemm_flops_per_token(gemma());
  const double h = 2816;
  CHECK(f.dense_mlp == Approx(30 * 2 * 3 * h * 2112));
  CHECK(f.experts == Approx(30 * 2 * 8 * 3 * h * 704));  // top-8 of 128, gate+up+down
  CHECK(f.lm_head == Approx(2 * h * 262144));           // the tied embedding is the LM head
  CHECK(f.router == Approx(30 * 2 * h * 128));
  CHECK(f.attention_proj == Approx(25 * 2 * h * (4096 + 2048 * 2 + 4096) + 5 * 2 * h * (8192 + 1024 + 8192)));
}

TEST_CASE("attended pairs per row follow causality and the window", "[shape][attention]") {
  struct Case {
    int64_t window;  // 0 = global
    int64_t width;
    model::ScoreWork work;
    double pairs;
  };
  // Hand counts: width 6, window 4 -> queries see 1,2,3,4,4,4 keys = 18.
  auto c = GENERATE(values<Case>({
      {4, 6, model::ScoreWork::causal_window, 18},
      {4, 6, model::ScoreWork::causal, 21},
      {4, 6, model::ScoreWork::full_square, 36},
      {4, 3, model::ScoreWork::causal_window, 6},  // window wider than the row
      {0, 6, model::ScoreWork::causal_window, 21},
      {0, 1, model::ScoreWork::causal, 1},
  }));
  model::AttentionSpec spec;
  spec.num_heads = 1;
  spec.head_dim = 1;
  spec.window = c.window;
  CHECK(model::attended_pairs(spec, c.width, c.work) == Approx(c.pairs));
  CHECK(model::attention_score_flops(spec, c.width, c.work) == Approx(4 * c.pairs));
}

TEST_CASE("unknown dtypes are bad input", "[shape]") {
  CHECK(model::dtype_bytes("bfloat16") == 2);
  CHECK_THROWS_AS(model::dtype_bytes("bf12"), stepcast::InputError);
}
