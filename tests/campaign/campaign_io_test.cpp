// Campaign files (io/campaign_io): what they say after defaults, the processes they expand into, and every refusal at
// file:line:col, all at once.
#include <fstream>
#include <string>

#include "campaign_fixture.hpp"
#include "catch.hpp"
#include "io/campaign_io.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"

using stepcast::InputError;
using stepcast::testing::campaign_head;
using stepcast::testing::CampaignRoot;
using Catch::Matchers::Contains;
namespace io = stepcast::io;

namespace {

// Lines 1-6 are campaign_head(); a body starts on line 7.
const char* kItems = R"(defaults:
  stack: hf-peft
  lora: {rank: 16, alpha: 32, targets: [q_proj, k_proj, v_proj, o_proj]}
  time_limit_s: 120
  run:
    corpus: {synthetic: {samples: 16, seed: 3, components: [{median_tokens: 60, sigma: 0.5}]}}
    policies: [pad-to-longest, bucket-to-pair]
    micro_batch: 2
    accumulation: 2
    max_length: 128
items:
  - id: a
    model: tests/data/configs/tiny-llama.json
    repeats: 2
  - id: b
    model: tests/data/configs/tiny-llama.json
    run: {micro_batch: 4, policy: bucket-to-pair}
    label: warm
  - id: c
    model: tests/data/configs/tiny-llama.json
    run: null
    probes: {points: [1x64, 4x2048:0.37], kernels: [2x64]}
checks:
  - metric: pad_bucket_ratio
    goal: {error: 0.05}
    items: [a]
  - metric: peak_allocated
    goal: {error: 0.03, under: 0.01}
)";

std::string problems_of(const CampaignRoot& root, const std::string& text) {
  const std::string path = root.campaign("t", text);
  try {
    io::load_campaign(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the shipped families2 campaign reads as the script it replaces", "[campaign][io]") {
  const io::Campaign c = io::load_campaign(std::string(STEPCAST_MEASUREMENTS) + "/campaigns/families2.yaml");
  CHECK(c.name == "families2");
  CHECK(c.file == "measurements/campaigns/families2.yaml");
  CHECK(c.prediction == "measurements/predictions/families2-merged.jsonl");
  CHECK(c.plan_file() == "measurements/predictions/families2.plan.json");
  REQUIRE(c.items.size() == 1);
  const io::CampaignItem& it = c.items[0];
  CHECK(it.id == "qwen1.5-moe-a2.7b");
  CHECK(it.config == "scenarios/models/qwen1.5-moe-a2.7b.json");
  CHECK(it.model_type == "qwen2_moe");
  CHECK(it.stack == io::Stack::harness);
  REQUIRE(it.probes);
  CHECK(it.probes->points.size() == 12);
  CHECK(it.probes->kernels.size() == 2);
  // As the harness pads them (model::padded_rows: 4x2048:0.37 -> 2048,1038,1038,1037).
  CHECK(it.probes->points[9].text == "4x2048:0.37");
  CHECK(it.probes->points[9].row_tokens == std::vector<int64_t>{2048, 1038, 1038, 1037});
  CHECK(c.checks.size() == 2);
  const auto plan = io::plan_items(c);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].id == "qwen1.5-moe-a2.7b/probes");
  CHECK(plan[0].label == "cold");
}

TEST_CASE("items start from defaults, a mapping updates key by key, null drops the defaults' run", "[campaign][io]") {
  CampaignRoot root;
  const io::Campaign c = io::load_campaign(root.campaign("t", campaign_head("t") + kItems));
  REQUIRE(c.items.size() == 3);
  const io::CampaignItem& b = c.items[1];
  REQUIRE(b.run);
  CHECK(b.run->batching.micro_batch == 4);       // the item's
  CHECK(b.run->batching.max_length == 128);      // the defaults'
  CHECK(b.run->accumulation == 2);
  CHECK(b.run->policies == std::vector<stepcast::planner::Policy>{stepcast::planner::Policy::bucket_to_pair});
  CHECK(b.tier == "hf-peft/sdpa-grouped_mm");
  CHECK(b.lora.targets.size() == 4);
  CHECK_FALSE(c.items[2].run);
  REQUIRE(c.items[2].probes);
  CHECK(c.items[2].probes->warmup == 1);
  CHECK(c.items[2].probes->repetitions == 2);
  CHECK(c.items[2].model_name == "tiny-llama");

  const auto plan = io::plan_items(c);
  std::vector<std::string> ids, labels;
  for (const auto& p : plan) ids.push_back(p.id), labels.push_back(p.label);
  CHECK(ids == std::vector<std::string>{"a/pad-to-longest/repeat-0", "a/bucket-to-pair/repeat-0",
                                        "a/pad-to-longest/repeat-1", "a/bucket-to-pair/repeat-1", "b/bucket-to-pair",
                                        "c/probes"});
  CHECK(labels == std::vector<std::string>{"cold", "warm", "warm", "warm", "warm", "warm"});
  CHECK(plan[2].base_id == "a/pad-to-longest");
  CHECK(plan[2].run_id == "tiny-llama/synthetic-3/pad-to-longest/repeat-1");
  CHECK(io::records_file_name(plan[2].id) == "a__pad-to-longest__repeat-1.jsonl");
  CHECK(io::covered_items(c, c.checks[0]) == std::vector<size_t>{0});
  CHECK(io::covered_items(c, c.checks[1]) == std::vector<size_t>{0, 1, 2});
}

