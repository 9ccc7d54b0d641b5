// measurements/public/'s reader (io/public_measurements.hpp): the shipped files, their provenance, and every
// rule with its file:line:col.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "catch.hpp"
#include "temp_file.hpp"
#include "io/public_measurements.hpp"
#include "model/errors.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;

namespace {
const std::string kHeader = "gpu,arch,kind,family,path,m,n,k,value,unit,source,locator,read\n";
const std::string kGemm = "NVIDIA H100 80GB HBM3,sm90,gemm,blas,wgmma,4096,4096,4096,700,tflops,r/x README.md,table 1,2026-12-04\n";

std::vector<model::PublicPoint> load(const std::string& text) {
  testing::TempFile f(text, ".csv");
  return io::load_public_measurements(f.path(), model::known_gpus(), model::known_archs());
}
}  // namespace

TEST_CASE("a public measurement row reads with its provenance", "[public]") {
  const auto p = load(kHeader + "# a comment\n" + kGemm);
  REQUIRE(p.size() == 1);
  CHECK(p[0].line == 3);
  CHECK(p[0].gpu == "NVIDIA H100 80GB HBM3");
  CHECK(p[0].m == 4096);
  CHECK(p[0].value == 700);
  CHECK(p[0].source == "r/x README.md");
  // An alias resolves to the table's name.
  const auto a = load(kHeader + "NVIDIA RTX PRO 6000 Blackwell,sm120,gemm,blas,mma,1,1,1,1,tflops,s,l,2026-01-01\n");
  CHECK(a[0].gpu == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition");
  // A fraction of peak needs no GPU of the table (a probe on a card stepcast does not list).
  const auto f = load("gpu,arch,kind,path,value,unit,source,locator,read\nNVIDIA H800,sm90,tensor_path,mma,0.65,fraction_of_peak,s,l,2026-01-01\n");
  CHECK(f[0].unit == "fraction_of_peak");
}

TEST_CASE("public measurement problems carry file:line:col, all of them", "[public]") {
  struct Case {
    std::string text, expect;
  };
  auto c = GENERATE_COPY(values<Case>({
      {"gpu,arch,kind,colour,value,unit,source,locator,read\n", ":1:15: column 'colour'"},
      {"gpu,arch,kind,value,unit,source,locator\n", "no column 'read'"},
      {"gpu,arch,kind,value,unit,source,value,locator,read\n", ":1:33: column 'value' twice"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm90,gemm,blas,wgmma,4096,4096,4096,700,tflops,,table 1,2026-12-04\n",
       ":2:70: source is empty. Violated constraint: every row says where it was published"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm90,gemm,blas,wgmma,4096,4096,4096,700,tflops,s,l,yesterday\n",
       "read = 'yesterday'"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm90,gemm,blas,wgmma,4096,4096,4096,700,gbs,s,l,2026-12-04\n",
       "unit = 'gbs'. Violated constraint: for gemm, one of tflops"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm90,gemm,blas,wgmma,4096,,4096,700,tflops,s,l,2026-12-04\n", "n is empty"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm90,gemm,blas,wgmma,4096,4096,4096,-7,tflops,s,l,2026-12-04\n",
       ":2:59: value = '-7'. Violated constraint: a finite number > 0"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm80,gemm,blas,wgmma,4096,4096,4096,700,tflops,s,l,2026-12-04\n",
       ":2:23: arch 'sm80' for 'NVIDIA H100 80GB HBM3'. Violated constraint: the table's arch, 'sm90'"},
      {kHeader + "NVIDIA Tesla T4,sm75,gemm,blas,mma,1,1,1,1,tflops,s,l,2026-12-04\n", "gpu 'NVIDIA Tesla T4' is not in"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm90,gemm,blas,xmma,1,1,1,1,tflops,s,l,2026-12-04\n", "path = 'xmma'"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm90,conv,blas,mma,1,1,1,1,tflops,s,l,2026-12-04\n", "kind = 'conv'"},
      {kHeader + "NVIDIA H100 80GB HBM3,sm90\n", ":2:1: a row of 2 fields"},
      {kHeader + "\"unterminated,sm90\n", "RFC 4180"},
      {"", "no header line"},
  }));
  INFO(c.text);
  try {
    load(c.text);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains(c.expect));
  }
}

TEST_CASE("every problem of a file is reported at once", "[public]") {
  try {
    load(kHeader + "NVIDIA H100 80GB HBM3,sm90,gemm,blas,wgmma,0,4096,4096,700,tflops,s,,2026-12-04\n" +
         "NVIDIA H100 80GB HBM3,sm80,gemm,blas,wgmma,1,1,1,1,tflops,s,l,2026-12-04\n");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.problems().size() == 3);  // m = 0, no locator, arch
  }
}

TEST_CASE("the shipped public measurements read and each row says where it was published", "[public]") {
  // The files the build compiles in, each checked again here; every row names its source, locator and date.
  const std::vector<std::string> files = {STEPCAST_PUBLIC_FILES};
  REQUIRE(files.size() >= 9);
  size_t rows = 0;
  std::set<std::string> gpus;
  for (const auto& path : files) {
    INFO(path);
    const auto points = io::load_public_measurements(path, model::known_gpus(), model::known_archs());
    CHECK(!points.empty());
    for (const auto& p : points) {
      CHECK(!p.source.empty());
      CHECK(!p.locator.empty());
      CHECK(p.read.size() == 10);
      CHECK(p.value > 0);
      gpus.insert(p.gpu);
    }
    rows += points.size();
  }
  CHECK(rows == model::public_points().size());
  // The targets: A100, H100, H200, B200, an Ada card, the RTX PRO 6000 Blackwell (its Max-Q), MI300X.
  for (const char* g : {"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200",
                        "NVIDIA GeForce RTX 4090", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                        "AMD Instinct MI300X"})
    CHECK(gpus.count(g) == 1);
}

TEST_CASE("a public step figure with an id names the public-*.jsonl prediction committed before it", "[public]") {
  // docs/gpus.md, "Adding a source": a whole-step figure is checked against a prediction that was committed
  // first to measurements/predictions/public-*.jsonl; the row's locator ends with `id=<the prediction's id>`.
  std::string predictions;
  for (const auto& e : std::filesystem::directory_iterator(std::string(STEPCAST_MEASUREMENTS) + "/predictions")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("public-", 0) != 0 || e.path().extension() != ".jsonl") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    predictions += text.str();
  }
  const std::vector<std::string> files = {STEPCAST_PUBLIC_FILES};
  size_t with_id = 0;
  for (const auto& path : files) {
    for (const auto& p : io::load_public_measurements(path, model::known_gpus(), model::known_archs())) {
      const auto at = p.locator.find("id=");
      if (p.kind != "step" || at == std::string::npos) continue;
      const std::string id = p.locator.substr(at + 3);
      INFO(path << ": " << id);
      CHECK(predictions.find("\"id\": \"" + id + "\"") != std::string::npos);
      ++with_id;
    }
  }
  CHECK(with_id >= 18);  // qwen-readme.csv: the 18 single-GPU LoRA cells
}
