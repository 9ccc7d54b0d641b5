// Recorded runs (calibrate/run_records.hpp): a good file reads into runs in first-appearance order with
// their totals; every broken run is an InputError naming file:line; the same id in two files is two runs.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "calibrate/run_records.hpp"
#include "catch.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"

namespace sc = stepcast::calibrate;
using stepcast::testing::TempFile;

namespace {

// One micro-batch of a run as one JSON line (the writers' format: a record plus probe/run).
std::string line(const std::vector<int64_t>& rows, int64_t width, double step_s, const sc::RunFields& f) {
  sc::Record r;
  r.model = "gemma-4-26b-a4b";
  r.gpu = "NVIDIA H200";
  r.tier = "hf-peft/sdpa-grouped_mm";
  r.rows = rows;
  r.width = width;
  r.step_s = step_s;
  r.extra["probe"] = "run";
  r.extra["run"] = sc::run_json(f);
  return sc::to_json(r).dump() + "\n";
}

sc::RunFields fields(const std::string& id, int64_t index, int64_t accumulation, double elapsed_s) {
  sc::RunFields f;
  f.id = id;
  f.policy = id == "c7/sorted" ? "bucket-to-pair" : "pad-to-longest";
  f.micro_batch = 2;
  f.accumulation = accumulation;
  f.max_length = 4096;
  f.pad_to_multiple_of = 64;
  f.seed = 7;
  f.index = index;
  f.optimizer_step = index / accumulation;
  f.elapsed_s = elapsed_s;
  return f;
}

const char* kSteady =
    R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "hf-peft/sdpa-grouped_mm", "rows": [512], "width": 512, "step_s": 0.41})"
    "\n";

// Two runs over one corpus, their lines interleaved, and a steady-state probe record that is not a run.
std::string two_runs() {
  sc::RunFields a0 = fields("c7/longest", 0, 2, 3.0);
  a0.first_seen = true;
  a0.corpus_lengths = {300, 100, 900, 700, 200};
  sc::RunFields a1 = fields("c7/longest", 1, 2, 3.8);
  a1.optimizer_s = 0.3;
  sc::RunFields a2 = fields("c7/longest", 2, 2, 4.6);
  a2.first_seen = true;
  a2.optimizer_s = 0.1;  // the last micro-batch of a run that ends mid-window closes it
  sc::RunFields b0 = fields("c7/sorted", 0, 4, 2.5);
  b0.first_seen = true;
  b0.corpus_lengths = a0.corpus_lengths;
  sc::RunFields b1 = fields("c7/sorted", 1, 4, 2.5);  // elapsed may stay (non-decreasing)
  b1.first_seen = true;
  return std::string(kSteady) + line({300, 100}, 320, 2.7, a0) + line({300}, 320, 3.0, b0) + line({900, 700}, 960, 0.5, a1) +
         line({700, 900}, 960, 0.2, b1) + line({200}, 256, 0.7, a2);
}

std::vector<sc::RecordedRun> runs_of(const std::string& path) {
  return sc::read_runs(sc::read_records(path), path);
}

// The problems read_runs reports for `text` (empty: it read).
std::vector<std::string> problems_of(const std::string& text, std::string* path_out = nullptr) {
  TempFile f(text, ".jsonl");
  if (path_out != nullptr) *path_out = f.path();
  try {
    runs_of(f.path());
  } catch (const stepcast::InputError& e) {
    return e.problems();
  }
  return {};
}

}  // namespace

