// Real data: the CUPTI tables the harness measured on one NVIDIA H200 (Gemma-4 26B-A4B, LoRA, PyTorch 2.11,
// measurements/records/*.kernels/). Two micro-batches of the default tier at width 4096: rows 4096+4096
// (no padding) and rows 4096+2048 (25 % padding). Checked against an independent count of the table.
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

using nlohmann::json;
using stepcast::testing::run_cli;

namespace {
const std::string kDir = STEPCAST_MEASUREMENTS "/records/h200-gemma-4-26b-a4b-gqa-expand.kernels/";
const std::string kUnpadded = kDir + "kernels_sdpa-auto_grouped_gqa-expand_2x4096_4096_4096.jsonl";
const std::string kPadded = kDir + "kernels_sdpa-auto_grouped_gqa-expand_2x4096_4096_2048.jsonl";

struct Count {
  double device_ns = 0, attention_ns = 0, sm80_attention_ns = 0;
};

Count count(const std::string& path) {
  std::ifstream in(path);
  const std::regex attention(R"(^(fmha_|cudnn_generated_fort_native_sdpa|void cudnn::fusion::))");
  Count c;
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    if (!j.contains("name")) continue;
    const double ns = j["total_ns"].get<double>();
    const std::string name = j["name"].get<std::string>();
    c.device_ns += ns;
    if (std::regex_search(name, attention)) {
      c.attention_ns += ns;
      if (name.rfind("fmha_", 0) == 0 && name.find("_sm80") != std::string::npos) c.sm80_attention_ns += ns;
    }
  }
  return c;
}
}  // namespace

TEST_CASE("real H200 tables: attention share, older-arch CUTLASS, cuDNN sm90, gmem forward", "[kernels][golden][h200]") {
  for (const auto& path : {kUnpadded, kPadded}) {
    INFO(path);
    const Count c = count(path);
    REQUIRE(c.device_ns > 0);
    const auto r = run_cli("kernels " + path + " --format json");
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(r.out);
    CHECK(j["device"]["arch"] == "sm90");
    CHECK(j["device_time_s"].get<double>() == Approx(c.device_ns * 1e-9));
    CHECK(j["categories"]["attention"]["share"].get<double>() == Approx(c.attention_ns / c.device_ns).margin(1e-9));
    bool older = false, gmem = false, cudnn = false;
    for (const auto& d : j["diagnostics"]) {
      const std::string m = d["message"].get<std::string>();
      if (d["kind"] == "older_arch" && m.rfind("attention", 0) == 0) {
        older = true;
        CHECK(d["share"].get<double>() == Approx(c.sm80_attention_ns / c.device_ns).margin(1e-9));
        CHECK(m.find("sm80 CUTLASS 2.x kernels on an sm_90 device (NVIDIA H200)") != std::string::npos);
      }
      gmem = gmem || (d["kind"] == "fallback_tier" && m.find("attention forward runs the gmem fallback") != std::string::npos);
    }
    for (const auto& k : j["kernels"])
      cudnn = cudnn || (k["library"] == "cuDNN" && k["arch"] == "sm90" && k["category"] == "attention");
    CHECK(older);
    CHECK(gmem);
    CHECK(cudnn);
  }
}

TEST_CASE("real H200 tables: padding's largest change is the attention backward", "[kernels][golden][h200]") {
  const auto r = run_cli("kernels " + kUnpadded + " --vs " + kPadded + " --format json");
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["changes"][0]["category"] == "attention");
  CHECK(j["changes"][0]["direction"] == "backward");
  CHECK(j["changes"][0]["name"].get<std::string>().rfind("fmha_cutlassB_", 0) == 0);
  CHECK(j["changes"][0]["delta_s"].get<double>() > 0.1);  // 182.9 ms -> 323.5 ms in the measured table
  CHECK(j["category_changes"][0]["name"] == "attention backward");
}

TEST_CASE("real H200 tables: the math tier's fp32 GEMMs are named, and vanish on the efficient tier", "[kernels][golden][h200]") {
  const std::string dir = STEPCAST_MEASUREMENTS "/records/h200-gemma-4-26b-a4b.kernels/";
  const auto share_of = [](const std::string& path) {
    const auto r = run_cli("kernels " + path + " --format json");
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(r.out);
    for (const auto& d : j["diagnostics"])
      if (d["kind"] == "fp32_gemm") return d["share"].get<double>();
    return 0.0;
  };
  const double math = share_of(dir + "kernels_sdpa-auto_grouped_2x4096_4096_4096.jsonl");
  const double efficient = share_of(dir + "kernels_sdpa-efficient_grouped_2x4096_4096_4096.jsonl");
  CHECK(math > 0.15);       // 2x4096 with enable_gqa: the 512-wide global layers on the math tier
  CHECK(efficient < 0.05);  // the same batch on the CUTLASS efficient tier
}
