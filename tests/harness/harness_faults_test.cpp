// Harness faults on the CPU with a tiny model, injected through $STEPCAST_HARNESS_FAULT (docs/harness.md
// "Faults"): a sweep killed with SIGKILL mid-point keeps every finished point and a re-run resumes; an
// out-of-memory error re-verifies the memory baseline before the next point.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "calibrate/records.hpp"
#include "catch.hpp"
#include "cli_runner.hpp"
#include "harness/probes.hpp"
#include "temp_file.hpp"

using stepcast::calibrate::read_records;
using stepcast::harness::kFaultVariable;
using stepcast::testing::run_cli;
using Catch::Matchers::Contains;

namespace {

// Sets the fault for the measure processes this test starts, and clears it again.
class FaultGuard {
 public:
  explicit FaultGuard(const std::string& value) { ::setenv(kFaultVariable, value.c_str(), 1); }
  ~FaultGuard() { ::unsetenv(kFaultVariable); }
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;
};

// Four points of one tiny model: 1x16, 2x16, 1x32, 2x32 (tier loop: LibTorch 1.13 has no grouped GEMM).
std::string measure(const std::string& out) {
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json";
  return "measure --model " + model + " --device cpu --dtype float32 --probe scaling --shapes 1x16,2x16,1x32,2x32 " +
         "--repetitions 1 --warmup 0 --tiers sdpa-auto/loop --format json --out " + out;
}

std::vector<int64_t> widths_of(const std::string& path) {
  std::vector<int64_t> w;
  for (const auto& r : read_records(path)) w.push_back(r.width * 10 + static_cast<int64_t>(r.rows.size()));
  return w;
}

const std::vector<int64_t> kAllPoints{161, 162, 321, 322};  // width * 10 + rows, in sweep order

}  // namespace

TEST_CASE("a sweep killed with SIGKILL mid-point keeps every finished point, the re-run measures only the rest",
          "[harness][faults]") {
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  {
    FaultGuard fault("kill@3");  // point 3 is measured, then the process dies before its record
    const auto killed = run_cli(measure(out.path()));
    CHECK((killed.exit_code == -1 || killed.exit_code == 128 + SIGKILL));
  }
  CHECK((widths_of(out.path()) == std::vector<int64_t>{161, 162}));  // fsynced before point 3 began
  const auto resumed = run_cli(measure(out.path()));
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.out, Contains("\"measured\": 2") && Contains("\"skipped\": 2"));
  CHECK(widths_of(out.path()) == kAllPoints);  // point 3 re-run from scratch, nothing twice
}

TEST_CASE("an out-of-memory point re-verifies the baseline and the sweep goes on", "[harness][faults]") {
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  FaultGuard fault("oom@2");
  const auto r = run_cli(measure(out.path()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("[2/4] scaling sdpa-auto/loop 2x16 (rows 16,16): out of memory; baseline re-verified"));
  CHECK_THAT(r.out, Contains("\"measured\": 3") && Contains("\"oom\": 1"));
  const auto records = read_records(out.path());
  REQUIRE(records.size() == 4);
  CHECK(records[1].oom);
  CHECK(records[1].peak_valid);
  CHECK_FALSE(records[2].oom);
}

TEST_CASE("memory left off the baseline after an OOM stops the sweep, a fresh process resumes", "[harness][faults]") {
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  {
    FaultGuard fault("leak@2");
    const auto stopped = run_cli(measure(out.path()));
    CHECK(stopped.exit_code == 1);
    CHECK_THAT(stopped.err, Contains("after the out-of-memory error at point 2, allocated memory is 1048576 bytes off "
                                     "the baseline") && Contains("run the same command again to resume"));
  }
  const auto records = read_records(out.path());
  REQUIRE(records.size() == 2);  // point 1 and the OOM record of point 2, which says its peak is not trusted
  CHECK(records[1].oom);
  CHECK_FALSE(records[1].peak_valid);
  const auto resumed = run_cli(measure(out.path()));
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.out, Contains("\"measured\": 2") && Contains("\"skipped\": 2"));
  CHECK(widths_of(out.path()) == kAllPoints);
}

TEST_CASE("a record file whose last line lacks its newline gets one before the next record", "[harness][faults]") {
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  {
    FaultGuard fault("kill@2");
    run_cli(measure(out.path()));
  }
  std::string text = stepcast::testing::slurp(out.path());
  REQUIRE(text.back() == '\n');
  text.pop_back();  // as an editor that drops the final newline would save it
  std::ofstream(out.path(), std::ios::trunc) << text;
  REQUIRE(run_cli(measure(out.path())).exit_code == 0);
  CHECK(widths_of(out.path()) == kAllPoints);
}

TEST_CASE("a malformed fault is refused with exit 2", "[harness][faults]") {
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  FaultGuard fault("kill@x");
  const auto r = run_cli(measure(out.path()));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("STEPCAST_HARNESS_FAULT = 'kill@x'. Violated constraint: kill@N, oom@N or leak@N"));
}

TEST_CASE("measure --out is never a device or the model config", "[harness][faults][output]") {
  const std::string model = std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json";
  const std::string config_before = stepcast::testing::slurp(model);
  auto r = run_cli("measure --model " + model + " --device cpu --probe scaling --shapes 1x16 --out /dev/null");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--out /dev/null: not a regular file"));
  r = run_cli("measure --model " + model + " --device cpu --probe scaling --shapes 1x16 --out " + model);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("also an input"));
  CHECK(stepcast::testing::slurp(model) == config_before);
}