TEST_CASE("read_runs: two interleaved runs, in first-appearance order, with their totals", "[runs]") {
  TempFile f(two_runs(), ".jsonl");
  const auto runs = runs_of(f.path());
  REQUIRE(runs.size() == 2);
  const auto& a = runs[0];
  const auto& b = runs[1];
  CHECK(a.id == "c7/longest");
  CHECK(b.id == "c7/sorted");
  CHECK(a.policy == "pad-to-longest");
  CHECK(b.policy == "bucket-to-pair");
  CHECK(a.micro_batch == 2);
  CHECK(a.accumulation == 2);
  CHECK(b.accumulation == 4);
  CHECK(a.max_length == 4096);
  CHECK(a.pad_to_multiple_of == 64);
  CHECK(a.seed == 7);
  CHECK(a.corpus_lengths == std::vector<int32_t>{300, 100, 900, 700, 200});
  CHECK(b.corpus_lengths == a.corpus_lengths);
  REQUIRE(a.steps.size() == 3);
  REQUIRE(b.steps.size() == 2);
  for (size_t i = 0; i < a.steps.size(); ++i) CHECK(a.steps[i].index == static_cast<int64_t>(i));
  CHECK(a.steps[2].optimizer_step == 1);
  // File lines: 1 is the steady record, then a0 b0 a1 b1 a2.
  CHECK(a.steps[0].record.line == 2);
  CHECK(a.steps[1].record.line == 4);
  CHECK(a.steps[2].record.line == 6);
  CHECK(b.steps[1].record.line == 5);
  CHECK(a.steps[1].record.rows == std::vector<int64_t>{900, 700});
  CHECK(a.steps[1].record.width == 960);
  CHECK(*a.steps[1].record.step_s == 0.5);
  CHECK(a.steps[0].first_seen);
  CHECK_FALSE(a.steps[1].first_seen);
  CHECK(a.steps[2].first_seen);
  CHECK_FALSE(a.steps[0].optimizer_s.has_value());
  CHECK(*a.steps[1].optimizer_s == 0.3);
  CHECK(a.total_s() == 4.6);  // the last elapsed_s, not a sum
  CHECK(b.total_s() == 2.5);
  CHECK(a.optimizer_total_s() == Approx(0.4).epsilon(1e-12));
  CHECK(b.optimizer_total_s() == 0.0);
}

TEST_CASE("read_runs: a file without run records has no runs", "[runs]") {
  TempFile f(kSteady, ".jsonl");
  CHECK(runs_of(f.path()).empty());
}

TEST_CASE("read_runs: each broken run is an InputError at file:line", "[runs]") {
  struct Case {
    std::string name;
    std::string text;
    int line;              // where the problem is
    std::string fragment;  // a piece of the message
  };
  sc::RunFields ok0 = fields("r", 0, 2, 1.0);
  sc::RunFields ok1 = fields("r", 1, 2, 2.0);
  sc::RunFields gap = fields("r", 2, 2, 2.0);
  gap.optimizer_step = 0;  // only the index is wrong
  sc::RunFields back = fields("r", 1, 2, 0.5);
  sc::RunFields wrong_window = fields("r", 1, 2, 2.0);
  wrong_window.optimizer_step = 1;  // index 1 / accumulation 2 = window 0
  sc::RunFields one_row = fields("r", 0, 2, 1.0);
  one_row.micro_batch = 1;
  sc::RunFields other_policy = fields("r", 1, 2, 2.0);
  other_policy.policy = "fixed";
  const std::string first = line({100}, 100, 1.0, ok0);
  const std::string no_run =
      R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "t", "rows": [100], "width": 100, "step_s": 1, "probe": "run"})"
      "\n";
  std::string missing_elapsed = line({100}, 100, 1.0, ok1);
  missing_elapsed.replace(missing_elapsed.find("\"elapsed_s\""), 11, "\"elapsed_x\"");
  auto c = GENERATE_COPY(values<Case>({
      {"a gap in the indices", first + line({100}, 100, 1.0, gap), 2, "run.index = 2"},
      {"elapsed_s going backwards", first + line({100}, 100, 1.0, back), 2, "elapsed_s went backwards"},
      {"no run object", first + no_run, 2, "needs a `run` object"},
      {"more rows than the micro-batch", line({100, 90}, 100, 1.0, one_row), 1, "<= run.micro_batch = 1"},
      {"an optimizer step that is not index / accumulation", first + line({100}, 100, 1.0, wrong_window), 2,
       "index / accumulation = 0"},
      {"a run changing its policy", first + line({100}, 100, 1.0, other_policy), 2, "changes policy"},
      {"no elapsed_s", first + missing_elapsed, 2, "run.elapsed_s is missing"},
      {"an index that does not start at 0", line({100}, 100, 1.0, ok1), 1, "run.index = 1"},
  }));
  INFO(c.name);
  std::string path;
  const auto problems = problems_of(c.text, &path);
  REQUIRE(problems.size() == 1);
  INFO(problems[0]);
  CHECK(problems[0].rfind(path + ":" + std::to_string(c.line) + ":", 0) == 0);
  CHECK(problems[0].find(c.fragment) != std::string::npos);
}

