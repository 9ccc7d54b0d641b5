// Real traces (pieces of public Kineto, Holistic Trace Analysis and PARAM traces; sources and licences in
// tests/data/traces/real/README.md): golden JSON, categories against an independent count made here from
// the whole-file DOM with regexes written here (not classify_kernel), the not-overlapped communication time
// by an independent sweep, the AMD device, the refusals and --vs across devices.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <tuple>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "golden_json.hpp"
#include "temp_file.hpp"

using nlohmann::json;
using stepcast::testing::run_cli;
using namespace stepcast::testing::golden_json;
using Catch::Matchers::Contains;

namespace {
const std::string kReal = STEPCAST_TEST_DATA "/traces/real/";

struct Independent {
  double device_us = 0, communication_us = 0, convolution_us = 0, exposed_us = 0, communication_union_us = 0;
  int64_t launches = 0;
};

// Sweep over start/end points: time with a communication kernel running and no other kernel running.
void sweep(const std::vector<std::pair<double, double>>& comm, const std::vector<std::pair<double, double>>& compute,
           Independent& c) {
  std::vector<std::tuple<double, int, int>> points;  // time, d(comm), d(compute)
  for (const auto& [s, e] : comm) points.emplace_back(s, 1, 0), points.emplace_back(e, -1, 0);
  for (const auto& [s, e] : compute) points.emplace_back(s, 0, 1), points.emplace_back(e, 0, -1);
  std::sort(points.begin(), points.end());
  int in_comm = 0, in_compute = 0;
  double last = 0;
  for (const auto& [t, dc, dk] : points) {
    if (in_comm > 0) c.communication_union_us += t - last;
    if (in_comm > 0 && in_compute == 0) c.exposed_us += t - last;
    in_comm += dc;
    in_compute += dk;
    last = t;
  }
}

Independent count(const std::string& path) {
  const json t = json::parse(read_all(path));
  const std::regex communication("^nccl");
  const std::regex convolution("(scudnn|convolve|winograd|dgrad|wgrad|fprop|cudnn::cnn::|cask_cudnn|cutlass_cudnn|"
                               "nchwToNhwc|nhwcToNchw|fft2d_|im2col)");
  Independent c;
  // Operators' External ids: a GEMM kernel launched by a convolution operator is the convolution's.
  std::set<int64_t> convolution_ops;
  const auto external_id = [](const json& e) -> int64_t {
    if (!e.contains("args")) return -1;
    for (const char* k : {"External id", "external id"})
      if (e["args"].contains(k) && e["args"][k].is_number()) return e["args"][k].get<int64_t>();
    return -1;
  };
  for (const auto& e : t["traceEvents"])
    if ((e.value("cat", "") == "cpu_op" || e.value("cat", "") == "Operator") &&
        e.value("name", "").find("convolution") != std::string::npos)
      convolution_ops.insert(external_id(e));
  std::vector<std::pair<double, double>> comm, compute;
  for (const auto& e : t["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    std::string cat = e.value("cat", "");
    std::transform(cat.begin(), cat.end(), cat.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    // Kineto's 2021 traces spell them Kernel / Memcpy / Memset.
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset" && cat != "memcpy" && cat != "memset") continue;
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    const std::string name = e["name"].get<std::string>();
    c.device_us += dur;
    if (cat != "kernel") continue;
    ++c.launches;
    if (std::regex_search(name, communication)) {
      c.communication_us += dur;
      comm.emplace_back(ts, ts + dur);
    } else {
      compute.emplace_back(ts, ts + dur);
      if (std::regex_search(name.substr(0, name.find('(')), convolution) || convolution_ops.count(external_id(e)) > 0)
        c.convolution_us += dur;
    }
  }
  sweep(comm, compute, c);
  return c;
}

json report(const std::string& args) {
  const auto r = run_cli("kernels " + args + " --format json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

bool has_diagnostic(const json& j, const std::string& kind) {
  return std::any_of(j["diagnostics"].begin(), j["diagnostics"].end(), [&](const json& d) { return d["kind"] == kind; });
}
}  // namespace

TEST_CASE("golden: real trace pieces (Kineto, HTA, PARAM)", "[kernels][golden][real]") {
  for (const std::string name : {"hta_a100_ddp_nccl", "kineto_v100_resnet50", "param_rtx2080ti_resnet",
                                 "param_v100_dlrm_rank0", "hta_mi250_minitoy"}) {
    INFO(name);
    golden("kernels " + kReal + name + ".json.gz", kReal + name + ".expected.json");
  }
}

TEST_CASE("real traces: totals, communication, convolution and the not-overlapped time equal an independent count",
          "[kernels][real]") {
  for (const std::string name : {"hta_a100_ddp_nccl", "kineto_v100_resnet50", "param_rtx2080ti_resnet",
                                 "param_v100_dlrm_rank0", "hta_a100_trace_diff_control", "hta_v100_trace_diff_test"}) {
    INFO(name);
    const std::string path = kReal + name + ".json.gz";
    const Independent c = count(path);
    const json j = report(path);
    CHECK(j["device_time_s"].get<double>() == Approx(c.device_us * 1e-6).epsilon(1e-12));
    CHECK(j["launches"].get<int64_t>() == c.launches);
    CHECK(j["categories"]["communication"]["time_s"].get<double>() == Approx(c.communication_us * 1e-6).epsilon(1e-12));
    CHECK(j["categories"]["convolution"]["time_s"].get<double>() == Approx(c.convolution_us * 1e-6).epsilon(1e-12));
    CHECK(j["categories"]["communication"]["not_overlapped_s"].get<double>() ==
          Approx(c.exposed_us * 1e-6).epsilon(1e-6));  // µs timestamps of ~1.7e12: ~1e-10 s of rounding
    // The goal for NVIDIA traces: under 5 % of device time left unclassified.
    CHECK(j["categories"]["other"]["share"].get<double>() < 0.05);
  }
}

TEST_CASE("real traces: NCCL all-reduce named from the trace's Collective name, with its exposure", "[kernels][real]") {
  const json j = report(kReal + "hta_a100_ddp_nccl.json.gz");
  const Independent c = count(kReal + "hta_a100_ddp_nccl.json.gz");
  CHECK(j["categories"]["communication"]["all_reduce"]["time_s"].get<double>() ==
        Approx(c.communication_us * 1e-6).epsilon(1e-12));
  std::string message;
  for (const auto& d : j["diagnostics"])
    if (d["kind"] == "communication") message = d["message"];
  CHECK_THAT(message, Contains("communication 61.7 % of device time in NCCL (all_reduce 61.7 %)"));
  char exposed[32];
  std::snprintf(exposed, sizeof exposed, "%.1f", 100.0 * c.exposed_us / c.communication_union_us);
  CHECK_THAT(message, Contains(std::string("not overlapped with compute for ") + exposed + " % of it"));
  // DLRM's all-to-all runs as NCCL SendRecv kernels; their names say so and no Collective name is recorded.
  const json dlrm = report(kReal + "param_v100_dlrm_rank0.json.gz");
  CHECK(dlrm["categories"]["communication"]["send_recv"]["time_s"].get<double>() > 0);
  CHECK(dlrm["categories"]["communication"]["share"].get<double>() > 0.5);
}

TEST_CASE("real traces: cuDNN convolutions are convolution, batch norm is a reduction, not GEMM", "[kernels][real]") {
  const json j = report(kReal + "kineto_v100_resnet50.json.gz");
  CHECK(j["categories"]["convolution"]["share"].get<double>() > 0.5);
  // cuDNN runs some convolutions as cuBLAS GEMMs: the launching operator says so.
  int sgemm_in_conv = 0;
  for (const auto& k : j["kernels"])
    if (k["name"].get<std::string>().rfind("volta_sgemm", 0) == 0 && k["launched_by"] == "convolution") {
      ++sgemm_in_conv;
      CHECK(k["category"] == "convolution");
      CHECK(k["library"] == "cuBLAS");
    }
  CHECK(sgemm_in_conv > 0);
  for (const auto& k : j["kernels"]) {
    const std::string n = k["name"];
    INFO(n);
    if (n.find("bn_fw_tr_1C11") != std::string::npos || n.find("bn_bw_1C11") != std::string::npos)
      CHECK(k["category"] == "reduction");
    if (n.find("winograd") != std::string::npos || n.find("implicit_convolve_sgemm") != std::string::npos ||
        n.find("scudnn") != std::string::npos)
      CHECK(k["category"] == "convolution");
  }
  CHECK(has_diagnostic(j, "convolution_share"));
}

TEST_CASE("real traces: volta_ kernels on an sm75 card are the libraries' normal choice, not an older arch",
          "[kernels][real]") {
  const json j = report(kReal + "param_rtx2080ti_resnet.json.gz");
  CHECK(j["device"]["arch"] == "sm75");
  bool volta = false;
  for (const auto& k : j["kernels"]) volta = volta || k["arch"] == "sm70";
  CHECK(volta);
  CHECK_FALSE(has_diagnostic(j, "older_arch"));
}

TEST_CASE("real traces: an MI250 is an AMD gfx device and its Tensile GEMMs are GEMMs", "[kernels][real]") {
  const json j = report(kReal + "hta_mi250_minitoy.json.gz");
  CHECK(j["device"]["vendor"] == "AMD");
  CHECK(j["device"]["arch"] == "gfx908/gfx90a");  // hipDeviceProp 9.0; not "sm90"
  int tensile = 0;
  for (const auto& k : j["kernels"])
    if (k["name"].get<std::string>().rfind("Cijk_", 0) == 0) {
      ++tensile;
      CHECK(k["category"] == "gemm");
      CHECK(k["library"] == "hipBLASLt");
      CHECK(k["arch"] == "gfx90a");
    }
  CHECK(tensile == 2);
  CHECK(j["categories"]["other"]["share"].get<double>() == 0.0);
  CHECK_FALSE(has_diagnostic(j, "older_arch"));
}

TEST_CASE("files that are not profiler traces exit 2 saying what they look like", "[kernels][real][refusal]") {
  const stepcast::testing::TempFile foo("{\"foo\": 1}", ".json");
  const stepcast::testing::TempFile objects("[{\"a\": 1}, {\"b\": 2}]", ".json");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kReal + "hta_execution_trace.json.gz", "a PyTorch execution trace"},
      {kReal + "hta_memory_timeline.raw.json.gz", "a JSON array of 200 values that are not trace events (no \"ph\"): "
                                                  "arrays, like the rows of a memory timeline"},
      {kReal + "hta_mtia_inference.json.gz", "(MTIA: 150 events, device ARTEMIS) and no CUDA or ROCm kernels"},
      {foo.path(), "JSON without \"traceEvents\" (not a profiler trace)"},
      {objects.path(), "a JSON array of 2 values that are not trace events (no \"ph\")"},
  };
  for (const auto& [path, says] : cases) {
    INFO(path);
    const auto r = run_cli("kernels " + path);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(says));
    CHECK(r.out.empty());
  }
}

TEST_CASE("kernels --vs warns when the two traces ran on different devices", "[kernels][real]") {
  const std::string a100 = kReal + "hta_a100_trace_diff_control.json.gz";
  const std::string v100 = kReal + "hta_v100_trace_diff_test.json.gz";
  const auto r = run_cli("kernels " + a100 + " --vs " + v100 + " --format json");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("warning: the two traces ran on different devices (NVIDIA A100-PG509-200, sm80 vs "
                             "Tesla V100-SXM2-16GB, sm70)"));
  const json j = json::parse(r.out);
  REQUIRE(j["warnings"].size() == 1);
  const auto same = run_cli("kernels " + a100 + " --vs " + a100 + " --format json");
  CHECK(same.err.empty());
  CHECK(json::parse(same.out)["warnings"].empty());
}

TEST_CASE("an unterminated JSON Array Format trace (allowed by the format) reads like the whole one", "[kernels][real]") {
  const json whole = json::parse(read_all(kReal + "kineto_v100_resnet50.json.gz"));
  std::string events = whole["traceEvents"].dump();  // "[{...},...,{...}]"
  events.pop_back();                                  // no closing bracket
  const stepcast::testing::TempFile open_end(events, ".json");
  const stepcast::testing::TempFile trailing_comma(events + ",\n", ".json");
  const json want = report(kReal + "kineto_v100_resnet50.json.gz");
  for (const auto* f : {&open_end, &trailing_comma}) {
    const json got = report(f->path());
    CHECK(got["device_time_s"].get<double>() == Approx(want["device_time_s"].get<double>()).epsilon(1e-12));
    CHECK(got["launches"] == want["launches"]);
    CHECK(got["categories"]["convolution"]["time_s"].get<double>() ==
          Approx(want["categories"]["convolution"]["time_s"].get<double>()).epsilon(1e-12));
  }
  // Cut inside an event, it is still a truncated trace.
  const stepcast::testing::TempFile cut(events.substr(0, events.size() - 40), ".json");
  const auto r = run_cli("kernels " + cut.path());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("unexpected end of file"));
}
