// Recovery of a run's memory terms (docs/method.md, "Memory of a run"): recorded runs simulated with known
// coefficients through the library's own run memory (StepModel::memory_parts / run_memory, the reserved
// recursion of planner/memory_timeline.hpp) and the fields an executor writes (calibrate/run_records.hpp), plus
// probe records; the fit gets every coefficient back and writes an interval with its coverage. Then the
// coefficient file round-trips and `plan` reads it.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "calibrate/fit.hpp"
#include "calibrate/run_records.hpp"
#include "catch.hpp"
#include "cli_runner.hpp"
#include "io/coefficients_io.hpp"
#include "io/model_config.hpp"
#include "model/step_model.hpp"
#include "temp_file.hpp"

namespace sc = stepcast::calibrate;
namespace sm = stepcast::model;

namespace {

constexpr double kRunTokenKib = 180;        // what a run's micro-batch holds beyond a probe step, per token
constexpr double kFirstSeenTokenKib = 90;   // more on a shape new to the process
constexpr double kOptimizerScale = 1.5;     // clip + AdamW temporaries per GiB of the trained parameters
constexpr double kShare = 0.4;              // default allocator: share of the earlier largest working set kept
constexpr double kExpandableShare = 0.05;
constexpr double kContextGib = 0.55;
constexpr double kStartRoundingGib = 0.3;   // reserved - allocated before the first step

sm::Coefficients truth() {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "hf-peft/sdpa-grouped_mm";
  auto set = [](sm::Term& t, double v) { t = {v, 0, true, ""}; };
  set(c.step[sm::kGemm], 0.0045);
  set(c.step[sm::kAttention], 0.009);
  set(c.memory[sm::kMemFixed], 0.1);
  set(c.memory[sm::kMemActivation], 1.0);
  set(c.memory[sm::kMemRunToken], kRunTokenKib);
  set(c.memory[sm::kMemFirstSeenToken], kFirstSeenTokenKib);
  set(c.memory[sm::kMemOptimizerTransient], kOptimizerScale);
  set(c.memory[sm::kMemFragmentation], kShare);
  set(c.memory[sm::kMemExpandableFragmentation], kExpandableShare);
  set(c.memory[sm::kMemContext], kContextGib);
  return c;
}

sc::Record base_record(const sm::Coefficients& c, std::vector<int64_t> rows, int64_t width, int64_t line) {
  sc::Record r;
  r.model = c.model;
  r.gpu = c.gpu;
  r.tier = c.tier;
  r.rows = std::move(rows);
  r.width = width;
  r.line = line;
  r.file = "simulated.jsonl";
  return r;
}

// Probe records: repeated steps (no run state beyond the steady one), peaks with 0.01 GiB of noise.
void add_probes(const sm::StepModel& m, const sm::Coefficients& c, std::mt19937& rng, std::vector<sc::Record>& out) {
  std::normal_distribution<double> gauss(0.0, 1.0);
  for (int64_t w : {512, 1024, 2048, 4096, 8192})
    for (int64_t rows : {1, 2}) {
      sc::Record r = base_record(c, std::vector<int64_t>(static_cast<size_t>(rows), w), w, static_cast<int64_t>(out.size()) + 1);
      const auto b = sc::to_batch(r);
      r.step_s = m.step_s(b);
      r.peak_gib = m.probe_peak_gib(b) + 0.01 * gauss(rng);
      out.push_back(r);
    }
}

// One recorded run of 16 micro-batches of 2 rows, accumulation 4, as an executor writes it.
void add_run(const sm::StepModel& m, const sm::Coefficients& c, sm::Allocator allocator, int id, std::mt19937& rng,
             std::vector<sc::Record>& out) {
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 4);
  const int64_t widths[] = {1024, 2048, 3072, 4096, 6144};
  const sm::RunMemory run = m.run_memory(allocator);
  const double share = allocator == sm::Allocator::caching ? kShare : kExpandableShare;
  std::vector<int64_t> seen;
  double reserved = run.state_gib(false) - run.gradients_gib + kStartRoundingGib, largest = 0, elapsed = 0;
  const double rounding = kStartRoundingGib;
  for (int64_t i = 0; i < 16; ++i) {
    const int64_t w = widths[pick(rng)];
    const bool first = std::find(seen.begin(), seen.end(), w) == seen.end();
    seen.push_back(w);
    sc::Record r = base_record(c, {w, w * 3 / 4}, w, static_cast<int64_t>(out.size()) + 1);
    const auto b = sc::to_batch(r);
    const bool after = i >= 4;
    const double allocated = run.micro_batch_gib(m.memory_parts(b), {true, after, first});
    r.peak_gib = allocated + 0.01 * gauss(rng);
    r.step_s = m.step_s(b);
    // Measured before it: no gradients at a window's start (zero_grad(set_to_none=True)), AdamW's after a step.
    const double before = run.weights_gib + run.trainable_gib + run.fixed_gib + (i % 4 > 0 ? run.gradients_gib : 0.0) +
                          (after ? run.optimizer_state_gib : 0.0);
    const double working = *r.peak_gib - before;
    double need = before + rounding + working;
    if (working > largest) {
      need += share * largest;
      largest = working;
    }
    const double reserved_before = reserved;
    reserved = std::max(reserved, need);
    nlohmann::json memory{{"allocated_before_gib", before},
                          {"reserved_before_gib", reserved_before},
                          {"allocated_after_gib", before + run.gradients_gib * (i % 4 == 0 ? 1 : 0)},
                          {"device_used_gib", reserved + kContextGib + 0.003 * gauss(rng)},
                          {"card_total_gib", 139.8},
                          {"alloc_retries", 0},
                          {"inactive_split_gib", 0.1}};
    sc::RunFields f;
    f.id = "run-" + std::to_string(id);
    f.policy = "pad-to-longest";
    f.micro_batch = 2;
    f.accumulation = 4;
    f.index = i;
    f.optimizer_step = i / 4;
    f.first_seen = first;
    elapsed += *r.step_s;
    if ((i + 1) % 4 == 0) {
      const double optimizer_peak = run.state_gib(true) + kOptimizerScale * m.features().trainable().gradients + 0.005 * gauss(rng);
      memory["optimizer_peak_gib"] = optimizer_peak;
      memory["optimizer_reserved_gib"] = reserved;
      f.optimizer_s = 0.01;
      elapsed += 0.01;
    }
    f.elapsed_s = elapsed;
    r.extra["probe"] = "run";
    r.extra["run"] = sc::run_json(f);
    r.extra["memory"] = memory;
    r.extra["peak_reserved_gib"] = reserved + 0.005 * std::abs(gauss(rng));  // the allocator's own rounding
    if (i == 0)
      r.extra["memory_start"] = {{"weights_gib", before},
                                 {"context_gib", kContextGib - 0.05},  // before the kernels of the first step load
                                 {"reserved_gib", reserved_before},
                                 {"allocator", allocator == sm::Allocator::caching ? "default" : "expandable_segments"}};
    out.push_back(r);
  }
}