TEST_CASE("read_runs: every problem of a file is reported at once", "[runs]") {
  sc::RunFields r0 = fields("r", 0, 1, 1.0);
  sc::RunFields r1 = fields("r", 1, 1, 0.5);  // backwards
  sc::RunFields s0 = fields("s", 0, 1, 1.0);
  s0.micro_batch = 1;                          // 2 rows in a micro-batch of 1
  std::string path;
  const auto problems =
      problems_of(line({10}, 10, 1.0, r0) + line({10}, 10, 0.5, r1) + line({10, 10}, 10, 1.0, s0), &path);
  REQUIRE(problems.size() == 2);
  const bool line2_then_3 = problems[0].rfind(path + ":2:", 0) == 0 && problems[1].rfind(path + ":3:", 0) == 0;
  const bool line3_then_2 = problems[0].rfind(path + ":3:", 0) == 0 && problems[1].rfind(path + ":2:", 0) == 0;
  CHECK((line2_then_3 || line3_then_2));
}

TEST_CASE("read_runs: the same run id in two files is two runs", "[runs]") {
  const std::string text = line({100}, 100, 1.0, fields("c7/longest", 0, 1, 1.0)) +
                           line({200}, 200, 1.5, fields("c7/longest", 1, 1, 2.5));
  TempFile a(text, ".jsonl");
  TempFile b(text, ".jsonl");
  auto records = sc::read_records(a.path());
  const auto more = sc::read_records(b.path());
  records.insert(records.end(), more.begin(), more.end());
  const auto runs = sc::read_runs(records, "both");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].id == "c7/longest");
  CHECK(runs[1].id == "c7/longest");
  CHECK(runs[0].steps.size() == 2);  // not one run of four micro-batches with indices 0 1 0 1
  CHECK(runs[1].steps.size() == 2);
  CHECK(runs[0].steps[0].record.file == a.path());
  CHECK(runs[1].steps[0].record.file == b.path());
  CHECK(runs[1].total_s() == 2.5);
}

TEST_CASE("run_json: optional fields are written only when present", "[runs]") {
  sc::RunFields f = fields("x", 3, 2, 7.5);
  auto j = sc::run_json(f);
  CHECK(j.at("id") == "x");
  CHECK(j.at("index") == 3);
  CHECK(j.at("optimizer_step") == 1);
  CHECK(j.at("elapsed_s") == 7.5);
  CHECK(j.at("first_seen") == false);
  CHECK_FALSE(j.contains("optimizer_s"));
  CHECK_FALSE(j.contains("corpus_lengths"));
  f.optimizer_s = 0.25;
  f.corpus_lengths = {5, 6};
  j = sc::run_json(f);
  CHECK(j.at("optimizer_s") == 0.25);
  CHECK(j.at("corpus_lengths") == nlohmann::json::array({5, 6}));
}
TEST_CASE("run_json with the default max_length reads back", "[runs]") {
  sc::RunFields f;
  f.id = "x";
  f.policy = "pad-to-longest";
  f.micro_batch = 1;
  f.elapsed_s = 1.0;
  TempFile file(line({100}, 100, 1.0, f), ".jsonl");
  CHECK_NOTHROW(runs_of(file.path()));
}

