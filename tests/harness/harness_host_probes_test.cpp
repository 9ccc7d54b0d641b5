// The point probes on the CPU (tiny config): the host-floor preset and its fields, first-seen points
// (the first step timed apart, the process start, refusal of a shape the process has run).
#include <set>
#include <utility>

#include "calibrate/records.hpp"
#include "io/model_config.hpp"
#include "harness/activity.hpp"
#include "harness/probes.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"
// After the Torch headers: glog (Debian's LibTorch) defines its own CHECK, Catch's must win.
#include "catch.hpp"

namespace h = stepcast::harness;

namespace {

stepcast::model::ModelShape tiny_gemma() {
  return stepcast::io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/tiny-gemma4.json");
}

h::BuildOptions cpu_fp32() {
  h::BuildOptions b;
  b.dtype = torch::kFloat;
  b.lora.rank = 4;
  return b;
}

h::SweepOptions sweep_to(const std::string& out, std::vector<std::string> points) {
  h::SweepOptions o;
  o.model_label = "tiny-gemma4";
  o.tiers = {"sdpa-auto/loop"};  // Debian's LibTorch 1.13 has no grouped GEMM
  o.points = std::move(points);
  o.warmup = 0;
  o.repetitions = 2;
  o.out = out;
  o.command = "test";
  return o;
}

}  // namespace

TEST_CASE("host-floor expands to widths 128-1024 x rows 1-8 under its own label", "[harness][host]") {
  h::SweepOptions o = sweep_to("unused.jsonl", {"host-floor"});
  const auto points = h::plan_points(o);
  REQUIRE(points.size() == 16);
  std::set<std::pair<int64_t, int64_t>> shapes;
  for (const auto& p : points) {
    CHECK(p.probe == "host-floor");
    CHECK(p.tier == "sdpa-auto/loop");
    CHECK(p.padding_frac == 0.0);
    shapes.emplace(static_cast<int64_t>(p.rows.size()), p.width);
  }
  for (int64_t w : {128, 256, 512, 1024})
    for (int64_t r : {1, 2, 4, 8}) CHECK(shapes.count({r, w}) == 1);
  CHECK(points.front().width == 128);
  CHECK(points.back().width == 1024);
  CHECK(points.back().rows.size() == 8);
  o.points = {"host-floor:sdpa-efficient/grouped", "host-floor:2x128"};
  const auto tiered = h::plan_points(o);
  REQUIRE(tiered.size() == 17);
  CHECK(tiered.front().tier == "sdpa-efficient/grouped");
  CHECK(tiered.back().width == 128);
}

TEST_CASE("first-seen refuses at planning a shape an earlier point of the sweep runs", "[harness][first-seen]") {
  h::SweepOptions o = sweep_to("unused.jsonl", {"scaling:1x64", "first-seen:1x64", "first-seen:2x48", "first-seen:2x48"});
  try {
    h::plan_points(o);
    FAIL("expected InputError");
  } catch (const stepcast::InputError& e) {
    REQUIRE(e.problems().size() == 2);
    CHECK(e.problems()[0].find("first-seen:1x64") != std::string::npos);
    CHECK(e.problems()[1].find("first-seen:2x48") != std::string::npos);
  }
  o.points = {"first-seen:1x64:0.25"};
  CHECK_THROWS_AS(h::plan_points(o), stepcast::InputError);
}

TEST_CASE("a first-seen point first in the process then host-floor points with launch counts", "[harness][first-seen][host]") {
  h::Model model(tiny_gemma(), cpu_fp32());
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  h::ReplaySource replay({{"kernel", "k", 0, 100}, {"kernel", "k", 200, 300}, {"memcpy", "Memcpy HtoD", 0, 10}});
  const h::DeviceInfo dev = h::device_info(torch::kCPU);
  CHECK(model.forwards() == 0);
  const auto s = h::run_sweep(model, sweep_to(out.path(), {"first-seen:1x40", "first-seen:2x24", "host-floor:1x16"}),
                              dev, &replay);
  CHECK(s.measured == 3);
  CHECK(s.failed == 0);
  const auto records = stepcast::calibrate::read_records(out.path());
  REQUIRE(records.size() == 3);
  CHECK(records[0].extra["probe"] == "first-seen");
  CHECK(records[0].extra["first_seen"] == true);
  CHECK(records[0].extra["first_in_process"] == true);   // before the primer
  CHECK(records[1].extra["first_in_process"] == false);  // the primer and the first point ran before it
  for (size_t i = 0; i < 2; ++i) {
    const auto& e = records[i].extra;
    CHECK(e["first_step_s"].get<double>() > 0);
    CHECK(e["first_step_event_s"].get<double>() > 0);
    CHECK(e["first_step_host_wall_s"].get<double>() <= e["first_step_s"].get<double>());
    CHECK(e["times_s"].size() == 2);
    CHECK(records[i].peak_valid);
  }
  const auto& floor = records[2].extra;
  CHECK(floor["probe"] == "host-floor");
  CHECK(floor["launches_per_step"] == 2);  // kernels only: the memcpy is counted apart
  CHECK(floor["launch_counts"]["memcpy"] == 1);
  CHECK(floor["host_wall_times_s"].size() == 2);
  CHECK(floor["host_wall_s"].get<double>() > 0);
  CHECK_FALSE(floor.contains("first_seen"));
  CHECK(model.seen(1, 40));
  CHECK(model.seen(1, 256));  // the primer ran after the process-start point
  CHECK_FALSE(model.seen(3, 40));

  // The process has run 1x40: a first-seen point there is refused with a message, no record, no crash.
  stepcast::testing::TempFile again("", ".jsonl");
  std::filesystem::remove(again.path());
  const auto refused = h::run_sweep(model, sweep_to(again.path(), {"first-seen:1x40", "first-seen:3x40"}), dev, nullptr);
  CHECK(refused.failed == 1);
  CHECK(refused.measured == 1);
  const auto kept = stepcast::calibrate::read_records(again.path());
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].rows.size() == 3);
  CHECK(kept[0].extra["first_in_process"] == false);
  CHECK_FALSE(kept[0].extra.contains("launches_per_step"));
}

TEST_CASE("the primer steps aside for a first-seen 1x256", "[harness][first-seen]") {
  h::Model model(tiny_gemma(), cpu_fp32());
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  const h::DeviceInfo dev = h::device_info(torch::kCPU);
  auto o = sweep_to(out.path(), {"scaling:1x32", "first-seen:1x256"});
  o.repetitions = 1;
  const auto s = h::run_sweep(model, o, dev, nullptr);
  CHECK(s.failed == 0);
  CHECK(s.measured == 2);
  CHECK(model.seen(1, 320));  // 256 is taken by the first-seen point: the primer moved one step of 64 up
}
