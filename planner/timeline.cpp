#include "planner/timeline.hpp"

#include <bit>
#include <stdexcept>

namespace stepcast::planner {

namespace {

// No real key: rows and width are both below 2^32, so the all-ones word never occurs.
constexpr uint64_t kEmpty = ~uint64_t{0};

uint64_t pack(model::ShapeKey key) {
  return (static_cast<uint64_t>(key.rows) << 32) ^ static_cast<uint64_t>(key.width) ^
         (static_cast<uint64_t>(key.graph) << 58);  // ids 0..31 stay below the all-ones word
}

// Fibonacci hashing: the high bits of key * 2^64/phi spread neighbouring widths over the table.
size_t slot_of(uint64_t key, size_t mask) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask; }

}  // namespace

void ShapeSet::grow() {
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, kEmpty);
  const size_t mask = slots_.size() - 1;
  for (uint64_t k : old) {
    if (k == kEmpty) continue;
    size_t i = slot_of(k, mask);
    while (slots_[i] != kEmpty) i = (i + 1) & mask;
    slots_[i] = k;
  }
}

bool ShapeSet::insert(model::ShapeKey key) {
  if (static_cast<size_t>(2 * (size_ + 1)) > slots_.size()) grow();  // load factor <= 1/2
  const uint64_t k = pack(key);
  const size_t mask = slots_.size() - 1;
  for (size_t i = slot_of(k, mask);; i = (i + 1) & mask) {
    if (slots_[i] == k) return false;
    if (slots_[i] == kEmpty) {
      slots_[i] = k;
      ++size_;
      return true;
    }
  }
}

BatchCharge RunCharger::next(const model::MicroBatch& batch) {
  BatchCharge c;
  const model::StepSides sides = predictor_.step_sides(batch);
  c.step_s = sides.step_s;
  c.host_bound = sides.host_bound();
  c.new_shape = shapes_.insert(model::shape_key(batch));
  // Each graph the shape needs is built once per process (model/batch.hpp, first_seen_graphs): a shape met
  // before under another signature (padded after unpadded) still builds the new one.
  const uint32_t graphs = predictor_.first_seen_graphs(batch);
  int fresh = 0;
  for (uint32_t g = graphs; g != 0; g &= g - 1)
    fresh += graphs_.insert({batch.num_rows(), batch.width, std::countr_zero(g)}) ? 1 : 0;
  if (fresh > 0) c.first_seen_s = predictor_.first_seen_s(batch) * fresh / std::popcount(graphs);
  if (compiles_) c.compile_s = compiles_->charge(batch);
  if (!started_) {
    c.run_start_s = predictor_.run_start_s();
    started_ = true;
  }
  return c;
}

OptimizerStep resolve_optimizer_step(std::optional<double> given, const model::StepPredictor& predictor) {
  if (given) return {*given, OptimizerSource::given};
  return {predictor.optimizer_step_s(), OptimizerSource::predictor};
}

Timeline predict_timeline(const std::vector<model::MicroBatch>& batches, int64_t accumulation,
                          const model::StepPredictor& predictor, std::optional<double> optimizer_step_s) {
  if (accumulation < 1) throw std::invalid_argument("predict_timeline: accumulation must be >= 1");
  Timeline t;
  t.optimizer = resolve_optimizer_step(optimizer_step_s, predictor);
  t.batches.reserve(batches.size());
  RunCharger charger(predictor);
  const auto n = static_cast<int64_t>(batches.size());
  for (int64_t i = 0; i < n; ++i) {
    const model::MicroBatch& batch = batches[static_cast<size_t>(i)];
    const BatchCharge c = charger.next(batch);
    TimelineEntry e;
    e.rows = batch.num_rows();
    e.width = batch.width;
    e.step_s = c.step_s;
    e.first_seen_s = c.first_seen_s;
    e.run_start_s = c.run_start_s;
    e.first_seen = c.new_shape;
    e.host_bound = c.host_bound;
    t.host_bound += c.host_bound ? 1 : 0;
    e.optimizer_step = i / accumulation;
    if ((i + 1) % accumulation == 0 || i + 1 == n) e.optimizer_s = t.optimizer.step_s;
    t.compute_s += e.step_s;
    t.first_seen_s += e.first_seen_s;
    t.run_start_s += e.run_start_s;
    t.optimizer_s += e.optimizer_s;
    t.wall_clock_s += e.step_s + e.first_seen_s + e.run_start_s + e.optimizer_s;
    e.elapsed_s = t.wall_clock_s;
    t.batches.push_back(e);
  }
  t.distinct_shapes = charger.distinct_shapes();
  t.steps = optimizer_steps(n, accumulation);
  return t;
}

}  // namespace stepcast::planner