TEST_CASE("each refusal names its file:line:col", "[campaign][io]") {
  CampaignRoot root;
  const std::string head = campaign_head("t");
  const auto [body, expected] = GENERATE(table<std::string, std::string>({
      {"colour: red\nitems: []\n", "t.yaml:7:1: unknown key 'colour'"},
      {"items:\n  - {model: tests/data/configs/tiny-llama.json, stak: harness}\n", "t.yaml:8:49: unknown key 'items[0].stak'"},
      {"items:\n  - stack: harnes\n", "t.yaml:8:12: items[0].stack = 'harnes'. Violated constraint: one of hf-peft, harness"},
      {"items:\n  - probes: {points: [2x]}\n", "t.yaml:8:23: items[0].probes.points[0] = '2x'. Violated constraint: ROWSxWIDTH"},
      {"items:\n  - probes: {points: [2x64:1.5]}\n", "t.yaml:8:23: items[0].probes.points[0] = '2x64:1.5'. Violated constraint: 0 <= PADDING < 1"},
      {"items:\n  - model: tests/data/configs/tiny-llama.json\n", "t.yaml:8:5: items[0].stack is missing (in the item and in defaults)"},
      {"items:\n  - model: nope\n", "t.yaml:8:12: items[0].model = 'nope': no scenarios/models/nope.json under"},
      {"items:\n  - {model: tests/data/configs/tiny-llama.json, lora: {targets: [q_prj]}}\n",
       "t.yaml:8:66: items[0].lora.targets: 'q_prj' names no nn.Linear module of tiny-llama"},
      {"items:\n  - {stack: hf-peft, tier: sdpa-auto/loop}\n", "t.yaml:8:28: items[0].tier on an hf-peft item"},
      {"items:\n  - {stack: harness, tier: sdpa-auto/loop, probes: {host_profiles: [1x64]}}\n",
       "items[0].probes.host_profiles on a harness item. Violated constraint: hf-peft items only"},
      {"items:\n  - {stack: harness, tier: sdpa-auto/loop, lora: {adapter_dtype: bfloat16}}\n",
       "items[0].lora.adapter_dtype on a harness item. Violated constraint: hf-peft items only"},
      {"items:\n  - {stack: hf-peft, lora: {adapter_dtype: bf16}}\n",
       "t.yaml:8:44: items[0].lora.adapter_dtype = 'bf16'. Violated constraint: one of float32, bfloat16"},
      {"items:\n  - stack: hf-peft\n    run: {policy: pack}\n", "t.yaml:8:5: items[0].run: policy pack on stack hf-peft"},
      {"items:\n  - run: {policy: pack, policies: [fixed]}\n", "t.yaml:8:10: items[0].run: 'policy' and 'policies'"},
      {"items:\n  - run: {corpus: {file: nowhere.csv}}\n", "t.yaml:8:26: items[0].run.corpus.file = 'nowhere.csv': no such file"},
      {"items:\n  - {id: a/b}\n", "t.yaml:8:10: items[0].id = 'a/b'. Violated constraint: letters, digits"},
      {"items:\n  - {id: x}\n  - {id: x}\n", "t.yaml:9:5: items[1]: id 'x' again"},
      {"items: []\nchecks:\n  - {metric: speed, goal: {error: 1}}\n", "t.yaml:9:14: checks[0].metric = 'speed'"},
      {"items: []\nchecks:\n  - {metric: step_time, goal: {}}\n", "t.yaml:9:31: checks[0].goal: no bound"},
      {"items: []\nchecks:\n  - {metric: step_time, goal: {error: -1}}\n", "t.yaml:9:39: checks[0].goal.error = -1. Violated constraint: >= 0"},
      {"items:\n  - {id: x}\nchecks:\n  - {metric: step_time, goal: {error: 1}, items: [y]}\n",
       "t.yaml:10:51: checks[0].items[0] = 'y'. Violated constraint: an item's id"},
      {"items:\n  - {id: x, model: tests/data/configs/tiny-llama.json, probes: {points: [1x64]}}\nchecks:\n"
       "  - {metric: run_wall_clock, goal: {error: 1}}\n",
       "t.yaml:10:14: checks[0].metric = run_wall_clock: no item it covers can give it"},
  }));
  CAPTURE(body);
  CHECK_THAT(problems_of(root, head + body), Contains(expected));
}

