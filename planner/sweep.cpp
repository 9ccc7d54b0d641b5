#include "planner/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "model/errors.hpp"

namespace stepcast::planner {

namespace {

// A packed plan whose tokens per optimizer step (at full rows) is further than this from the
// baseline's changes the optimisation too much to be a like-for-like recommendation.
constexpr double kPackTolerance = 0.25;

std::vector<int64_t> or_default(const std::vector<int64_t>& values, int64_t fallback) {
  return values.empty() ? std::vector<int64_t>{fallback} : values;
}

// Mean real tokens per sample after truncation at max_length.
double mean_tokens(const Corpus& corpus, int64_t max_length) {
  if (corpus.size() == 0) return 0;
  int64_t total = 0;
  for (int32_t l : corpus.lengths) total += std::min<int64_t>(l, max_length);
  return static_cast<double>(total) / static_cast<double>(corpus.size());
}

}  // namespace

namespace {

// Sets c.accumulation so that c keeps the baseline's tokens per optimizer step (see sweep.hpp); false
// when it cannot (the configuration is skipped).
bool keep_tokens_per_step(SweepConfig& c, int64_t rows_per_step, double tokens_per_step) {
  const BatchingSpec& b = c.batching;
  if (round_up_width(b.max_length, b.pad_to_multiple_of) > INT32_MAX) return false;
  if (b.policy == Policy::padding_free && !batching_problems(b).empty()) return false;  // a row too wide
  if (b.policy == Policy::pack) {
    const double per_micro_batch = static_cast<double>(b.micro_batch * b.max_length);
    c.accumulation = std::max<int64_t>(1, std::llround(tokens_per_step / per_micro_batch));
    const double off = static_cast<double>(c.accumulation) * per_micro_batch / tokens_per_step - 1;
    return std::abs(off) <= kPackTolerance;
  }
  if (rows_per_step % b.micro_batch != 0) return false;  // padding-free: R samples per micro-batch, as padded
  c.accumulation = rows_per_step / b.micro_batch;
  return true;
}

}  // namespace

namespace {

// a * b, or just past kMaxSweepConfigurations when it would be beyond (no overflow for any list sizes).
int64_t capped_product(int64_t a, int64_t b) {
  return a > (kMaxSweepConfigurations + 1) / b ? kMaxSweepConfigurations + 1 : a * b;
}

}  // namespace

int64_t sweep_size(const SweepSpec& spec) {
  const auto count = [](const std::vector<int64_t>& v) { return std::max<int64_t>(1, static_cast<int64_t>(v.size())); };
  const auto count_of = [](const auto& v) { return std::max<int64_t>(1, static_cast<int64_t>(v.size())); };
  const int64_t per_policy =
      capped_product(capped_product(count(spec.micro_batches), count(spec.max_lengths)), count(spec.pad_to_multiples));
  int64_t total = 0;
  for (Policy policy : spec.policies) {
    int64_t n = per_policy;
    if (policy == Policy::sorted_buckets) n = capped_product(n, count(spec.bucket_sizes));
    if (policy == Policy::pack) n = capped_product(n, count_of(spec.packers));
    if (packs(policy)) n = capped_product(n, count_of(spec.pack_attentions));
    total += n;
    if (total > kMaxSweepConfigurations) return kMaxSweepConfigurations + 1;
  }
  return total;
}

std::vector<SweepConfig> sweep_configs(const Corpus& corpus, const BatchingSpec& baseline, const RunSpec& run,
                                       const SweepSpec& spec, int64_t& skipped) {
  skipped = 0;
  if (sweep_size(spec) > kMaxSweepConfigurations)
    throw InputError("sweep: more than " + std::to_string(kMaxSweepConfigurations) +
                     " configurations (policies x micro_batches x max_lengths x pad_to_multiples, x bucket_sizes for "
                     "sorted-buckets). Violated constraint: <= " + std::to_string(kMaxSweepConfigurations) +
                     "; shorten the sweep lists");
  const int64_t rows_per_step = baseline.micro_batch * run.accumulation;
  const double tokens_per_step = static_cast<double>(rows_per_step) * mean_tokens(corpus, baseline.max_length);
  const auto multiples = or_default(spec.pad_to_multiples, baseline.pad_to_multiple_of);
  std::vector<SweepConfig> configs;
  for (Policy policy : spec.policies) {
    const auto buckets = policy == Policy::sorted_buckets ? or_default(spec.bucket_sizes, baseline.bucket_size)
                                                          : std::vector<int64_t>{baseline.bucket_size};
    const auto packers = policy == Policy::pack && !spec.packers.empty() ? spec.packers
                                                                         : std::vector<Packer>{baseline.packer};
    const auto attentions = packs(policy) && !spec.pack_attentions.empty()
                                ? spec.pack_attentions
                                : std::vector<model::DocumentAttention>{baseline.pack_attention};
    for (int64_t rows : or_default(spec.micro_batches, baseline.micro_batch))
      for (int64_t max_length : or_default(spec.max_lengths, baseline.max_length))
        for (int64_t bucket : buckets)
          for (int64_t multiple : multiples)
            for (Packer packer : packers)
              for (model::DocumentAttention attention : attentions) {
                SweepConfig c{BatchingSpec{policy, rows, max_length, bucket, baseline.seed, multiple, packer, attention}, 1};
                if (keep_tokens_per_step(c, rows_per_step, tokens_per_step)) {
                  configs.push_back(c);
                } else {
                  ++skipped;
                }
              }
  }
  return configs;
}

namespace {

bool same_time(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

}  // namespace

bool ranks_before(const PlanResult& a, const PlanResult& b, int64_t baseline_truncated_tokens) {
  if (a.memory.verdict != b.memory.verdict) return a.memory.verdict < b.memory.verdict;  // fits, at risk, OOM
  if (a.fits_window != b.fits_window) return a.fits_window;
  const bool a_keeps = a.truncated.tokens <= baseline_truncated_tokens;
  const bool b_keeps = b.truncated.tokens <= baseline_truncated_tokens;
  if (a_keeps != b_keeps) return a_keeps;
  if (!a_keeps && a.truncated.tokens != b.truncated.tokens) return a.truncated.tokens < b.truncated.tokens;
  if (!same_time(a.wall_clock_s, b.wall_clock_s)) return a.wall_clock_s < b.wall_clock_s;
  return a.padding_fraction < b.padding_fraction;
}

std::string ranking_rule() {
  return "plans that fit in memory (at the peak's 90 % upper bound) first, then those at risk (they fit at the "
         "point estimate only), each with those that fit the window first; then those that keep every token the "
         "baseline keeps, "
         "then those that truncate more (fewest extra truncated tokens first); within each group the shortest wall "
         "clock first, then the least padding";
}

int64_t extra_truncated_tokens(const PlanResult& plan, int64_t baseline_truncated_tokens) {
  return std::max<int64_t>(0, plan.truncated.tokens - baseline_truncated_tokens);
}

namespace {

// Two plans are equivalent when their keys are equal and their wall clocks are the same_time. Packed rows
// hold other samples than padded ones, so a packed plan is only ever equivalent to one packed the same way
// (policy, packer, attention: e.g. a pad multiple that divides max_length changes nothing).
struct PlanKey {
  int packing;  // 0: padded; else 1 + the policy, packer and attention mode
  int64_t micro_batch, accumulation, max_length, processed_tokens, distinct_shapes;
  bool operator==(const PlanKey&) const = default;
};

PlanKey plan_key(const PlanResult& p) {
  const BatchingSpec& b = p.batching;
  const int packing = packs(b.policy) ? 1 + static_cast<int>(b.policy) * 16 + static_cast<int>(b.packer) * 4 +
                                            static_cast<int>(b.pack_attention)
                                      : 0;
  return {packing, p.batching.micro_batch, p.accumulation, p.batching.max_length,
          p.processed_tokens, p.distinct_shapes};
}

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = std::hash<int>{}(k.packing);
    for (int64_t v : {k.micro_batch, k.accumulation, k.max_length, k.processed_tokens, k.distinct_shapes})
      h = h * 1'000'003 ^ std::hash<int64_t>{}(v);  // a multiplier prime, as in CPython's tuple hash
    return h;
  }
};

// True when a plan of the same key with a wall clock within same_time of `t` is in `kept`; only the
// nearest wall clock on either side can be within it.
bool near_kept(const std::set<double>& kept, double t) {
  const auto above = kept.lower_bound(t);
  if (above != kept.end() && same_time(*above, t)) return true;
  return above != kept.begin() && same_time(*std::prev(above), t);
}

}  // namespace

