// One-off costs of a run (calibrate/run_costs.hpp) from hand-built records over a steady model whose step is
// 0.5 s whatever the shape (only fixed_s = 0.5 selected), so each excess is step_s - 0.5 and every median
// below is computed by hand.
#include <cmath>
#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "calibrate/run_costs.hpp"
#include "calibrate/run_records.hpp"
#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/coefficients.hpp"
#include "model/errors.hpp"

namespace sc = stepcast::calibrate;
namespace sm = stepcast::model;

namespace {

sm::Coefficients steady_half_second() {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "sdpa-auto/grouped/gqa-expand";  // cuDNN on the sliding layers: one graph a new shape
  c.step[sm::kFixed] = {0.5, 0, true, ""};
  return c;
}

sc::Record base(int64_t width, double step_s) {
  sc::Record r;
  r.model = "gemma-4-26b-a4b";
  r.gpu = "NVIDIA H200";
  r.tier = "sdpa-auto/grouped/gqa-expand";
  r.rows = {width};
  r.width = width;
  r.step_s = step_s;
  return r;
}

struct Step {
  int64_t width;
  double step_s;
  bool first_seen;
  double optimizer_s;  // < 0: none
  int64_t jit_files;   // jit_cache_files_added; 0: not labelled
};

// A run's micro-batches as records, elapsed_s the running sum of step_s + optimizer_s.
std::vector<sc::Record> run(const std::string& id, int64_t accumulation, const std::vector<Step>& steps, int64_t& line) {
  std::vector<sc::Record> out;
  double elapsed = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    sc::Record r = base(s.width, s.step_s);
    sc::RunFields f;
    f.id = id;
    f.policy = "pad-to-longest";
    f.micro_batch = 1;
    f.accumulation = accumulation;
    f.max_length = 512;
    f.index = static_cast<int64_t>(i);
    f.optimizer_step = f.index / accumulation;
    f.first_seen = s.first_seen;
    elapsed += s.step_s;
    if (s.optimizer_s >= 0) {
      f.optimizer_s = s.optimizer_s;
      elapsed += s.optimizer_s;
    }
    f.elapsed_s = elapsed;
    r.extra["probe"] = "run";
    r.extra["run"] = sc::run_json(f);
    if (s.jit_files > 0) r.extra["jit_cache_files_added"] = s.jit_files;
    r.line = line++;
    out.push_back(r);
  }
  return out;
}

// The standard error of a median as run_costs.hpp defines it: 1.2533 x 1.4826 MAD / sqrt(n).
double median_se(double mad, int n) { return 1.2533 * 1.4826 * mad / std::sqrt(static_cast<double>(n)); }

