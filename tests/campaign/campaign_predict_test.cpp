// campaign predict (campaign/predict): the prediction is the planner's and the predictor's own answer, the plan's
// micro-batches are the planner's schedule, and a registered prediction is never overwritten.
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "campaign/predict.hpp"
#include "campaign_fixture.hpp"
#include "catch.hpp"
#include "io/campaign_io.hpp"
#include "model/errors.hpp"
#include "model/kernel_compiles.hpp"
#include "planner/batching.hpp"
#include "planner/simulate.hpp"
#include "planner/timeline.hpp"

using stepcast::InputError;
using stepcast::testing::campaign_head;
using stepcast::testing::CampaignRoot;
using Catch::Matchers::Contains;
namespace io = stepcast::io;
namespace planner = stepcast::planner;
namespace campaign = stepcast::campaign;

namespace {

const char* kRuns = R"(items:
  - id: tiny
    model: tests/data/configs/tiny-llama.json
    stack: hf-peft
    lora: {rank: 8, alpha: 16, targets: [q_proj, v_proj]}
    time_limit_s: 60
    repeats: 2
    run:
      corpus: {synthetic: {samples: 40, seed: 11, components: [{median_tokens: 300, sigma: 0.8}]}}
      samples: 30
      policies: [pad-to-longest, bucket-to-pair]
      micro_batch: 3
      accumulation: 2
      max_length: 512
      pad_to_multiple_of: 8
      seed: 4
    probes: {points: [1x256, 2x256:0.25], kernels: [2x256:0.25, 1x128], host_profiles: [1x256, 4x64]}
checks:
  - metric: run_wall_clock
    goal: {error: 0.1}
)";

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("the plan's micro-batches are the planner's schedule, its shuffle included", "[campaign][predict]") {
  CampaignRoot root;
  const io::Campaign c = io::load_campaign(root.campaign("runs", campaign_head("runs") + kRuns));
  const campaign::CampaignPrediction p = campaign::predict_campaign(c);
  const io::CampaignItem& item = c.items[0];
  const planner::Corpus corpus = campaign::run_corpus(*item.run);
  REQUIRE(corpus.size() == 30);  // the head of the 40 samples
  const auto& items = p.plan["items"];
  REQUIRE(items.size() == 6);  // (probes + 2 policies) x 2 repeats
  for (const auto& j : items) {
    if (!j.contains("run")) continue;
    CAPTURE(j["id"]);
    planner::BatchingSpec spec = item.run->batching;
    spec.policy = *planner::parse_policy(j["run"]["policy"].get<std::string>());
    const planner::Schedule schedule = planner::build_schedule(corpus, spec, item.run->accumulation);
    const auto& mbs = j["run"]["micro_batches"];
    REQUIRE(static_cast<int64_t>(mbs.size()) == schedule.num_batches());
    stepcast::model::MicroBatch b;
    for (int64_t i = 0; i < schedule.num_batches(); ++i) {
      schedule.fill(i, b);
      CHECK(mbs[static_cast<size_t>(i)]["rows"].get<std::vector<int64_t>>() == b.rows);
      CHECK(mbs[static_cast<size_t>(i)]["width"].get<int64_t>() == b.width);
      CHECK(b.width % 8 == 0);
    }
    CHECK(j["run"]["corpus_lengths"].size() == 30);
    CHECK(j["run"]["seed"] == 4);
  }
  // bucket-to-pair shuffles its sorted micro-batches: not in length order, and not pad-to-longest's.
  const auto& bucket = items[2]["run"]["micro_batches"];
  CHECK(items[2]["id"] == "tiny/bucket-to-pair/repeat-0");
  bool sorted = true;
  for (size_t i = 1; i < bucket.size(); ++i) sorted = sorted && bucket[i]["width"] >= bucket[i - 1]["width"];
  CHECK_FALSE(sorted);
  CHECK(items[1]["run"]["micro_batches"] != bucket);
  // Repeats run the same micro-batches under their own ids.
  CHECK(items[4]["run"]["micro_batches"] == items[1]["run"]["micro_batches"]);
  CHECK(items[4]["run"]["id"] == "tiny-llama/synthetic-11-first-30/pad-to-longest/repeat-1");
  // Probes: the points, the kernel-table and the host-profile points, a point in several lists once.
  const auto& probes = items[0]["probes"];
  REQUIRE(probes.size() == 4);
  CHECK(probes[1]["point"] == "2x256:0.25");
  CHECK(probes[1]["kernels"] == true);
  CHECK(probes[2]["point"] == "1x128");
  CHECK_FALSE(probes[0].contains("kernels"));
  CHECK(probes[0]["host_profile"] == true);
  CHECK_FALSE(probes[1].contains("host_profile"));
  CHECK(probes[3]["point"] == "4x64");
  CHECK(probes[3]["host_profile"] == true);
}