std::vector<sc::Record> simulated(const sm::StepModel& m, const sm::Coefficients& c) {
  std::mt19937 rng(11);
  std::vector<sc::Record> records;
  add_probes(m, c, rng, records);
  for (int id = 0; id < 6; ++id)
    add_run(m, c, id < 4 ? sm::Allocator::caching : sm::Allocator::expandable_segments, id, rng, records);
  return records;
}

}  // namespace

TEST_CASE("a run's memory terms come back from simulated recorded runs", "[recovery][memory]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto c = truth();
  const sm::StepModel m(shape, c);
  const auto report = sc::fit(shape, simulated(m, c), sc::FitOptions{});
  const auto& got = report.coefficients.memory;
  for (int j : {sm::kMemRunToken, sm::kMemFirstSeenToken, sm::kMemFragmentation, sm::kMemExpandableFragmentation}) {
    INFO(sm::memory_term_names()[j] << " = " << got[j].value << " ± " << got[j].std_error << " (truth "
                                    << c.memory[j].value << "): " << got[j].reason);
    REQUIRE(got[j].selected);
    CHECK(std::abs(got[j].value - c.memory[j].value) < 4 * got[j].std_error + 0.02 * c.memory[j].value);
  }
  INFO(got[sm::kMemOptimizerTransient].reason);
  REQUIRE(got[sm::kMemOptimizerTransient].selected);
  CHECK(got[sm::kMemOptimizerTransient].value == Approx(kOptimizerScale).epsilon(0.05));
  // The context: the runs' largest device used - reserved, within its noise (0.003 GiB).
  REQUIRE(got[sm::kMemContext].selected);
  CHECK(got[sm::kMemContext].value == Approx(kContextGib).margin(0.015));
  // The interval from held-out runs holds the point estimate, is as narrow as the noise, and is checked.
  REQUIRE(report.coefficients.peak_interval.has_value());
  const auto& p = *report.coefficients.peak_interval;
  CHECK(p.runs == 6);
  CHECK(p.points == 96);
  CHECK(p.low <= 1.0);
  CHECK(p.high >= 1.0);
  CHECK(p.high - p.low < 0.002);
  CHECK(p.coverage >= 0.7);
}