TEST_CASE("a family without SDPA in transformers is measured eager, never forced onto SDPA", "[campaign][io]") {
  CampaignRoot root;
  const std::string head = campaign_head("t");
  const std::string item = "items:\n  - {stack: hf-peft, model: gpt-oss-20b, lora: {targets: [q_proj]}";
  CHECK_THAT(problems_of(root, head + item + "}\n"),
             Contains("items[0].attn_implementation = 'sdpa' for gpt-oss-20b, whose family has no SDPA path in "
                      "transformers. Violated constraint: eager"));
  CHECK_THAT(problems_of(root, head + item + ", attn_implementation: eager}\n"),
             !Contains("attn_implementation"));
  // Any family may be measured eager: its tier is hf-peft/eager-<experts>.
  CHECK_THAT(problems_of(root, head + "items:\n  - {stack: hf-peft, attn_implementation: eagr}\n"),
             Contains("Violated constraint: one of sdpa, eager"));
}

TEST_CASE("top-level keys: the prediction's place, the coefficients, the GPU, the version", "[campaign][io]") {
  CampaignRoot root;
  const std::string text = R"(schema_version: 2
prediction: predictions/t.jsonl
coefficients: scenarios/coefficients/none.yaml
gpu: NVIDIA H2000
total_limit_s: 0
items: []
)";
  const std::string p = problems_of(root, text);
  CHECK_THAT(p, Contains("t.yaml:1:17: schema_version = 2. Violated constraint: 1"));
  CHECK_THAT(p, Contains("t.yaml:2:13: prediction = 'predictions/t.jsonl'. Violated constraint: "
                         "measurements/predictions/NAME.jsonl"));
  CHECK_THAT(p, Contains("t.yaml:3:15: coefficients = 'scenarios/coefficients/none.yaml': no such file"));
  CHECK_THAT(p, Contains("t.yaml:4:6: gpu = 'NVIDIA H2000'. Violated constraint: one of"));
  CHECK_THAT(p, Contains("t.yaml:5:16: total_limit_s = 0. Violated constraint: > 0"));
  CHECK_THAT(p, Contains("t.yaml:6:8: items = a list. Violated constraint: a non-empty list of items"));
  CHECK_THAT(p, Contains("checks = null. Violated constraint: a non-empty list"));
}

TEST_CASE("a campaign outside any repository is refused at its first line", "[campaign][io]") {
  stepcast::testing::TempFile loose(campaign_head("t") + "items: []\n", ".yaml");
  CHECK_THROWS_WITH(io::load_campaign(loose.path()), Contains(":1:1: no folder above the campaign holds measurements/ and scenarios/"));
}

TEST_CASE("a goal: |e| bound, one-sided bounds, both", "[campaign][io]") {
  io::Goal peak;
  peak.error = 0.03;
  peak.under = 0.01;
  CHECK(peak.passes(0.029));
  CHECK(peak.passes(-0.009));
  CHECK_FALSE(peak.passes(-0.011));
  CHECK_FALSE(peak.passes(0.031));
  CHECK_FALSE(peak.passes(std::nan("")));
  CHECK(peak.text() == "within 3 %, at most 1 % under");
  io::Goal over;
  over.over = 0.1;
  CHECK(over.passes(-5));
  CHECK_FALSE(over.passes(0.11));
}

TEST_CASE("probe points: RxW[:PAD] as measure --points takes them", "[campaign][io]") {
  std::string why;
  const auto p = io::parse_probe_point("2x4096:0.25", why);
  REQUIRE(p);
  CHECK(p->rows == 2);
  CHECK(p->width == 4096);
  CHECK(p->row_tokens == std::vector<int64_t>{4096, 2048});
  for (const char* bad : {"", "x", "2x", "x64", "2x64:", "2x64:a", "0x64", "2x1", "2x64:-0.1", "2x64:1", "2:3x64",
                          "2x64x2", "99999999999999999999x2"}) {
    CAPTURE(bad);
    CHECK_FALSE(io::parse_probe_point(bad, why));
    CHECK_THAT(why, Contains("Violated constraint"));
  }
}

TEST_CASE("six families x two policies is a file of about 40 lines", "[campaign][io]") {
  const std::string path = std::string(STEPCAST_TEST_DATA) + "/campaigns/six-families.yaml";
  std::ifstream in(path);
  int64_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  CHECK(lines <= 40);
  const io::Campaign c = io::load_campaign(path);
  CHECK(c.items.size() == 6);
  const auto plan = io::plan_items(c);
  REQUIRE(plan.size() == 12);
  CHECK(plan[11].id == "qwen3-30b-a3b/bucket-to-pair");
  CHECK(plan[11].run_id == "qwen3-30b-a3b/hf-run-a-64/bucket-to-pair");
  for (const auto& it : c.items) CHECK(it.run->batching.max_length == 8192);
}
