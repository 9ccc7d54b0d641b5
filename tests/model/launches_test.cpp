// Kernel launches per step predicted from the module table (model/launches.hpp) against the H200's CUPTI tables:
// tests/data/launches/h200-launches.csv holds each table's launches (kernels + memcpy + memset, summed from the
// file named in its `source` column; the harness's own measurements, this project's data).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "io/model_config.hpp"
#include "model/launches.hpp"

using namespace stepcast;

namespace {
struct Table {
  std::string model, tier, shape;
  double launches = 0;
};

std::vector<Table> h200_tables() {
  std::ifstream in(std::string(STEPCAST_TEST_DATA) + "/launches/h200-launches.csv");
  std::vector<Table> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream s(line);
    Table t;
    std::string launches;
    std::getline(s, t.model, ',');
    std::getline(s, t.tier, ',');
    std::getline(s, t.shape, ',');
    std::getline(s, launches, ',');
    t.launches = std::stod(launches);
    out.push_back(t);
  }
  return out;
}

double tokens_of(const std::string& shape) {  // "2x4096" -> 8192
  const auto x = shape.find('x');
  return std::stod(shape.substr(0, x)) * std::stod(shape.substr(x + 1));
}

double relative_error(const Table& t) {
  const model::LaunchModel m(io::load_model(t.model), model::tier_from_label(t.tier));
  return m.per_step(tokens_of(t.shape)) / t.launches - 1.0;
}
}  // namespace

TEST_CASE("launches of the two fitted models are within 3 % of every table", "[launches]") {
  int checked = 0;
  for (const Table& t : h200_tables()) {
    if (t.model != "gemma-4-26b-a4b" && t.model != "llama-3-8b") continue;
    INFO(t.model << " " << t.tier << " " << t.shape);
    CHECK(std::abs(relative_error(t)) < 0.03);
    ++checked;
  }
  CHECK(checked == 12);
}

TEST_CASE("launches carry to models not fitted within 15 %", "[launches]") {
  // Mistral-7B (dense, 8 tables), Mixtral-8x7B (8 experts, 2), Qwen3-30B-A3B (128 experts, q/k norms, 1).
  int checked = 0;
  for (const Table& t : h200_tables()) {
    if (t.model == "gemma-4-26b-a4b" || t.model == "llama-3-8b") continue;
    INFO(t.model << " " << t.tier << " " << t.shape);
    CHECK(std::abs(relative_error(t)) < 0.15);
    ++checked;
  }
  CHECK(checked == 11);
}

TEST_CASE("loop experts launch per expert hit, so few tokens launch fewer", "[launches]") {
  const auto gemma = io::load_model("gemma-4-26b-a4b");
  const model::LaunchModel loop(gemma, model::tier_from_label("sdpa-auto/loop"));
  const model::LaunchModel grouped(gemma, model::tier_from_label("sdpa-auto/grouped"));
  // 1 token routes to top_k = 8 of 128 experts per layer: 8 hits, not 128.
  CHECK(loop.per_step(1) < loop.per_step(4096));
  CHECK(loop.per_step(1) == Approx(grouped.per_step(1) - 30 * model::kLaunchTable[model::kLaunchMoeLayer].per_unit +
                                   30 * 8 * model::kLaunchTable[model::kLaunchExpertHit].per_unit));
  CHECK(grouped.per_step(1) == grouped.per_step(4096));
}

TEST_CASE("a dense model has no expert launches and counts its LoRA modules and norms", "[launches]") {
  const auto n = model::launch_units(io::load_model("llama-3-8b"), model::tier_from_label("sdpa-auto/grouped"));
  CHECK(n[model::kLaunchLora] == 224);  // 7 targets x 32 layers
  CHECK(n[model::kLaunchNorm] == 65);   // 2 per layer + the final norm
  CHECK(n[model::kLaunchMoeLayer] == 0);
  CHECK(n[model::kLaunchExpertHit] == 0);
}
