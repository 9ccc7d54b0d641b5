// Golden tests: `stepcast kernels --format json` on the hand-made traces against committed expected
// output, and the shares against an independent count done here with a whole-file JSON DOM.
// To regenerate after an intended change: STEPCAST_UPDATE_GOLDEN=1 ./kernels_test "[golden]", then
// review the diff of tests/data/traces/*.expected.json.
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "temp_file.hpp"
#include "golden_json.hpp"

using nlohmann::json;
using stepcast::testing::run_cli;
using namespace stepcast::testing::golden_json;

namespace {
const std::string kTraces = STEPCAST_TEST_DATA "/traces/";

// An independent count: device time and attention time summed straight from the DOM, attention
// recognised by a regex written here, not by classify_kernel.
struct Count {
  double device_us = 0, attention_us = 0, attention_bwd_us = 0, older_attention_us = 0;
  int64_t launches = 0;
};
Count count(const std::string& path) {
  const json t = json::parse(read_all(path));
  const std::regex attention("^(fmha_|cudnn_generated_fort_native_sdpa|flash_|void pytorch_flash::)");
  const std::regex backward("(cutlassB|bprop|bwd)");
  Count c;
  for (const auto& e : t["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    const double dur = e["dur"].get<double>();
    const std::string name = e["name"].get<std::string>();
    c.device_us += dur;
    if (cat == "kernel") ++c.launches;
    if (std::regex_search(name, attention)) {
      c.attention_us += dur;
      if (std::regex_search(name, backward)) c.attention_bwd_us += dur;
      if (name.find("_sm80") != std::string::npos) c.older_attention_us += dur;
    }
  }
  return c;
}
}  // namespace

TEST_CASE("golden: the sm_120 study's trace", "[kernels][golden]") {
  golden("kernels " + kTraces + "seed_sm120.json", kTraces + "seed_sm120.expected.json");
}

TEST_CASE("golden: unpadded vs padded H200 traces", "[kernels][golden]") {
  golden("kernels " + kTraces + "h200_unpadded.json.gz --vs " + kTraces + "h200_padded.json.gz", kTraces + "h200_vs.expected.json");
}

TEST_CASE("shares agree with an independent count of the trace", "[kernels][golden]") {
  for (const std::string file : {"seed_sm120.json", "h200_unpadded.json.gz", "h200_padded.json.gz"}) {
    INFO(file);
    const Count c = count(kTraces + file);
    const auto r = run_cli("kernels " + kTraces + file + " --format json");
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(r.out);
    CHECK(j["device_time_s"].get<double>() == Approx(c.device_us * 1e-6).epsilon(1e-12));
    CHECK(j["categories"]["attention"]["share"].get<double>() == Approx(c.attention_us / c.device_us).epsilon(1e-12));
    CHECK(j["categories"]["attention"]["backward"]["time_s"].get<double>() ==
          Approx(c.attention_bwd_us * 1e-6).epsilon(1e-12));
    CHECK(j["launches"].get<int64_t>() == c.launches);
    bool flagged = false;
    for (const auto& d : j["diagnostics"])
      if (d["kind"] == "older_arch" && d["message"].get<std::string>().rfind("attention", 0) == 0) {
        flagged = true;
        CHECK(d["share"].get<double>() == Approx(c.older_attention_us / c.device_us).epsilon(1e-12));
        CHECK(d["message"].get<std::string>().find("sm80 CUTLASS 2.x") != std::string::npos);
      }
    CHECK(flagged);
  }
}

TEST_CASE("the sm_120 study's findings read as diagnosis lines", "[kernels][golden]") {
  const auto r = run_cli("kernels " + kTraces + "seed_sm120.json");
  REQUIRE(r.exit_code == 0);
  using Catch::Matchers::Contains;
  CHECK_THAT(r.out, Contains("attention 78.0 % of device time (forward 21.3 %, backward 56.7 %) runs sm80 CUTLASS 2.x "
                             "kernels on an sm_120 device"));
  CHECK_THAT(r.out, Contains("the attention forward runs the gmem fallback tier "
                             "(fmha_cutlassF_bf16_aligned_32x128_gmem_sm80: 21.3 % of device time)"));
  CHECK_THAT(r.out, Contains("29 kernel launches per step (1 step from ProfilerStep markers)"));
  CHECK_THAT(r.out, Contains("dense GEMM 10.6 % of device time"));
}

TEST_CASE("golden: a real CPU-only trace from Debian's LibTorch 1.13", "[kernels][golden]") {
  // tests/data/traces/make_libtorch_trace.cpp wrote it: the legacy profiler's JSON Array Format, string
  // pids, no cat, no deviceProperties. Nothing ran on a device, and the tool says so.
  golden("kernels " + kTraces + "libtorch_cpu.json", kTraces + "libtorch_cpu.expected.json");
  const auto r = run_cli("kernels " + kTraces + "libtorch_cpu.json --format json");
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["device_time_s"] == 0.0);
  CHECK(j["kernels"].empty());
  REQUIRE(j["diagnostics"].size() == 1);
  CHECK(j["diagnostics"][0]["kind"] == "no_device_activity");
  // Cut anywhere, it is bad input with the offset.
  std::ifstream in(kTraces + "libtorch_cpu.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const stepcast::testing::TempFile cut(ss.str().substr(0, 20000), ".json");
  const auto bad = run_cli("kernels " + cut.path());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("byte 20000: unexpected end of file") != std::string::npos);
}
