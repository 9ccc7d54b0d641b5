// Speed of the calibrated model (a benchmark, not a test):
//   calibrating 1,000 records (full model selection, covariance) in under 1 s;
//   predicting at least 1 M micro-batches per second on one core (the planner's inner loop).
// Usage: calibrate_bench [records=1000] [predictions=5000000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "calibrate/fit.hpp"
#include "io/model_config.hpp"
#include "model/step_model.hpp"

namespace sc = stepcast::calibrate;
namespace sm = stepcast::model;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

sm::Coefficients truth() {
  sm::Coefficients c;
  c.model = "gemma-4-26b-a4b";
  c.gpu = "NVIDIA H200";
  c.tier = "sdpa-auto/grouped";
  c.step[sm::kFixed] = {0.3, 0, true, ""};
  c.step[sm::kGemm] = {0.0045, 0, true, ""};
  c.step[sm::kAttention] = {0.009, 0, true, ""};
  c.step[sm::kAttentionMath] = {0.03, 0, true, ""};
  c.step[sm::kMaskPath] = {0.004, 0, true, ""};
  c.memory[sm::kMemFixed] = {3.0, 0, true, ""};
  c.memory[sm::kMemToken] = {700.0, 0, true, ""};
  c.memory[sm::kMemMask] = {2.0, 0, true, ""};
  c.memory[sm::kMemScore] = {2.0, 0, true, ""};
  return c;
}

// Random micro-batches like a planner's: 1-8 rows, lengths 64-16384, padded to the longest.
std::vector<sm::MicroBatch> batches(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> rows(1, 8);
  std::uniform_int_distribution<int64_t> len(64, 16384);
  std::vector<sm::MicroBatch> out(static_cast<size_t>(n));
  for (auto& b : out) {
    const int r = rows(rng);
    for (int i = 0; i < r; ++i) b.rows.push_back(len(rng));
    b.width = *std::max_element(b.rows.begin(), b.rows.end());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int n_records = argc > 1 ? std::atoi(argv[1]) : 1000;
  const long n_predictions = argc > 2 ? std::atol(argv[2]) : 5000000;
  const auto shape = stepcast::io::load_model("gemma-4-26b-a4b");
  const auto c = truth();
  const sm::StepModel model(shape, c);

  std::mt19937 rng(1);
  std::normal_distribution<double> noise(0.0, 0.005);
  std::vector<sc::Record> records;
  for (const auto& b : batches(n_records, 2)) {
    sc::Record r;
    r.model = c.model;
    r.gpu = c.gpu;
    r.tier = c.tier;
    r.rows = b.rows;
    r.width = b.width;
    r.step_s = model.step_s(b) * (1.0 + noise(rng));
    r.peak_gib = model.peak_gib(b) + 0.1 * noise(rng) * 20;
    r.line = static_cast<int64_t>(records.size()) + 1;
    records.push_back(r);
  }
  auto t0 = std::chrono::steady_clock::now();
  const auto report = sc::fit(shape, records, sc::FitOptions{});
  const double fit_s = seconds_since(t0);
  std::printf("calibrate: %d records fitted (selection + covariance) in %.3f s (bar: < 1 s); step RMS %.2f %%\n",
              n_records, fit_s, report.coefficients.step_rms_rel * 100);

  const auto pool = batches(4096, 3);
  double sink = 0;
  t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n_predictions; ++i) sink += model.step_s(pool[static_cast<size_t>(i) & 4095]);
  const double step_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n_predictions; ++i) {
    const auto& b = pool[static_cast<size_t>(i) & 4095];
    sink += model.step_s(b) + model.peak_gib(b);
  }
  const double both_s = seconds_since(t0);
  std::printf("predict: %.2f M step_s calls/s, %.2f M (step_s + peak_gib)/s on one core (bar: >= 1 M/s)  [%g]\n",
              static_cast<double>(n_predictions) / step_s / 1e6, static_cast<double>(n_predictions) / both_s / 1e6,
              sink > 0 ? 1.0 : 0.0);
  return 0;
}