// Packed runs (the harness's run probe with --policy pack / padding-free): three micro-batches each of three
// H200 runs, cut from measurements/records/h200-packing/packing-runs.jsonl (tests/data/runs/README.md).
TEST_CASE("read_runs: a packed run keeps its documents and attention mode, run_batch prices them", "[runs]") {
  const std::string path = std::string(STEPCAST_TEST_DATA) + "/runs/packing-32-cut.jsonl";
  const auto runs = runs_of(path);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].pack_attention == stepcast::model::DocumentAttention::block_mask);
  const auto& free = runs[1];
  const auto& pack = runs[2];
  CHECK(free.id == "packing-32/padding-free/varlen");
  REQUIRE(free.pack_attention == stepcast::model::DocumentAttention::varlen);
  CHECK(free.packer.empty());
  CHECK(pack.packer == "next-fit");
  REQUIRE(free.steps.size() == 3);
  CHECK(free.steps[0].document_lengths == std::vector<int32_t>{7475, 2147});
  // Pack micro-batch 0: rows 7475 and 2147 + 1608 + 1044 + 800 = 5599, 8192 wide.
  REQUIRE(pack.steps[0].document_lengths == std::vector<int32_t>{7475, 2147, 1608, 1044, 800});
  const auto b = sc::run_batch(pack, pack.steps[0]);
  CHECK(b.packed);
  CHECK(b.attention == stepcast::model::DocumentAttention::varlen);
  CHECK(b.width == 8192);
  CHECK(b.rows == std::vector<int64_t>{7475, 5599});
  CHECK(b.documents == 5);
  CHECK(std::vector<int32_t>(b.document_lengths.begin(), b.document_lengths.end()) == pack.steps[0].document_lengths);
  CHECK(b.sum_doc_len_sq == 7475.0 * 7475 + 2147.0 * 2147 + 1608.0 * 1608 + 1044.0 * 1044 + 800.0 * 800);
}

TEST_CASE("read_runs: a broken packed micro-batch is an InputError at file:line", "[runs]") {
  const std::string path = std::string(STEPCAST_TEST_DATA) + "/runs/packing-32-cut.jsonl";
  const auto records = sc::read_records(path);
  struct Case {
    std::string name;
    std::string from, to;  // replaced in the first record's JSON text
    std::string fragment;
  };
  auto c = GENERATE(values<Case>({
      {"documents not adding up to the row", "[[7475,2147]]", "[[7475,2146]]", "each adding up to its row's tokens"},
      {"a row without documents", "[[7475,2147]]", "[[]]", "one list of document lengths"},
      {"more document lists than rows", "[[7475,2147]]", "[[7475,2147],[1]]", "per row of `rows` (1)"},
      {"an unknown attention mode", "\"pack_attention\":\"block-mask\"", "\"pack_attention\":\"flash\"",
       "one of varlen, block-mask, cross"},
      {"an attention mode without documents", "\"documents\":[[7475,2147]],", "", "run.documents is missing"},
  }));
  INFO(c.name);
  std::string text = sc::to_json(records[0]).dump();
  const size_t at = text.find(c.from);
  REQUIRE(at != std::string::npos);
  text.replace(at, c.from.size(), c.to);
  std::string where;
  const auto problems = problems_of(text + "\n", &where);
  REQUIRE(problems.size() == 1);
  INFO(problems[0]);
  CHECK(problems[0].rfind(where + ":1:", 0) == 0);
  CHECK(problems[0].find(c.fragment) != std::string::npos);
}

namespace {

// A run's first micro-batch with the memory fields an executor writes (calibrate/run_records.hpp).
std::string memory_line(const nlohmann::json& memory, const nlohmann::json& start, const nlohmann::json& reserved) {
  sc::RunFields f = fields("m/longest", 0, 1, 1.0);
  f.optimizer_s = 0.02;
  nlohmann::json j = nlohmann::json::parse(line({100}, 100, 1.0, f));
  j["peak_gib"] = 41.2;
  j["peak_reserved_gib"] = reserved;
  j["memory"] = memory;
  j["memory_start"] = start;
  return j.dump() + "\n";
}

}  // namespace