TEST_CASE("run lines are plan simulation, micro-batch lines its timeline, probe lines predict --rows", "[campaign][predict]") {
  CampaignRoot root;
  const io::Campaign c = io::load_campaign(root.campaign("runs", campaign_head("runs") + kRuns));
  const campaign::CampaignPrediction p = campaign::predict_campaign(c);
  REQUIRE(p.lines.size() == 4);  // two points (kernel tables are not predicted), two runs; repeats share them
  const io::CampaignItem& item = c.items[0];
  const campaign::ItemPredictor predictor = campaign::item_predictor(c, item);
  const planner::Corpus corpus = campaign::run_corpus(*item.run);
  for (const auto& line : p.lines) {
    CHECK(line["campaign"] == "runs");
    CHECK(line["command"] == "stepcast campaign predict measurements/campaigns/runs.yaml");
    CHECK_THAT(line["predictor"].get<std::string>(),
               Contains("fitted file scenarios/coefficients/h200-gemma4-categories.yaml (--transfer)"));
    CHECK_THAT(line["transfer"].get<std::string>(), Contains("transferred: model 'gemma-4-26b-a4b' -> 'tiny-llama'"));
    CHECK(line.contains("stepcast_commit"));
    if (!line.contains("run")) {
      stepcast::model::MicroBatch b;
      b.rows = line["rows"].get<std::vector<int64_t>>();
      b.width = line["width"];
      CHECK(line["predicted_step_s"].get<double>() == predictor.model->step_s(b));
      CHECK(line["predicted_peak_gib"].get<double>() == predictor.model->probe_peak_gib(b));
      continue;
    }
    planner::BatchingSpec spec = item.run->batching;
    spec.policy = *planner::parse_policy(line["policy"].get<std::string>());
    planner::RunSpec run;
    run.accumulation = 2;
    run.gpu_memory_gib = 1e9;
    const planner::PlanResult plan = planner::simulate(corpus, spec, run, *predictor.model);
    CHECK(line["predicted_wall_clock_s"].get<double>() == plan.wall_clock_s);
    CHECK(line["optimizer_steps"] == plan.steps);
    double sum = 0;
    for (const auto& mb : line["micro_batches"])
      sum += mb["step_s"].get<double>() + mb["first_seen_s"].get<double>() + mb["run_start_s"].get<double>() +
             mb["optimizer_s"].get<double>();
    CHECK(sum == Approx(plan.wall_clock_s).epsilon(1e-9));  // the timeline and the simulation are one rule
  }
}

TEST_CASE("families2 asks its registered file's questions", "[campaign][predict]") {
  // The registered file's numbers came from the predictor of its day (families2-merged.jsonl, docs/campaigns.md):
  // the campaign asks the same points of the same model with the same file; what today's predictor answers is the
  // predictor's, and `campaign report --prediction` still holds the records to the registered numbers.
  const io::Campaign c = io::load_campaign(std::string(STEPCAST_MEASUREMENTS) + "/campaigns/families2.yaml");
  const campaign::CampaignPrediction p = campaign::predict_campaign(c);
  const auto registered = json_lines(std::string(STEPCAST_MEASUREMENTS) + "/predictions/families2-merged.jsonl");
  REQUIRE(p.lines.size() == registered.size());
  for (size_t i = 0; i < registered.size(); ++i) {
    CAPTURE(registered[i]["point"]);
    for (const char* key : {"point", "rows", "width", "coefficients", "model"}) CHECK(p.lines[i][key] == registered[i][key]);
  }
  // The harness's command line: the points of the families2.sh it replaces, in its order.
  const auto& args = p.plan["items"][0]["measure_args"];
  CHECK(args[7] == "scaling:1x1024,scaling:1x2048,scaling:1x4096,scaling:1x8192,scaling:2x2048,scaling:4x2048,"
                   "scaling:2x4096,scaling:4x1024,padding:2x4096:0.25,padding:4x2048:0.37,padding:1x8192:0.25,"
                   "padding:2x2048:0.125,kernels:2x4096,kernels:2x4096:0.25");
  CHECK(p.plan["items"][0]["dry_run_args"][1] == "tests/data/configs/tiny-qwen2-moe.json");
}

TEST_CASE("a registered prediction is never overwritten", "[campaign][predict]") {
  CampaignRoot root;
  const io::Campaign c = io::load_campaign(root.campaign("runs", campaign_head("runs") + kRuns));
  const campaign::CampaignPrediction p = campaign::predict_campaign(c);
  const campaign::WrittenPrediction w = campaign::write_prediction(c, p, "");
  CHECK(w.prediction == root.path("measurements/predictions/runs.jsonl"));
  CHECK(w.plan == root.path("measurements/predictions/runs.plan.json"));
  const std::string first = root.read("measurements/predictions/runs.jsonl");
  CHECK(first.size() > 100);
  root.write("measurements/predictions/runs.plan.json", "kept\n");
  CHECK_THROWS_WITH(campaign::write_prediction(c, p, ""), Contains("runs.jsonl: exists. Violated constraint: a "
                                                                    "pre-registered prediction is never overwritten"));
  CHECK(root.read("measurements/predictions/runs.jsonl") == first);
  CHECK(root.read("measurements/predictions/runs.plan.json") == "kept\n");
  // --out: both elsewhere, the folder made; and refused there in turn.
  const campaign::WrittenPrediction dry = campaign::write_prediction(c, p, root.path("dry/run"));
  CHECK(root.read("dry/run/runs.jsonl") == first);
  CHECK(nlohmann::json::parse(root.read("dry/run/runs.plan.json"))["prediction_file"] ==
        "measurements/predictions/runs.jsonl");
  CHECK_THROWS_AS(campaign::write_prediction(c, p, root.path("dry/run")), InputError);
}

