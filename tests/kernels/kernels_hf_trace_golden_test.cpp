// Real torch.profiler Chrome traces the project did not shape: one LoRA fwd+bwd step of Gemma-4 26B-A4B
// under transformers 5.17 + peft 0.21 on one NVIDIA H200 (a torch.profiler trace, docs/kernels.md), rows 4096+4096 and
// 4096+2048 at width 4096. The attention share is checked against an independent count of the trace.
#include <zlib.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

using nlohmann::json;
using stepcast::testing::run_cli;

namespace {
const std::string kDir = STEPCAST_MEASUREMENTS "/records/traces/";
const std::string kUnpadded = kDir + "hf-peft-4096x4096-w4096.json.gz";
const std::string kPadded = kDir + "hf-peft-4096x2048-w4096.json.gz";

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return text;
}

// Attention share by a plain name match over device activity (kernels, memcpy, memset), not stepcast's classifier.
double independent_attention_share(const std::string& path) {
  const json trace = json::parse(gunzip(path));
  const std::regex attention(R"(^(fmha_|cudnn_generated_fort_native_sdpa|void cudnn::fusion::|cudnn::fusion::))");
  double device_us = 0, attention_us = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    const double us = e["dur"].get<double>();
    device_us += us;
    if (cat == "kernel" && std::regex_search(e["name"].get<std::string>(), attention)) attention_us += us;
  }
  return attention_us / device_us;
}
}  // namespace

TEST_CASE("real HF+peft H200 traces: attention share, sm80 CUTLASS, cuDNN sm90, padding's largest change",
          "[kernels][golden][h200]") {
  const auto r = run_cli("kernels " + kUnpadded + " --vs " + kPadded + " --format json");
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  CHECK(j["device"]["arch"] == "sm90");
  // Within 1 percentage point of the independent count (the issue's bar); in fact equal to rounding.
  CHECK(j["categories"]["attention"]["share"].get<double>() ==
        Approx(independent_attention_share(kUnpadded)).margin(0.01));
  bool older_attention = false;
  for (const auto& d : j["diagnostics"])
    if (d["kind"] == "older_arch" && d["message"].get<std::string>().rfind("attention", 0) == 0)
      older_attention = d["share"].get<double>() > 0.05;
  CHECK(older_attention);
  bool cudnn_sm90 = false;
  for (const auto& k : j["kernels"])
    cudnn_sm90 |= k["library"] == "cuDNN" && k["arch"] == "sm90" && k["category"] == "attention";
  CHECK(cudnn_sm90);
  REQUIRE(!j["changes"].empty());
  CHECK_THAT(j["changes"][0]["name"].get<std::string>(), Catch::Matchers::StartsWith("fmha_cutlassB"));
  CHECK(j["changes"][0]["delta_s"].get<double>() > 0.1);  // 187 -> 322 ms measured
}