TEST_CASE("read_runs: a run's memory fields read into the step and the run", "[runs][memory]") {
  const nlohmann::json memory{{"allocated_before_gib", 16.1}, {"reserved_before_gib", 30.0}, {"forward_peak_gib", 39.0},
                              {"backward_peak_gib", 41.2},    {"allocated_after_gib", 16.3}, {"optimizer_peak_gib", 16.9},
                              {"optimizer_reserved_gib", 44.0}, {"device_used_gib", 46.5},  {"card_total_gib", 139.8},
                              {"alloc_retries", 0},           {"inactive_split_gib", 0.4}};
  const nlohmann::json start{{"weights_gib", 15.0}, {"context_gib", 0.52}, {"allocator", "expandable_segments"},
                             {"reserved_gib", 15.1}, {"card_total_gib", 139.8}};
  TempFile f(memory_line(memory, start, 44.0), ".jsonl");
  const auto runs = sc::read_runs(sc::read_records(f.path()), f.path());
  REQUIRE(runs.size() == 1);
  REQUIRE(runs[0].memory_start.has_value());
  CHECK(runs[0].memory_start->allocator == stepcast::model::Allocator::expandable_segments);
  CHECK(*runs[0].memory_start->context_gib == 0.52);
  const auto& step = runs[0].steps[0];
  CHECK(*step.peak_reserved_gib == 44.0);
  REQUIRE(step.memory.has_value());
  CHECK(*step.memory->optimizer_peak_gib == 16.9);
  CHECK(*step.memory->alloc_retries == 0);
  CHECK(*step.memory->inactive_split_gib == 0.4);
  // An out-of-memory micro-batch's memory object holds only the card's size: every field is optional.
  TempFile sparse(memory_line({{"card_total_gib", 139.8}}, {{"allocator", "default"}}, 44.0), ".jsonl");
  CHECK_FALSE(sc::read_runs(sc::read_records(sparse.path()), sparse.path())[0].steps[0].memory->allocated_before_gib);
  // run_position: the window and the shape's newness, for the run's memory terms.
  const auto records = sc::read_records(f.path());
  const auto at = sc::run_position(records[0]);
  CHECK(at.in_run);
  CHECK_FALSE(at.after_optimizer_step);
  CHECK_FALSE(sc::run_position(sc::read_records(TempFile(kSteady, ".jsonl").path())[0]).in_run);
}

TEST_CASE("read_runs: bad memory fields are refused at file:line, every one at once", "[runs][memory]") {
  const nlohmann::json memory{{"allocated_before_gib", -1}, {"alloc_retries", 1.5}, {"device_use_gib", 46.5}};
  const nlohmann::json start{{"context_gib", "half"}, {"allocator", "cuda_malloc_async"}};
  TempFile f(memory_line(memory, start, nullptr), ".jsonl");
  std::string err;
  try {
    sc::read_runs(sc::read_records(f.path()), f.path());
  } catch (const stepcast::InputError& e) {
    err = e.what();
  }
  using Catch::Matchers::Contains;
  CHECK_THAT(err, Contains(f.path() + ":1: memory.allocated_before_gib = -1. Violated constraint: a number of GiB"));
  CHECK_THAT(err, Contains("memory.alloc_retries = 1.5. Violated constraint: an integer >= 0"));
  CHECK_THAT(err, Contains("memory.device_use_gib is not a field of memory"));
  CHECK_THAT(err, Contains("memory_start.context_gib = \"half\""));
  CHECK_THAT(err, Contains("memory_start.allocator = \"cuda_malloc_async\". Violated constraint: one of default"));
  CHECK_THAT(err, Contains("peak_reserved_gib = null"));
}
