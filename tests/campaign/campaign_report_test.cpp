// campaign report (campaign/report): records made from the prediction with known errors come back as those errors;
// cold and JIT values are set apart; a miss, a missing or partial run is a miss; and the committed families2 records
// give the figures docs/families.md quotes.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "campaign/predict.hpp"
#include "campaign/report.hpp"
#include "campaign_fixture.hpp"
#include "catch.hpp"
#include "io/campaign_io.hpp"

using stepcast::testing::campaign_head;
using stepcast::testing::CampaignRoot;
using Catch::Matchers::Contains;
namespace io = stepcast::io;
namespace campaign = stepcast::campaign;

namespace {

const char* kBody = R"(defaults:
  model: tests/data/configs/tiny-llama.json
  stack: hf-peft
  lora: {rank: 8, targets: [q_proj, v_proj]}
  time_limit_s: 60
  run:
    corpus: {synthetic: {samples: 20, seed: 5, components: [{median_tokens: 100, sigma: 0.7}]}}
    micro_batch: 2
    accumulation: 2
    max_length: 256
items:
  - id: warmup
    run: null
    probes: {points: [1x128, 2x128:0.25], kernels: [2x128]}
  - id: tiny
    run: {policies: [pad-to-longest, bucket-to-pair]}
  - id: later
    label: cold
    run: {policy: pad-to-longest}
checks:
  - metric: run_wall_clock
    goal: {error: 0.05}
  - metric: step_time
    goal: {error: 0.05}
    items: [warmup, tiny]
  - metric: pad_bucket_ratio
    goal: {error: 0.02}
  - metric: peak_allocated
    goal: {error: 0.03, under: 0.01}
    items: [warmup]
)";

// Records of every process from its prediction line, measured = predicted / (1 + error): what a device would have
// written if the prediction were off by exactly `error`.
struct Fabricator {
  const CampaignRoot& root;
  const io::Campaign& c;
  campaign::CampaignPrediction p;

  const nlohmann::json& line_of(const std::string& base) const {
    for (const auto& l : p.lines)
      if (l["item"] == base && l.contains("run")) return l;
    FAIL("no line for " << base);
    return p.lines.front();
  }
  void append(const std::string& file, const nlohmann::json& record) const {
    std::ofstream(root.path("records/" + file), std::ios::app) << record.dump() << "\n";
  }
  nlohmann::json base(const nlohmann::json& item, const nlohmann::json& rows, int64_t width) const {
    return {{"model", item["model"]}, {"gpu", "NVIDIA H200"}, {"tier", item["tier"]}, {"rows", rows},
            {"width", width},         {"item", item["id"]},   {"label", item["label"]}};
  }
  void probes(const nlohmann::json& item, double step_error, double bad_point_error, double peak_error) const {
    for (const auto& l : p.lines) {
      if (l.contains("run") || l["item"] != "warmup/probes") continue;
      nlohmann::json r = base(item, l["rows"], l["width"]);
      const bool bad = l["point"] == "2x128:0.25";
      r["probe"] = bad ? "padding" : "scaling";
      r["step_s"] = l["predicted_step_s"].get<double>() / (1 + (bad ? bad_point_error : step_error));
      r["peak_gib"] = l["predicted_peak_gib"].get<double>() / (1 + peak_error);
      append(item["records"], r);
    }
    nlohmann::json table = base(item, {128, 128}, 128);  // a kernel-table step: never a check point
    table["probe"] = "kernels";
    table["step_s"] = 99.0;
    append(item["records"], table);
  }
  void run(const nlohmann::json& item, double error, int64_t jit_at = -1, size_t keep = SIZE_MAX) const {
    const nlohmann::json& line = line_of(item["id"].get<std::string>().substr(0, item["id"].get<std::string>().find("/repeat")));
    const auto& mbs = line["micro_batches"];
    double elapsed = 0;
    for (size_t i = 0; i < mbs.size() && i < keep; ++i) {
      const auto& mb = mbs[i];
      const double step = (mb["step_s"].get<double>() + mb["first_seen_s"].get<double>() +
                           mb["run_start_s"].get<double>()) / (1 + error);
      const double optimizer = mb["optimizer_s"].get<double>() / (1 + error);
      elapsed += step + optimizer;
      nlohmann::json r = base(item, mb["rows"], mb["width"]);
      r["probe"] = "run";
      r["step_s"] = step;
      r["peak_gib"] = mb["peak_gib"];
      r["jit_cache_files_added"] = static_cast<int64_t>(i) == jit_at ? 4 : 0;
      nlohmann::json run = item["run"];
      run.erase("micro_batches");
      if (i > 0) run.erase("corpus_lengths");
      run["index"] = i;
      run["optimizer_step"] = i / 2;
      run["first_seen"] = mb["first_seen_s"].get<double>() > 0;
      run["elapsed_s"] = elapsed;
      if (mb["optimizer_s"].get<double>() > 0) run["optimizer_s"] = optimizer;
      r["run"] = run;
      append(item["records"], r);
    }
  }
  const nlohmann::json& item(const std::string& id) const {
    for (const auto& j : p.plan["items"])
      if (j["id"] == id) return j;
    FAIL("no plan item " << id);
    return p.plan;
  }
};

