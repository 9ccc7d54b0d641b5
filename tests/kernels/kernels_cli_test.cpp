// stepcast kernels as a user runs it: JSON contract, --vs, CUPTI tables, exit codes on bad input.
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "kernels/cupti_table.hpp"
#include "temp_file.hpp"

using nlohmann::json;
using stepcast::testing::run_cli;
using Catch::Matchers::Contains;

namespace {
const std::string kTraces = STEPCAST_TEST_DATA "/traces/";
}

TEST_CASE("the JSON output has the fields the issue fixes", "[kernels][cli]") {
  const auto r = run_cli("kernels " + kTraces + "h200_unpadded.json.gz --format json");
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["device_time_s"].get<double>() > 0);
  for (const char* c : {"attention", "gemm", "grouped_gemm", "convolution", "communication", "elementwise", "reduction",
                        "copy", "other"}) {
    INFO(c);
    REQUIRE(j["categories"].contains(c));
    CHECK(j["categories"][c].contains("time_s"));
    CHECK(j["categories"][c].contains("share"));
  }
  CHECK(j["categories"].size() == 9);
  double shares = 0;
  for (const auto& [name, c] : j["categories"].items()) shares += c["share"].get<double>();
  CHECK(shares == Approx(1.0));
  for (const auto& k : j["kernels"])
    for (const char* f : {"name", "count", "time_s", "share", "category", "library", "arch"}) CHECK(k.contains(f));
  for (const auto& d : j["diagnostics"])
    for (const char* f : {"kind", "message", "share"}) CHECK(d.contains(f));
  // The cuDNN sm90 flash kernels are recognised: attention, by direction, library and arch.
  bool cudnn_fwd = false, cudnn_bwd = false;
  for (const auto& k : j["kernels"])
    if (k["library"] == "cuDNN" && k["arch"] == "sm90" && k["category"] == "attention") {
      cudnn_fwd = cudnn_fwd || k["direction"] == "forward";
      cudnn_bwd = cudnn_bwd || k["direction"] == "backward";
    }
  CHECK(cudnn_fwd);
  CHECK(cudnn_bwd);
  CHECK(j["device"]["arch"] == "sm90");
  CHECK_FALSE(j.contains("changes"));
}

TEST_CASE("kernels --vs sorts the changes by size and names the attention backward first", "[kernels][cli]") {
  const auto r = run_cli("kernels " + kTraces + "h200_unpadded.json.gz --vs " + kTraces + "h200_padded.json.gz --format json");
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  const auto& ch = j["changes"];
  REQUIRE(ch.size() == 13);
  for (size_t i = 1; i < ch.size(); ++i)
    CHECK(std::fabs(ch[i - 1]["delta_s"].get<double>()) >= std::fabs(ch[i]["delta_s"].get<double>()));
  CHECK(ch[0]["category"] == "attention");
  CHECK(ch[0]["direction"] == "backward");
  CHECK(ch[0]["delta_s"].get<double>() == Approx(7.5e-3));
  CHECK(ch[0]["after_s"].get<double>() - ch[0]["before_s"].get<double>() == Approx(ch[0]["delta_s"].get<double>()));
  CHECK(j["category_changes"][0]["name"] == "attention backward");
  bool appeared = false;
  for (const auto& c : ch) appeared = appeared || (c["status"] == "appeared" && c["before_s"] == 0.0);
  CHECK(appeared);  // the masked_fill kernel that padding brings
  const auto text = run_cli("kernels " + kTraces + "h200_unpadded.json.gz --vs " + kTraces + "h200_padded.json.gz");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("largest change: the attention backward kernel fmha_cutlassB"));
}

TEST_CASE("a CUPTI table is read like a trace", "[kernels][cli]") {
  using namespace stepcast::kernels;
  CuptiTableHeader h;
  h.device = "NVIDIA H200";
  h.compute_major = 9;
  h.num_sms = 132;
  h.steps = 2;
  CuptiTableBuilder b(h);
  for (int i = 0; i < 4; ++i) b.add("fmha_cutlassB_bf16_aligned_128x64_k65536_sm80", "kernel", 2'000'000);
  for (int i = 0; i < 100; ++i) b.add("triton_poi_fused_add_mul_0", "kernel", 5'000);
  b.add("nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT", "kernel", 1'500'000);
  const stepcast::testing::TempFile f("", ".kernels.jsonl");
  write_cupti_table(b.table(), f.path());
  const auto r = run_cli("kernels " + f.path() + " --format json");
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["format"] == "cupti_table");
  CHECK(j["device_time_s"].get<double>() == Approx(8e-3 + 0.5e-3 + 1.5e-3));
  CHECK(j["categories"]["attention"]["share"].get<double>() == Approx(0.8));
  CHECK(j["launches_per_step"].get<double>() == Approx(105.0 / 2));
  CHECK(j["short_time_share"].get<double>() == Approx(0.05));
  CHECK(j["diagnostics"][0]["kind"] == "older_arch");
  CHECK(j["diagnostics"][0]["share"].get<double>() == Approx(0.8));
}

TEST_CASE("bad input exits 2 with the place, never a crash", "[kernels][cli]") {
  static const stepcast::testing::TempFile truncated_file("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"ker", ".json");
  static const stepcast::testing::TempFile bad_table_file("{\"stepcast_cupti_table\": 1}\n{\"name\": 3}\n", ".jsonl");
  const std::string truncated = truncated_file.path(), bad_table = bad_table_file.path();
  struct Case {
    std::string args, message;
  };
  const auto c = GENERATE_COPY(values<Case>({
      {"kernels " + truncated, "byte 40: unexpected end of file"},
      {"kernels " + truncated + " --format json", "byte 40"},
      {"kernels " + kTraces + "seed_sm120.json --vs " + truncated, "byte 40"},
      {"kernels " + bad_table, ":2:1: name = 3. Violated constraint: wrong type"},
      {"kernels /no/such/trace.json", "no such file"},
      {"kernels " + kTraces, "is a directory"},
      {"kernels", "TRACE is required"},
      {"kernels " + kTraces + "seed_sm120.json --short-us 0", "--short-us"},
      {"kernels " + kTraces + "seed_sm120.json --top 0", "--top"},
  }));
  const auto r = run_cli(c.args);
  INFO(c.args);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(c.message));
}

TEST_CASE("kernels --help teaches with examples", "[kernels][cli]") {
  const auto r = run_cli("kernels --help");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("Examples:"));
  CHECK_THAT(r.out, Contains("--vs"));
}