bool has_note(const std::vector<std::string>& notes, const std::string& fragment) {
  for (const auto& n : notes)
    if (n.find(fragment) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("run costs from two recorded runs: medians by hand, a JIT-labelled micro-batch left out", "[run_costs]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  int64_t line = 1;
  // Run A, accumulation 2. Excesses over the steady 0.5 s: index 0 -> 3.0 (start + first-seen);
  // first-seen 1.0, 1.2; index 4 compiled kernels into a cold cache (9.0) and must not count.
  auto records = run("A", 2,
                     {{100, 3.5, true, -1, 0},
                      {200, 1.5, true, 0.30, 0},
                      {100, 0.6, false, -1, 0},
                      {300, 1.7, true, 0.10, 0},
                      {400, 9.5, true, -1, 3},
                      {100, 0.5, false, 0.12, 0}},
                     line);
  // Run B, accumulation 1: index 0 -> 3.4; first-seen 0.8.
  const auto b = run("B", 1, {{100, 3.9, true, 0.40, 0}, {500, 1.3, true, 0.14, 0}}, line);
  records.insert(records.end(), b.begin(), b.end());

  sm::Coefficients c = steady_half_second();
  std::vector<std::string> notes;
  sc::fit_run_costs(shape, records, "runs.jsonl", c, notes);

  // first-seen: median{1.0, 1.2, 0.8} = 1.0; MAD = median{0, 0.2, 0.2} = 0.2.
  const auto& fs = c.run[sm::kFirstSeen];
  INFO(fs.reason);
  REQUIRE(fs.selected);
  CHECK(fs.value == Approx(1.0).epsilon(1e-12));
  CHECK(fs.std_error == Approx(median_se(0.2, 3)).epsilon(1e-9));
  CHECK(fs.reason.find("median of 3") != std::string::npos);
  // optimizer: the steps after each run's first: A 0.10, 0.12; B 0.14 -> 0.12; MAD = 0.02.
  const auto& opt = c.run[sm::kOptimizerStep];
  INFO(opt.reason);
  REQUIRE(opt.selected);
  CHECK(opt.value == Approx(0.12).epsilon(1e-12));
  CHECK(opt.std_error == Approx(median_se(0.02, 3)).epsilon(1e-9));
  // start: median{3.0 - 1.0, 3.4 - 1.0} = 2.2, plus the first optimizer step's extra
  // median{0.30 - 0.12, 0.40 - 0.12} = 0.23: 2.43 s. Its standard error is the start samples' (MAD 0.2, n 2).
  const auto& start = c.run[sm::kRunStart];
  INFO(start.reason);
  REQUIRE(start.selected);
  CHECK(start.value == Approx(2.43).epsilon(1e-12));
  CHECK(start.std_error == Approx(median_se(0.2, 2)).epsilon(1e-9));
  CHECK(has_note(notes, "1 micro-batch(es) that JIT-compiled kernels"));
  CHECK(has_note(notes, "2 recorded run(s)"));
}

TEST_CASE("run costs: a JIT-labelled first micro-batch does not set the run start", "[run_costs]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  int64_t line = 1;
  // A's first micro-batch compiled kernels (8.5 s over the steady step): only B's index 0 (3.0) counts.
  auto records = run("A", 1, {{100, 9.0, true, 0.2, 4}, {200, 1.5, true, 0.1, 0}}, line);
  const auto b = run("B", 1, {{100, 3.5, true, 0.2, 0}, {300, 1.5, true, 0.1, 0}}, line);
  records.insert(records.end(), b.begin(), b.end());
  sm::Coefficients c = steady_half_second();
  std::vector<std::string> notes;
  sc::fit_run_costs(shape, records, "runs.jsonl", c, notes);
  CHECK(c.run[sm::kFirstSeen].value == Approx(1.0).epsilon(1e-12));   // 1.0 and 1.0
  CHECK(c.run[sm::kOptimizerStep].value == Approx(0.1).epsilon(1e-12));
  // start: 3.0 - 1.0 = 2.0, plus the first optimizer extra median{0.2 - 0.1, 0.2 - 0.1} = 0.1.
  CHECK(c.run[sm::kRunStart].value == Approx(2.1).epsilon(1e-12));
  CHECK(c.run[sm::kRunStart].reason.find("median of 1 ") != std::string::npos);
}

TEST_CASE("run costs from first-seen and optimizer probes", "[run_costs]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  auto probe = [](double first_step_s, double step_s, bool first_seen, bool first_in_process) {
    sc::Record r = base(512, step_s);
    r.extra["first_step_s"] = first_step_s;
    if (first_seen) r.extra["first_seen"] = true;
    if (first_in_process) r.extra["first_in_process"] = true;
    return r;
  };
  std::vector<sc::Record> records = {
      probe(4.0, 1.0, true, true),    // the process's first: 3.0 over its steady step
      probe(2.0, 1.0, true, false),   // first-seen 1.0
      probe(2.5, 1.0, true, false),   // first-seen 1.5
      probe(9.0, 1.0, false, false),  // not flagged first-seen: no sample
  };
  sc::Record jit = probe(9.0, 1.0, true, false);  // compiled kernels into a cold cache: no sample
  jit.extra["jit_cache_files_added"] = 2;
  records.push_back(jit);
  sc::Record oom = probe(9.0, 1.0, true, false);
  oom.oom = true;
  records.push_back(oom);
  sc::Record optimizer = base(512, 1.0);
  optimizer.extra["optimizer_times_s"] = {0.9, 0.1, 0.2};  // the first (AdamW allocating its state) is not steady
  records.push_back(optimizer);

  sm::Coefficients c = steady_half_second();
  std::vector<std::string> notes;
  sc::fit_run_costs(shape, records, "probes.jsonl", c, notes);
  CHECK(c.run[sm::kFirstSeen].value == Approx(1.25).epsilon(1e-12));   // median{1.0, 1.5}
  CHECK(c.run[sm::kFirstSeen].reason.find("2 from probes, 0 from recorded runs") != std::string::npos);
  CHECK(c.run[sm::kOptimizerStep].value == Approx(0.15).epsilon(1e-12));  // median{0.1, 0.2}
  // start: 3.0 - 1.25; no recorded run, so no first-optimizer extra is added.
  CHECK(c.run[sm::kRunStart].value == Approx(1.75).epsilon(1e-12));
  CHECK_FALSE(has_note(notes, "recorded run(s)"));
}

TEST_CASE("first-seen samples are per cuDNN graph: a tier that builds none gives none", "[run_costs]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  std::vector<sc::Record> records;
  for (double first : {2.0, 2.5}) {
    sc::Record r = base(512, 1.0);
    r.extra["first_step_s"] = first;
    r.extra["first_seen"] = true;
    records.push_back(r);
  }
  sm::Coefficients c = steady_half_second();
  std::vector<std::string> notes;
  sc::fit_run_costs(shape, records, "probes.jsonl", c, notes);
  CHECK(c.run[sm::kFirstSeen].value == Approx(1.25).epsilon(1e-12));  // one graph a shape (the sliding layers)
  // Forced onto the efficient kernels, the same excesses are no graph's cost: nothing is fitted from them.
  for (auto& r : records) r.tier = "hf-sdpa-efficient/loop";
  c = steady_half_second();
  c.tier = "hf-sdpa-efficient/loop";
  sc::fit_run_costs(shape, records, "probes.jsonl", c, notes);
  CHECK_FALSE(c.run[sm::kFirstSeen].selected);
  CHECK(c.run[sm::kFirstSeen].reason.find("per cuDNN graph") != std::string::npos);
}

TEST_CASE("run costs: without samples every run term stays unselected, with the reason", "[run_costs]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const std::vector<sc::Record> records = {base(512, 1.0), base(1024, 1.5)};
  sm::Coefficients c = steady_half_second();
  std::vector<std::string> notes;
  sc::fit_run_costs(shape, records, "steady.jsonl", c, notes);
  for (int j = 0; j < sm::kRunTerms; ++j) {
    INFO(sm::run_term_names()[j] << ": " << c.run[j].reason);
    CHECK_FALSE(c.run[j].selected);
    CHECK(c.run[j].value == 0.0);
    CHECK(c.run[j].reason.rfind("not selected: no ", 0) == 0);
  }
  CHECK(notes.empty());
}

TEST_CASE("run costs: a broken run is an InputError naming the file", "[run_costs]") {
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  int64_t line = 7;
  auto records = run("A", 1, {{100, 3.5, true, 0.2, 0}}, line);
  records[0].extra["run"]["index"] = 1;  // a run must start at index 0
  sm::Coefficients c = steady_half_second();
  std::vector<std::string> notes;
  try {
    sc::fit_run_costs(shape, records, "runs.jsonl", c, notes);
    FAIL("no InputError");
  } catch (const stepcast::InputError& e) {
    CHECK(std::string(e.what()).rfind("runs.jsonl:7:", 0) == 0);
  }
}