TEST_CASE("pooled runs of two models give the optimizer's scale per GiB each trains, not over one model's",
          "[recovery][memory][pooled]") {
  // Llama-3-8B's adapters are almost four times Llama-3.2-1B's: the same scale per GiB makes excesses that differ
  // as much, and their median over one model's GiB would miss it.
  std::vector<sc::Record> records;
  std::map<std::string, sm::ModelShape> shapes;
  std::mt19937 rng(5);
  double gib[2] = {0, 0};
  int n = 0;
  for (const char* name : {"llama-3-8b", "llama-3.2-1b"}) {
    const auto shape = stepcast::io::load_model(name);
    shapes.emplace(name, shape);
    auto c = truth();
    c.model = name;
    const sm::StepModel m(shape, c);
    gib[n++] = m.features().trainable().gradients;
    add_probes(m, c, rng, records);
    for (int id = 0; id < 3; ++id) add_run(m, c, sm::Allocator::caching, id + 10 * n, rng, records);
  }
  REQUIRE(gib[0] > 2 * gib[1]);
  for (size_t i = 0; i < records.size(); ++i) records[i].line = static_cast<int64_t>(i) + 1;
  const auto report = sc::fit(sc::FitShapes(shapes), records, sc::FitOptions{});
  const auto& t = report.coefficients.memory[sm::kMemOptimizerTransient];
  INFO(t.reason);
  REQUIRE(t.selected);
  CHECK(t.value == Approx(kOptimizerScale).epsilon(0.05));
}

TEST_CASE("records that are not runs give no run terms and no interval", "[recovery][memory]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto c = truth();
  const sm::StepModel m(shape, c);
  auto records = simulated(m, c);
  sc::FitOptions o;
  REQUIRE(sc::fit(shape, records, o).coefficients.peak_interval);
  // The same records read as probes (no "probe": "run"): nothing exercises the run terms, nothing is held out.
  for (auto& r : records) r.extra.erase("probe");
  const auto without = sc::fit(shape, records, o);
  CHECK_FALSE(without.coefficients.memory[sm::kMemRunToken].selected);
  CHECK_FALSE(without.coefficients.peak_interval.has_value());  // no recorded runs left to hold out
}

