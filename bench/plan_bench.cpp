// Planner benchmarks (printed, not tests), measured side by side on the same machine:
//  1. one policy over a 1,000,000-sample corpus file (read + truncate + batch + predict every
//     micro-batch + track first-seen shapes), against `LC_ALL=C sort -n` of the same file;
//  2. the first-seen shape tracking alone: the flat ShapeSet against std::set of pairs, on the keys of
//     the 1M-sample run and of the shipped 20,000-sample corpus;
//  3. a sweep of 1,000 configurations over the shipped 20,000-sample seed corpus on 2 threads.
// Usage: plan_bench [--coefficients C.yaml] [--samples N]
// With --coefficients the calibrated StepModel predicts; otherwise the sm_120 study's width-quadratic fit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bench/timing.hpp"
#include "io/coefficients_io.hpp"
#include "io/corpus_io.hpp"
#include "io/model_config.hpp"
#include "model/step_model.hpp"
#include "planner/simulate.hpp"
#include "planner/sweep.hpp"
#include "planner/timeline.hpp"
#include "planner/width_quadratic.hpp"

using namespace stepcast;

namespace {

using bench::best_of;
using bench::seconds;

// The sm_120 study's fit (scenarios/seed-sm120.yaml).
planner::WidthQuadratic seed_fit() { return {3.436e-4, 4.4255e-8, 0.0, 1.094, 49.49, 8.192e-4}; }

std::string write_corpus(int64_t samples) {
  const std::string path = "/tmp/stepcast_plan_bench_" + std::to_string(samples) + ".txt";
  planner::SyntheticSpec spec;
  spec.samples = samples;
  spec.seed = 7;
  spec.min_length = 64;
  spec.max_length = 65536;
  spec.components = {{1.0, 2000.0, 0.81}};
  const planner::Corpus c = planner::generate_synthetic(spec);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::exit(1);
  for (int32_t l : c.lengths) std::fprintf(f, "%d\n", l);
  std::fclose(f);
  return path;
}

// The shape keys of a schedule's micro-batches, in run order.
std::vector<model::ShapeKey> shape_keys(const planner::Schedule& s) {
  std::vector<model::ShapeKey> keys;
  keys.reserve(static_cast<size_t>(s.num_batches()));
  for (int64_t b = 0; b < s.num_batches(); ++b) {
    const auto i = static_cast<size_t>(b);
    keys.push_back({s.batch_row_begin[i + 1] - s.batch_row_begin[i], s.batch_width[i]});
  }
  return keys;
}

void compare_shape_sets(const char* what, const std::vector<model::ShapeKey>& keys) {
  int64_t flat_n = 0, tree_n = 0;
  const double flat_s = best_of(3, [&] {
    planner::ShapeSet set;
    for (const auto& k : keys) set.insert(k);
    flat_n = set.size();
  });
  const double tree_s = best_of(3, [&] {
    std::set<std::pair<int64_t, int64_t>> set;
    for (const auto& k : keys) set.insert({k.rows, k.width});
    tree_n = static_cast<int64_t>(set.size());
  });
  std::printf("   %-34s %zu micro-batches, %lld shapes: ShapeSet %.4f s, std::set %.4f s (%lld)\n", what, keys.size(),
              static_cast<long long>(flat_n), flat_s, tree_s, static_cast<long long>(tree_n));
}

}  // namespace