void rank_plans(std::vector<PlanResult>& plans, int64_t baseline_truncated_tokens) {
  std::stable_sort(plans.begin(), plans.end(), [&](const PlanResult& a, const PlanResult& b) {
    return ranks_before(a, b, baseline_truncated_tokens);
  });
  // A hash on the exact key, then an ordered search on wall clock: O(n log n) where comparing every plan
  // with every kept one was O(n^2) (minutes for 350 k configurations; docs/planner.md "Bounded resources").
  std::unordered_map<PlanKey, std::set<double>, PlanKeyHash> kept_times;
  std::vector<PlanResult> kept;
  for (auto& p : plans) {
    std::set<double>& times = kept_times[plan_key(p)];
    if (near_kept(times, p.wall_clock_s)) continue;
    times.insert(p.wall_clock_s);
    kept.push_back(std::move(p));
  }
  plans = std::move(kept);
}

std::vector<PlanResult> simulate_all(const Corpus& corpus, const std::vector<SweepConfig>& configs, const RunSpec& run,
                                     const model::StepPredictor& predictor, int threads, const Progress& progress) {
  std::vector<PlanResult> results(configs.size());
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{0};
  const auto total = static_cast<int64_t>(configs.size());
  auto work = [&](bool report) {
    for (size_t i = next++; i < configs.size(); i = next++) {
      RunSpec r = run;
      r.accumulation = configs[i].accumulation;
      results[i] = simulate(corpus, configs[i].batching, r, predictor);
      const int64_t d = ++done;
      if (report && progress) progress(d, total);
    }
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(work, false);
  work(true);
  for (auto& h : helpers) h.join();
  if (progress) progress(total, total);
  return results;
}

SweepResult sweep(const Corpus& corpus, const BatchingSpec& baseline, const RunSpec& run, const SweepSpec& spec,
                  const model::StepPredictor& predictor, const Progress& progress) {
  SweepResult result;
  result.baseline = simulate(corpus, baseline, run, predictor);
  const auto configs = sweep_configs(corpus, baseline, run, spec, result.skipped);
  auto plans = simulate_all(corpus, configs, run, predictor, std::max(1, spec.threads), progress);
  result.configurations = static_cast<int64_t>(plans.size());
  const auto out_of_memory = [](const PlanResult& p) { return p.memory.verdict == MemoryVerdict::out_of_memory; };
  result.out_of_memory = std::count_if(plans.begin(), plans.end(), out_of_memory);
  std::erase_if(plans, out_of_memory);
  rank_plans(plans, result.baseline.truncated.tokens);
  if (static_cast<int64_t>(plans.size()) > spec.top) plans.resize(static_cast<size_t>(spec.top));
  result.recommendations = std::move(plans);
  return result;
}

}  // namespace stepcast::planner
