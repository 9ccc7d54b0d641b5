// The streaming Chrome-trace reader: what it keeps from real-looking traces, and the byte offset it
// names when a trace is malformed or truncated (plain and gzip).
#include <zlib.h>

#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "kernels/trace_reader.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"

using namespace stepcast::kernels;
using Catch::Matchers::Contains;

namespace {
const std::string kTraces = STEPCAST_TEST_DATA "/traces/";

std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[65536];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

void write_gz(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

const KernelStat* find(const KernelTable& t, const std::string& prefix) {
  for (const auto& k : t.kernels)
    if (k.name.rfind(prefix, 0) == 0) return &k;
  return nullptr;
}

std::string error_of(const std::string& path) {
  try {
    read_kernel_table(path);
  } catch (const stepcast::InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("the sm_120 study's trace keeps device events only, with the device and steps", "[kernels][reader]") {
  const KernelTable t = read_kernel_table(kTraces + "seed_sm120.json");
  CHECK(t.format == "chrome_trace");
  CHECK(t.device.name == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition");
  CHECK(t.device.compute_major == 12);
  CHECK(t.device.num_sms == 188);
  CHECK(t.steps == 1);
  CHECK(t.kernels.size() == 13);  // gpu_user_annotation, cpu_op, cuda_runtime and ac2g events are not kernels
  const KernelStat* bwd = find(t, "fmha_cutlassB");
  REQUIRE(bwd != nullptr);
  CHECK(bwd->count == 2);
  CHECK(bwd->time_s == Approx(8000e-6));
  const KernelStat* copy = find(t, "Memcpy DtoD");
  REQUIRE(copy != nullptr);
  CHECK(copy->kind == "memcpy");
  const KernelStat* fill = find(t, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor");
  REQUIRE(fill != nullptr);
  CHECK(fill->short_count == 10);  // 5 µs launches under the 10 µs default
  // Kernels run back to back with 1.5 µs gaps: busy = sum of durations, window = that + 30 gaps.
  CHECK(t.busy_s == Approx(14100e-6));
  CHECK(t.window_s == Approx(14100e-6 + 30 * 1.5e-6));  // 31 device events
}

TEST_CASE("a gzip trace reads the same as its decompressed text", "[kernels][reader]") {
  const stepcast::testing::TempFile plain(read_gz(kTraces + "h200_unpadded.json.gz"), ".json");
  const KernelTable a = read_kernel_table(kTraces + "h200_unpadded.json.gz");
  const KernelTable b = read_kernel_table(plain.path());
  REQUIRE(a.kernels.size() == b.kernels.size());
  CHECK(a.device.name == "NVIDIA H200");
  double ta = 0, tb = 0;
  for (const auto& k : a.kernels) ta += k.time_s;
  for (const auto& k : b.kernels) tb += k.time_s;
  CHECK(ta == tb);
}

TEST_CASE("a gzipped CUPTI table reads like a plain one", "[kernels][reader]") {
  const std::string plain = STEPCAST_MEASUREMENTS
      "/records/h200-gemma-4-26b-a4b-gqa-expand.kernels/kernels_sdpa-auto_grouped_gqa-expand_2x4096_4096_4096.jsonl";
  std::ifstream in(plain);
  std::stringstream ss;
  ss << in.rdbuf();
  const stepcast::testing::TempFile gz("", ".jsonl.gz");
  write_gz(gz.path(), ss.str());
  const KernelTable a = read_kernel_table(plain);
  const KernelTable b = read_kernel_table(gz.path());
  CHECK(a.format == "cupti_table");
  CHECK(b.format == "cupti_table");
  REQUIRE(a.kernels.size() == b.kernels.size());
  CHECK(b.device.name == "NVIDIA H200");
  const stepcast::testing::TempFile bad("", ".jsonl.gz");
  write_gz(bad.path(), ss.str().substr(0, 300));  // cut inside the first kernel line
  CHECK_THAT(error_of(bad.path()), Contains(bad.path() + ":2:"));
}

TEST_CASE("the JSON Array Format and a trace without devices are read", "[kernels][reader]") {
  const stepcast::testing::TempFile arr(
      "[{\"ph\": \"X\", \"cat\": \"Kernel\", \"name\": \"k\\u00b5\\\"q\\\"\", \"ts\": 1.5, \"dur\": 2.5e1, \"pid\": 0},"
      " {\"ph\": \"i\", \"name\": \"x\", \"ts\": 3}]",
      ".json");
  const KernelTable t = read_kernel_table(arr.path());
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].name == "k\xC2\xB5\"q\"");
  CHECK(t.kernels[0].time_s == Approx(25e-6));
  CHECK(t.device.compute_major == 0);
  CHECK(t.steps == 0);
}

TEST_CASE("NaN and Infinity, which Python's json accepts, are accepted in values the reader skips", "[kernels][reader]") {
  const stepcast::testing::TempFile f(
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": 4, "
      "\"args\": {\"blocks per SM\": Infinity, \"warps per SM\": -Infinity, \"occupancy\": NaN}}]}",
      ".json");
  const KernelTable t = read_kernel_table(f.path());
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].time_s == Approx(4e-6));
  const stepcast::testing::TempFile bad("{\"traceEvents\": [], \"x\": Inf}", ".json");
  CHECK_THAT(error_of(bad.path()), Contains("malformed literal (expected Infinity)"));
}

TEST_CASE("malformed traces name the byte offset of the problem", "[kernels][reader]") {
  struct Case {
    std::string text;
    std::string at;  // the substring whose offset is the error's byte
    std::string message;
  };
  const auto c = GENERATE(values<Case>({
      {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\", \"dur\": 12x}]}", "x}", "expected ','"},
      {"{\"traceEvents\": [{\"ph\": \"X\" \"cat\": \"kernel\"}]}", "\"cat", "expected ','"},
      {"{\"traceEvents\": [1, 2,, 3]}", ", 3", "expected a JSON value"},
      {"{\"traceEvents\": [{\"dur\": 1.2.3}]}", "}]}", "malformed number"},
      {"{\"traceEvents\": [], \"x\": tru}", "}", "malformed literal"},
      {"{\"traceEvents\": [{\"name\": \"a\\qb\"}]}", "qb\"", "invalid escape"},
      {"{\"traceEvents\": []} extra", "extra", "unexpected bytes after"},
      {"  hello", "hello", "expected '{' or '['"},
  }));
  const stepcast::testing::TempFile f(c.text, ".json");
  const size_t at = c.text.find(c.at);
  REQUIRE(at != std::string::npos);
  const std::string err = error_of(f.path());
  INFO(c.text);
  CHECK_THAT(err, Contains(f.path() + ": byte " + std::to_string(at) + ": "));
  CHECK_THAT(err, Contains(c.message));
}

TEST_CASE("truncated traces give the offset where the bytes ran out, plain or gzip", "[kernels][reader]") {
  std::ifstream in(kTraces + "seed_sm120.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string full = ss.str();
  const size_t cut = GENERATE(1, 17, 100, 5000, 30000);
  REQUIRE(cut < full.size() - 10);
  const std::string part = full.substr(0, cut);
  const stepcast::testing::TempFile plain(part, ".json");
  CHECK_THAT(error_of(plain.path()), Contains("byte " + std::to_string(cut) + ": unexpected end of file"));
  // The same JSON truncation inside a well-formed gzip stream: the offset is in the decompressed bytes.
  const stepcast::testing::TempFile gz("", ".json.gz");
  write_gz(gz.path(), part);
  CHECK_THAT(error_of(gz.path()), Contains("byte " + std::to_string(cut) + " of the decompressed stream"));
}

TEST_CASE("a cut gzip stream and an empty file are bad input, not a crash", "[kernels][reader]") {
  std::ifstream in(kTraces + "h200_padded.json.gz", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string gz = ss.str();
  const stepcast::testing::TempFile cut(gz.substr(0, gz.size() / 2), ".json.gz");
  const std::string err = error_of(cut.path());
  CHECK_THAT(err, Contains("byte "));
  CHECK_THAT(err, Contains(cut.path()));
  const stepcast::testing::TempFile empty("", ".json");
  CHECK_THAT(error_of(empty.path()), Contains("byte 0"));
  CHECK_THAT(error_of(kTraces + "no-such-trace.json"), Contains("no such file"));
  const stepcast::testing::TempFile deep(std::string(300, '[') + std::string(300, ']'), ".json");
  CHECK_THAT(error_of(deep.path()), Contains("nesting deeper"));
}

TEST_CASE("timestamps, durations and ids a trace cannot mean are refused at their line and column",
          "[kernels][reader][bounds]") {
  struct Case {
    std::string event;    // the second event of the trace, on line 3
    std::string at;       // the number whose column is named
    std::string message;
  };
  const auto c = GENERATE(values<Case>({
      {R"({"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "ts": 1e308, "dur": 5})", "1e308", "ts = 1e+308"},
      {R"({"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "ts": -Infinity, "dur": 5})", "-Infinity", "ts = -inf"},
      {R"({"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "ts": 10, "dur": 1e300})", "1e300", "dur = 1e+300"},
      {R"({"ph": "X", "cat": "kernel", "name": "b", "pid": 1e300, "ts": 10, "dur": 5})", "1e300", "pid = 1e+300"},
      {R"({"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "ts": 10, "dur": 5, "args": {"External id": -1e99}})",
       "-1e99", "External id = -1e+99"},
  }));
  const std::string first = R"({"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "ts": 1, "dur": 5})";
  const std::string text = "{\"traceEvents\": [\n" + first + ",\n" + c.event + "\n]}\n";
  const stepcast::testing::TempFile f(text, ".json");
  const size_t column = c.event.find(c.at) + 1;
  const std::string err = error_of(f.path());
  INFO(err);
  CHECK_THAT(err, Contains(f.path() + ":3:" + std::to_string(column) + ": " + c.message + ". Violated constraint"));
  // The same inside a gzip stream: line and column of the decompressed text.
  const stepcast::testing::TempFile gz("", ".json.gz");
  write_gz(gz.path(), text);
  CHECK_THAT(error_of(gz.path()), Contains(gz.path() + ":3:" + std::to_string(column) + ": " + c.message));
}

TEST_CASE("the command refuses such a trace with exit 2 instead of printing nonsense", "[kernels][reader][bounds][cli]") {
  const stepcast::testing::TempFile f(
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\", \"pid\": 0, \"ts\": 1e308, \"dur\": 5}]}",
      ".json");
  const auto r = stepcast::testing::run_cli("kernels " + f.path() + " --format json");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(f.path() + ":1:"));
  CHECK(r.out.empty());
}