const campaign::ReportRow* row(const campaign::CampaignReport& r, const std::string& item, const std::string& metric,
                               bool judged = true) {
  for (const auto& x : r.rows)
    if (x.item == item && x.metric == metric && x.apart == !judged) return &x;
  return nullptr;
}

}  // namespace

TEST_CASE("records off by known errors come back as those errors, set apart where cold", "[campaign][report]") {
  CampaignRoot root;
  const io::Campaign c = io::load_campaign(root.campaign("rep", campaign_head("rep") + kBody));
  Fabricator f{root, c, campaign::predict_campaign(c)};
  campaign::write_prediction(c, f.p, "");
  std::filesystem::create_directories(root.path("records"));
  f.probes(f.item("warmup/probes"), 0.02, 0.20, 0.02);
  f.run(f.item("tiny/pad-to-longest"), 0.03);
  f.run(f.item("tiny/bucket-to-pair"), 0.03);
  f.run(f.item("later/pad-to-longest"), -0.30);

  SECTION("each row") {
    const campaign::CampaignReport r = campaign::build_report(c, root.path("records"));
    const auto* probe_steps = row(r, "warmup/probes", "step_time");
    REQUIRE(probe_steps != nullptr);
    CHECK(probe_steps->n == 2);  // the kernel-table record is not a check point
    CHECK(probe_steps->max_error == Approx(0.20));
    CHECK(probe_steps->mape == Approx(0.11));
    CHECK_FALSE(probe_steps->pass);
    const auto* peaks = row(r, "warmup/probes", "peak_allocated");
    REQUIRE(peaks != nullptr);
    CHECK(peaks->pass);
    CHECK(peaks->mean_error == Approx(0.02));
    const auto* wall = row(r, "tiny/pad-to-longest", "run_wall_clock");
    REQUIRE(wall != nullptr);
    CHECK(wall->n == 1);
    CHECK(wall->mean_error == Approx(0.03).epsilon(1e-6));
    CHECK(wall->pass);
    CHECK_THAT(wall->note, Contains("replay"));
    const auto* steps = row(r, "tiny/bucket-to-pair", "step_time");
    REQUIRE(steps != nullptr);
    CHECK(steps->n == static_cast<int64_t>(f.item("tiny/bucket-to-pair")["run"]["micro_batches"].size()));
    CHECK(steps->mape == Approx(0.03));
    CHECK(steps->pass);
    const auto* ratio = row(r, "tiny/pad-to-longest : bucket-to-pair", "pad_bucket_ratio");
    REQUIRE(ratio != nullptr);
    CHECK(ratio->n == 1);
    CHECK(std::abs(ratio->mean_error) < 1e-9);
    CHECK(ratio->pass);
    // The cold-labelled run is -30 % off: shown, never judged.
    CHECK(row(r, "later/pad-to-longest", "run_wall_clock") == nullptr);
    const auto* cold = row(r, "later/pad-to-longest", "run_wall_clock", false);
    REQUIRE(cold != nullptr);
    CHECK(cold->mean_error == Approx(-0.30));
    REQUIRE(r.misses.size() == 1);
    CHECK_THAT(r.misses[0], Contains("warmup/probes step_time: MAPE 11.0 %, max +20.0 % over 2 value(s)"));
    const std::string md = campaign::report_markdown(r);
    CHECK(md.rfind("MISS warmup/probes step_time", 0) == 0);  // misses first
    CHECK_THAT(md, Contains("| tiny/pad-to-longest | run_wall_clock | 1 |"));
    CHECK_THAT(md, Contains("Set apart"));
    CHECK(campaign::report_json(r)["rows"].size() == r.rows.size());
    CHECK(campaign::report_table(r).rows.size() == r.rows.size());
  }
  SECTION("a micro-batch that grew the JIT cache goes apart, and takes its run's wall clock along") {
    std::filesystem::remove(root.path("records/tiny__bucket-to-pair.jsonl"));
    f.run(f.item("tiny/bucket-to-pair"), 0.03, 0);
    const campaign::CampaignReport r = campaign::build_report(c, root.path("records"));
    const auto* steady = row(r, "tiny/bucket-to-pair", "step_time");
    const auto* apart = row(r, "tiny/bucket-to-pair", "step_time", false);
    REQUIRE(steady != nullptr);
    REQUIRE(apart != nullptr);
    CHECK(apart->n == 1);
    CHECK(steady->n + 1 == static_cast<int64_t>(f.item("tiny/bucket-to-pair")["run"]["micro_batches"].size()));
    CHECK(row(r, "tiny/bucket-to-pair", "run_wall_clock") == nullptr);
    const auto* wall = row(r, "tiny/bucket-to-pair", "run_wall_clock", false);
    REQUIRE(wall != nullptr);
    // the prediction's kernel compiles for this run (model/kernel_compiles.hpp) beside the one that grew the cache
    std::string predicted;
    for (const auto& i : f.line_of("tiny/bucket-to-pair")["predicted_compiles"]) {
      if (!predicted.empty()) predicted += ',';
      predicted += std::to_string(i.get<int64_t>());
    }
    CHECK_THAT(wall->note, Contains("kernel compiles predicted at micro-batch " +
                                    (predicted.empty() ? std::string("none") : predicted)));
    CHECK_THAT(wall->note, Contains("measured at 0"));
    const auto& line = f.line_of("tiny/bucket-to-pair");  // shown against the warm wall clock plus the compiles
    CHECK(wall->predicted == Approx(line["predicted_wall_clock_s"].get<double>() +
                                    line["predicted_compile_s"].get<double>()));
    CHECK(row(r, "tiny/pad-to-longest : bucket-to-pair", "pad_bucket_ratio", false) != nullptr);
  }
  SECTION("a missing process and a partial run are misses") {
    std::filesystem::remove(root.path("records/tiny__pad-to-longest.jsonl"));
    std::filesystem::remove(root.path("records/tiny__bucket-to-pair.jsonl"));
    f.run(f.item("tiny/bucket-to-pair"), 0.03, -1, 3);
    const campaign::CampaignReport r = campaign::build_report(c, root.path("records"));
    const auto* missing = row(r, "tiny/pad-to-longest", "run_wall_clock");
    REQUIRE(missing != nullptr);
    CHECK(missing->n == 0);
    CHECK(missing->note == "no records");
    CHECK_FALSE(missing->pass);
    const auto* partial = row(r, "tiny/bucket-to-pair", "run_wall_clock");
    REQUIRE(partial != nullptr);
    CHECK_THAT(partial->note, Contains("partial run: 3 of"));
    CHECK_FALSE(partial->pass);
    CHECK(r.misses.size() >= 3);
  }
  SECTION("a run that ran out of memory ends there: a partial run that names where") {
    // The executor records the OOM micro-batch and goes on; a trainer would have stopped there.
    const std::string file = root.path("records/tiny__bucket-to-pair.jsonl");
    std::vector<nlohmann::json> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
    in.close();
    REQUIRE(lines.size() > 3);
    lines[2]["oom"] = true;
    lines[2].erase("step_s");
    std::ofstream out(file, std::ios::trunc);
    for (const auto& j : lines) out << j.dump() << "\n";
    out.close();
    const campaign::CampaignReport r = campaign::build_report(c, root.path("records"));
    const auto* wall = row(r, "tiny/bucket-to-pair", "run_wall_clock");
    REQUIRE(wall != nullptr);
    CHECK_THAT(wall->note, Contains("partial run: 2 of"));
    CHECK_THAT(wall->note, Contains("out of memory at micro-batch 2"));
    CHECK_FALSE(wall->pass);
  }
  SECTION("records of another GPU are refused at their line") {
    std::ofstream(root.path("records/warmup__probes.jsonl"), std::ios::app)
        << R"({"model": "tiny-llama", "gpu": "NVIDIA L4", "tier": "t", "rows": [8], "width": 8, "step_s": 1})" << "\n";
    CHECK_THROWS_WITH(campaign::build_report(c, root.path("records")),
                      Contains("warmup__probes.jsonl:4: gpu 'NVIDIA L4'. Violated constraint: the campaign's GPU"));
  }
}

