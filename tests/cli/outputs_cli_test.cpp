// Every output flag as a user meets it (docs/user-guide.md, "Output files"): an existing file needs --force,
// an input is never written over, a device is refused, a symbolic link is followed.
#include <filesystem>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"

namespace fs = std::filesystem;
using stepcast::testing::run_cli;
using stepcast::testing::slurp;
using stepcast::testing::TempFile;
using Catch::Matchers::Contains;

namespace {

const std::string kSeed = STEPCAST_SCENARIOS "/seed-sm120.yaml";
const std::string kMeasurements = STEPCAST_MEASUREMENTS "/records/seed-sm120.jsonl";
const std::string kCorpus = "length\n4000\n1000\n300\n200\n";

std::string plan(const std::string& corpus, const std::string& flags) {
  return "plan " + kSeed + " --corpus " + corpus + " --no-sweep " + flags;
}

}  // namespace

TEST_CASE("plan --report and --save-corpus refuse an existing file without --force", "[cli][output]") {
  TempFile corpus(kCorpus, ".csv"), report("keep me\n", ".html"), saved("keep me too\n", ".csv");
  auto r = run_cli(plan(corpus.path(), "--report " + report.path()));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--report " + report.path() + ": the file exists") && Contains("--force"));
  r = run_cli(plan(corpus.path(), "--save-corpus " + saved.path()));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--save-corpus " + saved.path() + ": the file exists"));
  CHECK(slurp(report.path()) == "keep me\n");
  CHECK(slurp(saved.path()) == "keep me too\n");
  r = run_cli(plan(corpus.path(), "--report " + report.path() + " --save-corpus " + saved.path() + " --force"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(slurp(report.path()), Contains("<svg"));
  CHECK(slurp(saved.path()) == "length\n4000\n1000\n300\n200\n");
}

TEST_CASE("plan never writes over its scenario, its corpus or its other output, --force or not", "[cli][output]") {
  TempFile corpus(kCorpus, ".csv");
  for (const std::string flag : {"--report", "--save-corpus"}) {
    auto r = run_cli(plan(corpus.path(), flag + " " + corpus.path() + " --force"));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(flag + " " + corpus.path() + ": this is also an input"));
    r = run_cli(plan(corpus.path(), flag + " " + kSeed + " --force"));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("also an input of the command (" + kSeed + ")"));
  }
  CHECK(slurp(corpus.path()) == kCorpus);
  const std::string both = (fs::temp_directory_path() / "stepcast_outputs_both.csv").string();
  fs::remove(both);
  const auto r = run_cli(plan(corpus.path(), "--report " + both + " --save-corpus " + both));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--report " + both + ": this is also an input"));
  CHECK_FALSE(fs::exists(both));  // refused before anything was written
}

TEST_CASE("calibrate --out refuses its measurements and devices, and writes through a symbolic link", "[cli][output]") {
  TempFile measurements(slurp(kMeasurements), ".jsonl");
  const std::string fit = "calibrate --prior none --measurements " + measurements.path();
  auto r = run_cli(fit + " --out " + measurements.path() + " --force");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("also an input"));
  CHECK(slurp(measurements.path()) == slurp(kMeasurements));
  r = run_cli(fit + " --out /dev/null --force");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--out /dev/null: not a regular file"));
  TempFile real("old\n", ".yaml");
  const std::string link = real.path() + ".link.yaml";
  fs::remove(link);
  fs::create_symlink(real.path(), link);
  r = run_cli(fit + " --out " + link + " --force");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::is_symlink(link));
  CHECK_THAT(slurp(real.path()), Contains("stepcast coefficients"));
  fs::remove(link);
}
