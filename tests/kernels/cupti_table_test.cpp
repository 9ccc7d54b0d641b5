// The CUPTI kernel-table format the harness writes: builder, writer, strict reader.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "catch.hpp"
#include "kernels/cupti_table.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"

using namespace stepcast::kernels;
using Catch::Matchers::Contains;

namespace {
CuptiTable sample() {
  CuptiTableHeader h;
  h.device = "NVIDIA H200";
  h.compute_major = 9;
  h.num_sms = 132;
  h.steps = 2;
  h.label = "gemma-4 2x2048";
  CuptiTableBuilder b(h);
  b.add("fmha_cutlassB_bf16_aligned_128x64_k65536_sm80", "kernel", 538'000'000);
  b.add("fmha_cutlassB_bf16_aligned_128x64_k65536_sm80", "kernel", 540'000'000);
  b.add("triton_poi_fused_add_mul_0", "kernel", 4'000);   // short (< 10 µs)
  b.add("triton_poi_fused_add_mul_0", "kernel", 12'000);  // not short
  b.add("Memcpy DtoD (Device -> Device)", "memcpy", 634'922);
  return b.table();
}
}  // namespace

TEST_CASE("the builder aggregates launches by name and kind", "[kernels][cupti]") {
  const CuptiTable t = sample();
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0].name == "fmha_cutlassB_bf16_aligned_128x64_k65536_sm80");  // largest first
  CHECK(t.rows[0].count == 2);
  CHECK(t.rows[0].total_ns == 1'078'000'000);
  CHECK(t.rows[0].min_ns == 538'000'000);
  CHECK(t.rows[0].max_ns == 540'000'000);
  CHECK(t.rows[0].short_count == 0);
  CHECK(t.rows[1].kind == "memcpy");
  CHECK(t.rows[2].short_count == 1);
  CHECK(t.rows[2].short_ns == 4'000);
  CHECK(t.rows[2].total_ns == 16'000);
}

TEST_CASE("a table written to disk reads back the same, and is recognised by its first line", "[kernels][cupti]") {
  const CuptiTable t = sample();
  const stepcast::testing::TempFile f("", ".kernels.jsonl");
  write_cupti_table(t, f.path());
  const CuptiTable back = read_cupti_table(f.path());
  CHECK(back.header.device == "NVIDIA H200");
  CHECK(back.header.compute_major == 9);
  CHECK(back.header.steps == 2);
  CHECK(back.header.label == "gemma-4 2x2048");
  REQUIRE(back.rows.size() == t.rows.size());
  for (size_t i = 0; i < t.rows.size(); ++i) {
    CHECK(back.rows[i].name == t.rows[i].name);
    CHECK(back.rows[i].total_ns == t.rows[i].total_ns);
    CHECK(back.rows[i].short_ns == t.rows[i].short_ns);
  }
  const std::string text = cupti_table_to_jsonl(t);
  CHECK(looks_like_cupti_table(text));
  CHECK_FALSE(looks_like_cupti_table("{\"traceEvents\": []}"));
  CHECK_FALSE(looks_like_cupti_table(""));
}

TEST_CASE("bad tables name every problem with file:line:col", "[kernels][cupti]") {
  const std::string text =
      "{\"stepcast_cupti_table\": 1, \"device\": \"NVIDIA H200\", \"steps\": 0}\n"
      "{\"name\": \"k1\", \"count\": 3, \"total_ns\": -5}\n"
      "{\"name\": \"k2\", \"count\": 3, \"total_ns\": 10, \"totl_ns\": 4}\n"
      "{\"name\": \"k3\", \"count\": 3, \n"
      "{\"count\": 1, \"total_ns\": 1, \"kind\": \"graph\"}\n";
  try {
    parse_cupti_table(text, "t.jsonl");
    FAIL("no error");
  } catch (const stepcast::InputError& e) {
    const std::string all = e.what();
    CHECK_THAT(all, Contains("t.jsonl:1:1: steps = 0. Violated constraint: >= 1"));
    CHECK_THAT(all, Contains("t.jsonl:2:1: total_ns = -5. Violated constraint: >= 0"));
    CHECK_THAT(all, Contains("t.jsonl:3:1: totl_ns = 4. Violated constraint: unknown key"));
    CHECK_THAT(all, Contains("t.jsonl:4:"));
    CHECK_THAT(all, Contains("malformed JSON"));
    CHECK_THAT(all, Contains("t.jsonl:5:1: name is missing"));
    CHECK_THAT(all, Contains("kind = \"graph\""));
    CHECK(e.problems().size() == 6);
  }
  CHECK_THROWS_AS(parse_cupti_table("{\"name\": \"k\", \"count\": 1, \"total_ns\": 1}\n", "x"), stepcast::InputError);
  CHECK_THROWS_WITH(parse_cupti_table("{\"stepcast_cupti_table\": 2}\n", "x"), Contains("== 1"));
  CHECK_THROWS_WITH(parse_cupti_table("", "x"), Contains("x:1:1: empty table"));
}

TEST_CASE("writing a table never touches a stale temporary file and leaves none behind", "[kernels][cupti]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("stepcast_cupti_write_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path table = dir / "point.jsonl";
  std::ofstream(dir / "point.jsonl.tmp") << "a stale file from an old writer";
  write_cupti_table(sample(), table);
  write_cupti_table(sample(), table);  // replaces the first
  CHECK(read_cupti_table(table).rows.size() == sample().rows.size());
  std::ifstream stale(dir / "point.jsonl.tmp");
  CHECK(std::string(std::istreambuf_iterator<char>(stale), {}) == "a stale file from an old writer");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);  // the table and the stale file
  CHECK_THROWS_WITH(write_cupti_table(sample(), dir / "missing" / "t.jsonl"), Contains("cannot write"));
  fs::remove_all(dir);
}

TEST_CASE("integer fields refuse floats and values past their type, at the line", "[kernels][cupti]") {
  const std::string header = R"({"stepcast_cupti_table": 1, "device": "NVIDIA H200", "short_threshold_ns": 1e28})";
  CHECK_THROWS_WITH(parse_cupti_table(header + "\n", "t.jsonl"),
                    Contains("t.jsonl:1:") && Contains("short_threshold_ns = 1e+28. Violated constraint: an integer"));
  const std::string good = R"({"stepcast_cupti_table": 1, "device": "NVIDIA H200"})";
  const std::string row = R"({"name": "k", "kind": "kernel", "count": 2.5, "total_ns": 10, "min_ns": 1, "max_ns": 9, "short_count": 0, "short_ns": 0})";
  CHECK_THROWS_WITH(parse_cupti_table(good + "\n" + row + "\n", "t.jsonl"),
                    Contains("t.jsonl:2:") && Contains("count = 2.5. Violated constraint: an integer"));
  const std::string big = R"({"stepcast_cupti_table": 1, "compute_major": 9223372036854775807})";
  CHECK_THROWS_WITH(parse_cupti_table(big + "\n", "t.jsonl"), Contains("compute_major") && Contains("an integer <="));
}

TEST_CASE("launch counts and times past what a profiled step can hold are refused at the row", "[kernels][cupti][bounds]") {
  const std::string header = R"({"stepcast_cupti_table": 1, "device": "NVIDIA H200", "steps": 1})";
  const auto row = [](const std::string& count, const std::string& total) {
    return R"({"name": "k", "kind": "kernel", "count": )" + count + R"(, "total_ns": )" + total +
           R"(, "min_ns": 1, "max_ns": 9, "short_count": 0, "short_ns": 0})";
  };
  CHECK_THROWS_WITH(parse_cupti_table(header + "\n" + row("9223372036854775807", "10") + "\n", "t.jsonl"),
                    Contains("t.jsonl:2:1: count = 9223372036854775807. Violated constraint: <= 1000000000000"));
  CHECK_THROWS_WITH(parse_cupti_table(header + "\n" + row("2", "9223372036854775807") + "\n", "t.jsonl"),
                    Contains("t.jsonl:2:1: total_ns = 9223372036854775807. Violated constraint: <="));
  // Rows within their bounds whose sum is not: refused at the row where the sum leaves the bound.
  const std::string near = row("900000000000", "10");
  CHECK_THROWS_WITH(parse_cupti_table(header + "\n" + near + "\n" + near + "\n", "t.jsonl"),
                    Contains("t.jsonl:3:1: the rows up to this one add up to more than"));
  CHECK_NOTHROW(parse_cupti_table(header + "\n" + row("2", "10") + "\n" + row("3", "20") + "\n", "t.jsonl"));
}