TEST_CASE("a pad / bucket ratio set apart holds each JIT-grown side to its warm clock plus its compiles",
          "[campaign][report]") {
  CampaignRoot root;
  const io::Campaign c = io::load_campaign(root.campaign("rep", campaign_head("rep") + kBody));
  Fabricator f{root, c, campaign::predict_campaign(c)};
  for (auto& l : f.p.lines)  // the registered prediction names a compile of 1.5 s in the bucketed run
    if (l["item"] == "tiny/bucket-to-pair" && l.contains("run")) l["predicted_compile_s"] = 1.5;
  campaign::write_prediction(c, f.p, "");
  std::filesystem::create_directories(root.path("records"));
  f.run(f.item("tiny/pad-to-longest"), 0.0);
  f.run(f.item("tiny/bucket-to-pair"), 0.0, 0);  // its first micro-batch grew the JIT cache
  const campaign::CampaignReport r = campaign::build_report(c, root.path("records"));
  const auto* ratio = row(r, "tiny/pad-to-longest : bucket-to-pair", "pad_bucket_ratio", false);
  REQUIRE(ratio != nullptr);
  const double pad = f.line_of("tiny/pad-to-longest")["predicted_wall_clock_s"].get<double>();
  const double bucket = f.line_of("tiny/bucket-to-pair")["predicted_wall_clock_s"].get<double>();
  CHECK(ratio->predicted == Approx(pad / (bucket + 1.5)));  // the warm pad run: no compile added to it
  const auto* wall = row(r, "tiny/bucket-to-pair", "run_wall_clock", false);
  REQUIRE(wall != nullptr);
  CHECK(wall->predicted == Approx(bucket + 1.5));
}