TEST_CASE("the fitted file round-trips and plan reads its interval and context", "[recovery][memory][cli]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto c = truth();
  const sm::StepModel m(shape, c);
  const auto fitted = sc::fit(shape, simulated(m, c), sc::FitOptions{}).coefficients;
  stepcast::testing::TempFile file("", ".yaml");
  stepcast::io::save_coefficients(file.path(), fitted);
  const auto back = stepcast::io::load_coefficients(file.path());
  REQUIRE(back.peak_interval.has_value());
  CHECK(back.peak_interval->low == Approx(fitted.peak_interval->low));
  CHECK(back.peak_interval->coverage == Approx(fitted.peak_interval->coverage));
  for (int j = 0; j < sm::kMemoryTerms; ++j) CHECK(back.memory[j].value == Approx(fitted.memory[j].value));
  // A plan with it: a measured interval and context, so a roomy plan FITS, with its margin.
  const auto r = stepcast::testing::run_cli("plan " STEPCAST_SCENARIOS "/h200-gemma-4-26b-a4b.yaml --coefficients " +
                                            file.path() + " --micro-batch 1 --max-length 4096 --accumulation 16 --no-sweep "
                                            "--format json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& mem = j["baseline"]["memory"];
  CHECK(mem["verdict"] == "fits");
  CHECK(mem["usable_gib"].get<double>() == Approx(139.8 - fitted.memory[sm::kMemContext].value));
  CHECK(mem["peak_interval_gib"][1].get<double>() >= mem["peak_gib"].get<double>());
  CHECK(mem["margin_gib"].get<double>() == Approx(mem["usable_gib"].get<double>() - mem["need_high_gib"].get<double>()));
  // The allocator changes the reserved peak, not the allocated one.
  const auto e = stepcast::testing::run_cli("plan " STEPCAST_SCENARIOS "/h200-gemma-4-26b-a4b.yaml --coefficients " +
                                            file.path() + " --micro-batch 1 --max-length 4096 --accumulation 16 --no-sweep "
                                            "--allocator expandable-segments --format json");
  REQUIRE(e.exit_code == 0);
  const auto ej = nlohmann::json::parse(e.out);
  const auto& emem = ej["baseline"]["memory"];
  CHECK(emem["allocator"] == "expandable-segments");
  CHECK(emem["peak_gib"].get<double>() == Approx(mem["peak_gib"].get<double>()));
  CHECK(emem["reserved_peak_gib"].get<double>() < mem["reserved_peak_gib"].get<double>());
}

TEST_CASE("calibrate fits the run terms from a file, validate --run checks each run's peaks against them",
          "[recovery][memory][cli]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto c = truth();
  const sm::StepModel m(shape, c);
  std::string text;
  for (const auto& r : simulated(m, c)) text += sc::to_json(r).dump() + "\n";
  // tests/data/runs/simulated-memory-runs.jsonl (the fuzz seed and the docs' example) was written this way.
  if (const char* dump = std::getenv("STEPCAST_DUMP_SIMULATED_RUNS")) std::ofstream(dump) << text;
  const stepcast::testing::TempFile records(text, ".jsonl");
  stepcast::testing::TempFile out("", ".yaml");
  std::filesystem::remove(out.path());
  const auto fit = stepcast::testing::run_cli("calibrate --measurements " + records.path() + " --prior none --out " +
                                              out.path() + " --format json");
  INFO(fit.err);
  REQUIRE(fit.exit_code == 0);
  const auto j = nlohmann::json::parse(fit.out);
  const auto& coefficients = j.contains("coefficients") ? j["coefficients"] : j;
  CHECK(coefficients["memory"]["run_token_kib"]["selected"] == true);
  CHECK(coefficients["memory"]["fragmentation_share"]["selected"] == true);
  CHECK(coefficients["peak_interval"]["runs"] == 6);
  const auto v = stepcast::testing::run_cli("validate --run " + records.path() + " --coefficients " + out.path() +
                                            " --format json");
  INFO(v.err);
  REQUIRE(v.exit_code == 0);
  const auto runs = nlohmann::json::parse(v.out)["runs"];
  REQUIRE(runs.size() == 6);
  for (const auto& run : runs) {
    const auto& mem = run["memory"];
    CHECK(std::abs(mem["error_rel"].get<double>()) < 0.002);
    CHECK(mem["inside_interval"].is_boolean());
    CHECK(mem["interval_gib"].size() == 2);
    CHECK(std::abs(mem["predicted_reserved_gib"].get<double>() / mem["measured_reserved_gib"].get<double>() - 1) < 0.01);
    CHECK(std::abs(mem["missing_kib_per_token"].get<double>()) < 5);
  }
  const auto text_out = stepcast::testing::run_cli("validate --run " + records.path() + " --coefficients " + out.path());
  CHECK_THAT(text_out.out, Catch::Matchers::Contains("memory (default allocator): allocated peak measured") &&
                               Catch::Matchers::Contains("memory (expandable-segments allocator)") &&
                               Catch::Matchers::Contains("the coefficients' interval"));
}
