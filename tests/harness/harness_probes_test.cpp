// Probe planning, the kernel table from replayed activity, and a whole CPU sweep on a tiny config:
// records appended, a re-run resumes by skipping what is already in the file.
#include <filesystem>
#include <fstream>

#include "calibrate/records.hpp"
#include "io/model_config.hpp"
#include "harness/activity.hpp"
#include "harness/probes.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"
// After the Torch headers: glog (Debian's LibTorch) defines its own CHECK, Catch's must win.
#include "catch.hpp"

namespace h = stepcast::harness;

TEST_CASE("padded rows: row 0 full, the padding share as asked", "[harness][probes]") {
  const auto [rows, width, pad] = GENERATE(table<int64_t, int64_t, double>(
      {{2, 4096, 0.25}, {2, 4096, 0.5}, {4, 2048, 0.125}, {8, 2048, 0.37}, {1, 8192, 0.25}, {3, 1000, 0.0}}));
  CAPTURE(rows, width, pad);
  const auto r = h::padded_rows(rows, width, pad);
  REQUIRE(static_cast<int64_t>(r.size()) == rows);
  int64_t real = 0;
  for (int64_t x : r) {
    CHECK(x >= 2);
    CHECK(x <= width);
    real += x;
  }
  if (rows > 1) CHECK(r[0] == width);
  CHECK(1.0 - static_cast<double>(real) / static_cast<double>(rows * width) == Approx(pad).margin(1e-3));
}

TEST_CASE("plan_points: probes x shapes x tiers, padding only in the padding probe", "[harness][probes]") {
  h::SweepOptions o;
  o.probes = {"scaling", "padding"};
  o.shapes = {{1, 2048}, {2, 4096}};
  o.padding = {0.25, 0.5};
  o.tiers = {"sdpa-auto/loop", "sdpa-efficient/grouped"};
  const auto points = h::plan_points(o);
  CHECK(points.size() == 2 * (2 + 2 * 2));
  o.max_tokens = 4096;
  CHECK(h::plan_points(o).size() == 2 * (1 + 2));
  o.probes = {"scaling", "speed"};
  o.tiers = {"sdpa-fast/loop"};
  try {
    h::plan_points(o);
    FAIL("expected InputError");
  } catch (const stepcast::InputError& e) {
    CHECK(e.problems().size() == 2);  // every problem, not just the first
  }
}

TEST_CASE("kernel table and launch counts from replayed activity", "[harness][cupti]") {
  h::ReplaySource replay({{"kernel", "fmha_cutlassB_bf16_aligned_128x64_k65536_sm80", 0, 5'000'000},
                          {"kernel", "fmha_cutlassB_bf16_aligned_128x64_k65536_sm80", 10, 4'000'010},
                          {"kernel", "void at::native::vectorized_elementwise_kernel<4>", 0, 3'000},
                          {"memcpy", "Memcpy DtoD (Device -> Device)", 0, 20'000},
                          {"memset", "Memset (Device)", 0, 1'000}});
  CHECK_THROWS(replay.stop());
  replay.start();
  const auto records = replay.stop();
  const auto counts = h::count_launches(records);
  CHECK(counts.kernels == 3);
  CHECK(counts.memcpy == 1);
  CHECK(counts.memset == 1);
  CHECK(counts.short_kernels == 1);
  CHECK(counts.kernel_ns == 9'003'000);
  stepcast::kernels::CuptiTableHeader header;
  header.device = "NVIDIA H200";
  const auto table = h::build_kernel_table(records, header);
  REQUIRE(table.rows.size() == 4);
  CHECK(table.rows[0].name == "fmha_cutlassB_bf16_aligned_128x64_k65536_sm80");
  CHECK(table.rows[0].count == 2);
  CHECK(table.rows[0].total_ns == 9'000'000);
  CHECK(table.rows[1].kind == "memcpy");
}

TEST_CASE("a CPU sweep appends measurement records and a re-run resumes", "[harness][probes]") {
  const auto shape = stepcast::io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/tiny-gemma4.json");
  h::BuildOptions b;
  b.dtype = torch::kFloat;
  b.lora.rank = 4;
  h::Model model(shape, b);
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  h::SweepOptions o;
  o.model_label = shape.name;
  o.probes = {"scaling", "padding", "ce", "kernels"};
  o.shapes = {{2, 32}};
  o.padding = {0.25};
  o.tiers = {"sdpa-auto/loop", "sdpa-auto/loop/ce-chunked"};
  o.repetitions = 2;
  o.out = out.path();
  o.command = "test";
  h::ReplaySource replay({{"kernel", "k", 0, 100}});
  const h::DeviceInfo dev = h::device_info(torch::kCPU);
  const auto first = h::run_sweep(model, o, dev, &replay);
  CHECK(first.measured == 8);
  CHECK(first.failed == 0);
  const auto records = stepcast::calibrate::read_records(out.path());
  REQUIRE(records.size() == 8);
  for (const auto& r : records) {
    CHECK(r.model == "tiny-gemma4");
    CHECK(r.step_s.has_value());
    CHECK(*r.step_s > 0);
    CHECK(r.extra["times_s"].size() == 2);
    CHECK(r.extra["tier_details"]["layer_types"]["sliding_attention"]["mask_path"] == "explicit");  // 32 > window 8
    CHECK(std::isfinite(r.extra["loss"].get<double>()));
  }
  CHECK(records[1].has_padding());
  CHECK(records[0].extra["tier_details"]["layer_types"]["full_attention"]["mask_path"] == "is_causal");
  CHECK(records[1].extra["tier_details"]["layer_types"]["full_attention"]["mask_path"] == "explicit");
  CHECK(records[2].extra.contains("ce_s"));
  CHECK(records[3].extra["kernels"]["launches"]["kernel"] == 1);
  const auto again = h::run_sweep(model, o, dev, &replay);
  CHECK(again.measured == 0);
  CHECK(again.skipped == 8);
  CHECK(stepcast::calibrate::read_records(out.path()).size() == 8);
  std::filesystem::remove_all(out.path().substr(0, out.path().size() - 6) + ".kernels");
}