TEST_CASE("families2: the committed records give the figures docs/families.md quotes", "[campaign][report]") {
  const io::Campaign c = io::load_campaign(std::string(STEPCAST_MEASUREMENTS) + "/campaigns/families2.yaml");
  const std::string records = std::string(STEPCAST_MEASUREMENTS) + "/records/h200-qwen1.5-moe-a2.7b.jsonl";
  // docs/families.md: families2-merged.jsonl, step MAPE 36.5 % (max 67.0 %), peak 0.3 % (0.4 %).
  const campaign::CampaignReport merged = campaign::build_report(c, records);
  const auto* step = row(merged, "qwen1.5-moe-a2.7b/probes", "step_time");
  const auto* peak = row(merged, "qwen1.5-moe-a2.7b/probes", "peak_allocated");
  REQUIRE(step != nullptr);
  REQUIRE(peak != nullptr);
  CHECK(step->n == 12);
  CHECK(step->mape == Approx(0.365).margin(5e-4));
  CHECK(step->max_error == Approx(0.670).margin(5e-4));
  CHECK_FALSE(step->pass);
  CHECK(peak->mape == Approx(0.003).margin(5e-4));
  CHECK(std::abs(peak->max_error) == Approx(0.004).margin(5e-4));
  CHECK(peak->pass);
  CHECK(merged.misses.size() == 1);
  // ... and families2.jsonl, the earlier registration: 77.8 % (90.5 %), 33.9 % (45.3 %).
  const campaign::CampaignReport early =
      campaign::build_report(c, records, std::string(STEPCAST_MEASUREMENTS) + "/predictions/families2.jsonl");
  step = row(early, "qwen1.5-moe-a2.7b/probes", "step_time");
  peak = row(early, "qwen1.5-moe-a2.7b/probes", "peak_allocated");
  REQUIRE(step != nullptr);
  REQUIRE(peak != nullptr);
  CHECK(step->mape == Approx(0.778).margin(5e-4));
  CHECK(step->max_error == Approx(0.905).margin(5e-4));
  CHECK(peak->mape == Approx(0.339).margin(5e-4));
  CHECK(peak->max_error == Approx(0.453).margin(5e-4));
}