int main(int argc, char** argv) {
  std::string coefficients;
  int64_t samples = 1'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--coefficients") coefficients = argv[i + 1];
    if (flag == "--samples") samples = std::atoll(argv[i + 1]);
  }
  std::unique_ptr<model::StepPredictor> predictor;
  std::string name = "width-quadratic (seed sm_120 fit)";
  if (!coefficients.empty()) {
    const auto c = io::load_coefficients(coefficients);
    predictor = std::make_unique<model::StepModel>(io::load_model(c.model), c);
    name = "StepModel (" + coefficients + ")";
  } else {
    predictor = std::make_unique<planner::WidthQuadraticPredictor>(seed_fit());
  }
  std::printf("predictor: %s\n", name.c_str());

  const std::string file = write_corpus(samples);
  const std::string sort_cmd = "LC_ALL=C sort -n " + file + " > /dev/null";
  const double sort_s = best_of(3, [&] {
    if (std::system(sort_cmd.c_str()) != 0) std::exit(1);
  });
  planner::RunSpec run;
  run.accumulation = 8;
  run.gpu_memory_gib = 95;
  const planner::BatchingSpec one{planner::Policy::pad_to_longest, 2, 16384, 64, 1, 1};
  planner::PlanResult plan;
  double read_s = 0;
  const double plan_s = best_of(3, [&] {
    planner::Corpus corpus;
    read_s = seconds([&] { corpus = io::load_corpus_file(file); });
    plan = planner::simulate(corpus, one, run, *predictor);
  });
  std::printf("1. %lld samples (%s)\n", static_cast<long long>(samples), file.c_str());
  std::printf("   LC_ALL=C sort -n            %.3f s (best of 3)\n", sort_s);
  std::printf("   read + plan pad-to-longest  %.3f s (best of 3; read %.3f s), %lld micro-batches, padding %.2f %%, "
              "%lld shapes\n",
              plan_s, read_s, static_cast<long long>(plan.micro_batches), 100 * plan.padding_fraction,
              static_cast<long long>(plan.distinct_shapes));
  const planner::Corpus corpus = io::load_corpus_file(file);
  for (auto policy : {planner::Policy::pad_to_longest, planner::Policy::bucket_to_pair, planner::Policy::sorted_buckets,
                      planner::Policy::pack})
    for (int64_t multiple : {1, 64}) {
      planner::BatchingSpec b = one;
      b.policy = policy;
      b.pad_to_multiple_of = multiple;
      const double s = best_of(3, [&] { plan = planner::simulate(corpus, b, run, *predictor); });
      std::printf("   plan %-16s m=%-3lld  %.3f s (corpus already read), padding %.3f %%, %lld shapes\n",
                  planner::policy_name(policy).c_str(), static_cast<long long>(multiple), s, 100 * plan.padding_fraction,
                  static_cast<long long>(plan.distinct_shapes));
    }
  // Packing: each packer, and each row priced through its documents (varlen) or its width (block-mask).
  for (auto policy : {planner::Policy::pack, planner::Policy::padding_free})
    for (auto packer : {planner::Packer::next_fit, planner::Packer::ffd, planner::Packer::multipack})
      for (auto attention : {model::DocumentAttention::block_mask, model::DocumentAttention::varlen}) {
        if (policy == planner::Policy::padding_free && packer != planner::Packer::next_fit) continue;
        planner::BatchingSpec b = one;
        b.policy = policy;
        b.packer = packer;
        b.pack_attention = attention;
        const double s = best_of(3, [&] { plan = planner::simulate(corpus, b, run, *predictor); });
        std::printf("   plan %-12s %-9s %-10s %.3f s (corpus already read), padding %.3f %%, %lld micro-batches\n",
                    planner::policy_name(policy).c_str(), planner::packer_name(packer).c_str(),
                    planner::pack_attention_name(attention).c_str(), s, 100 * plan.padding_fraction,
                    static_cast<long long>(plan.micro_batches));
      }
  std::printf("   ratio plan / sort: %.2f (bar: <= 1)\n", plan_s / sort_s);

  const planner::Corpus seed = io::load_corpus_file(STEPCAST_SCENARIOS "/corpora/seed-like-20k.csv");
  std::printf("2. first-seen shape tracking alone (best of 3)\n");
  compare_shape_sets("1M samples, pad-to-longest R2:", shape_keys(planner::build_schedule(corpus, one)));
  planner::BatchingSpec r1 = one;
  r1.micro_batch = 1;
  compare_shape_sets("1M samples, pad-to-longest R1:", shape_keys(planner::build_schedule(corpus, r1)));
  compare_shape_sets("shipped 20k corpus, R2:", shape_keys(planner::build_schedule(seed, one)));
  std::vector<planner::SweepConfig> configs;
  for (int i = 0; configs.size() < 1000; ++i) {
    const auto policy = static_cast<planner::Policy>(i % 5);
    const int64_t rows = int64_t{1} << (i / 5 % 4);
    const int64_t max_length = 4096 + 512 * (i / 20 % 50);
    configs.push_back({{policy, rows, max_length, int64_t{2} << (i % 9), 1, 1}, std::max<int64_t>(1, 16 / rows)});
  }
  double sweep_s = 0;
  for (int threads : {1, 2}) {
    sweep_s = seconds([&] { planner::simulate_all(seed, configs, run, *predictor, threads, {}); });
    std::printf("3. sweep of %zu configurations over %lld samples, %d thread(s): %.3f s (bar: < 10 s on 2 cores)\n",
                configs.size(), static_cast<long long>(seed.size()), threads, sweep_s);
  }
  return 0;
}