TEST_CASE("what only the predictor can refuse: a transfer not allowed, reserved memory", "[campaign][predict]") {
  CampaignRoot root;
  std::string head = campaign_head("t");
  head.replace(head.find("transfer: true\n"), 15, "");
  const io::Campaign no_transfer = io::load_campaign(root.campaign("t", head + kRuns));
  CHECK_THROWS_WITH(campaign::predict_campaign(no_transfer), Contains("h200-gemma4-categories.yaml:10: asked for model "
                                                                        "'tiny-llama'") &&
                                                               Contains("needs --transfer"));
  const io::Campaign reserved = io::load_campaign(root.campaign(
      "r", campaign_head("r") + std::string(kRuns) + "  - metric: peak_reserved\n    goal: {error: 0.1}\n"));
  CHECK_THROWS_WITH(campaign::predict_campaign(reserved), Contains("r.yaml:27:5: metric peak_reserved"));
}

TEST_CASE("harness processes carry stepcast measure's arguments, a run its corpus for standard input", "[campaign][predict]") {
  const io::Campaign c = io::load_campaign(std::string(STEPCAST_TEST_DATA) + "/campaigns/harness-run.yaml");
  const campaign::CampaignPrediction p = campaign::predict_campaign(c);
  const auto& items = p.plan["items"];
  REQUIRE(items.size() == 3);
  const auto args = [](const nlohmann::json& j, const char* key) {
    std::string out;
    for (const auto& a : j[key]) out += a.get<std::string>() + " ";
    return out;
  };
  CHECK(args(items[0], "measure_args") ==
        "--model tests/data/configs/tiny-qwen2-moe.json --tiers sdpa-auto/loop --dtype bfloat16 --points "
        "scaling:1x64,padding:2x64:0.25 --warmup 0 --repetitions 1 --lora-rank 8 --lora-alpha 16 --lora-dropout 0.05 "
        "--lora-targets q_proj,v_proj --no-checkpointing ");
  CHECK(args(items[2], "measure_args") ==
        "--model tests/data/configs/tiny-qwen2-moe.json --tiers sdpa-auto/loop --dtype bfloat16 --run-corpus - "
        "--max-length 96 --policy pack --micro-batch 2 --accumulation 2 --pad-to-multiple-of 1 --shuffle-seed 7 "
        "--run-id tiny-qwen2-moe/packing-32-first-20/pack --packer ffd --pack-attention block-mask --lora-rank 8 "
        "--lora-alpha 16 --lora-dropout 0.05 --lora-targets q_proj,v_proj --no-checkpointing ");
  CHECK(items[2]["run"]["corpus_lengths"].size() == 20);
  // The CPU dry run: the same flow on a synthetic mix of a few windows, widths cut.
  CHECK_THAT(args(items[2], "dry_run_args"), Contains("--device cpu --dtype float32 --run-synthetic 8:7 --max-length 32 "
                                                      "--policy pack"));
  CHECK_THAT(args(items[0], "dry_run_args"), Contains("--points scaling:1x16,padding:2x16:0.25 --warmup 0"));
}

TEST_CASE("run lines name the machine's kernel compiles in plan order, probes included", "[campaign][predict]") {
  CampaignRoot root;
  const io::Campaign c = io::load_campaign(root.campaign("runs", campaign_head("runs") + kRuns));
  const campaign::CampaignPrediction p = campaign::predict_campaign(c);
  std::set<int> compiled;  // the classes compiled so far (tiny-llama has one head size)
  int64_t runs = 0;
  for (const auto& line : p.lines) {
    if (!line.contains("run")) continue;
    ++runs;
    double seconds = 0;
    const auto& mbs = line["micro_batches"];
    for (const auto& i : line["predicted_compiles"]) {
      const auto& mb = mbs[i.get<size_t>()];
      stepcast::model::MicroBatch b;
      b.rows = mb["rows"].get<std::vector<int64_t>>();
      b.width = mb["width"];
      const int cls = stepcast::model::kernel_compile_class(b);
      CHECK(compiled.insert(cls).second);  // no class compiles twice on one machine
      // the 2 x 256 padded probe ran first: padded widths that 128 divides never compile in the runs
      CHECK_FALSE((b.has_padding() && b.width % 128 == 0));
      CHECK(mb["compile_s"].get<double>() == stepcast::model::kKernelCompileS);
      seconds += mb["compile_s"].get<double>();
    }
    CHECK(line["predicted_compile_s"].get<double>() == Approx(seconds));
  }
  CHECK(runs == 2);
  CHECK_FALSE(compiled.empty());
}
