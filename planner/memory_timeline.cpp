#include "planner/memory_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace stepcast::planner {

namespace {

constexpr double kGiB = 1073741824.0;

int64_t bytes(double gib) { return static_cast<int64_t>(std::llround(std::max(0.0, gib) * kGiB)); }

std::string fixed_text(double gib) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", gib);
  return buf;
}

}  // namespace

MemoryTimeline::MemoryTimeline(const model::RunMemory& run, int64_t accumulation, int64_t epochs, double usable_gib)
    : run_(run), accumulation_(std::max<int64_t>(1, accumulation)), epochs_(std::max<int64_t>(1, epochs)),
      usable_gib_(usable_gib) {
  reserved_ = reserved_peak_ = run_.itemised ? run_.state_gib(false) + run_.persistent_rounding_gib : 0.0;
}

void MemoryTimeline::consider(const Candidate& c, Candidate& best) const {
  if (!best.set || c.allocated_gib > best.allocated_gib) {
    best = c;
    best.set = true;
  }
}

// The default allocator keeps what earlier, smaller working sets left cached when a larger one needs new
// segments: a share of the previous largest working set (calibrated; 0 when not).
void MemoryTimeline::reserve(double state_gib, double working_set_gib) {
  double need = state_gib + run_.persistent_rounding_gib + working_set_gib;
  if (working_set_gib > largest_working_set_) {
    need += run_.fragmentation_share * largest_working_set_;
    largest_working_set_ = working_set_gib;
  }
  if (need <= reserved_) return;
  if (usable_gib_ > 0 && need > usable_gib_) {
    ++releases_;  // cudaMalloc fails: the allocator frees its cached blocks and retries
    need = std::max(usable_gib_, state_gib + run_.persistent_rounding_gib + working_set_gib);
  }
  reserved_ = need;
  reserved_peak_ = std::max(reserved_peak_, reserved_);
}

double MemoryTimeline::add(const model::MicroBatch& batch, const model::MemoryParts& parts, bool first_seen,
                           double extra_gib) {
  Candidate c;
  c.after_optimizer_step = steps_ > 0;
  c.first_seen = first_seen;
  c.micro_batch = index_;
  c.rows = batch.num_rows();
  c.width = batch.width;
  c.parts = parts;
  c.extra_gib = extra_gib;
  const model::RunPosition at{true, c.after_optimizer_step, first_seen};
  c.allocated_gib = (run_.itemised ? run_.micro_batch_gib(parts, at) : parts.step_gib) + extra_gib;
  consider(c, first_pass_);
  if (epochs_ > 1) {  // the same micro-batch in a later pass: AdamW's states alive, the shape already met
    Candidate later = c;
    later.later_epoch = true;
    later.after_optimizer_step = true;
    later.first_seen = false;
    later.allocated_gib = (run_.itemised ? run_.micro_batch_gib(parts, {true, true, false}) : parts.step_gib) + extra_gib;
    consider(later, later_pass_);
  }
  if (run_.itemised) {
    const double state = run_.state_gib(c.after_optimizer_step);
    reserve(state, c.allocated_gib - state);
  }
  ++index_;
  return c.allocated_gib;
}

double MemoryTimeline::optimizer_step(double extra_gib, double transient_share) {
  if (!run_.itemised) {
    ++steps_;
    return 0;
  }
  Candidate c;
  c.at_optimizer_step = true;
  c.after_optimizer_step = true;
  c.micro_batch = index_ - 1;
  c.extra_gib = extra_gib;
  c.transient_share = transient_share;
  c.allocated_gib = run_.optimizer_step_gib(transient_share) + extra_gib;
  consider(c, first_pass_);
  reserve(run_.state_gib(true) + extra_gib, transient_share * run_.optimizer_transient_gib);
  ++steps_;
  return c.allocated_gib;
}

double MemoryTimeline::peak_gib() const {
  if (!later_pass_.set) return first_pass_.allocated_gib;
  return std::max(first_pass_.allocated_gib, later_pass_.allocated_gib);
}

MemoryPeak MemoryTimeline::peak() const {
  const Candidate& c = later_pass_.set && later_pass_.allocated_gib > first_pass_.allocated_gib ? later_pass_ : first_pass_;
  MemoryPeak p;
  if (!c.set) return p;
  p.allocated_gib = c.allocated_gib;
  p.at_optimizer_step = c.at_optimizer_step;
  p.later_epoch = c.later_epoch;
  p.micro_batch = c.micro_batch;
  p.step = c.micro_batch >= 0 ? c.micro_batch / accumulation_ : 0;
  p.rows = c.at_optimizer_step ? 0 : c.rows;
  p.width = c.at_optimizer_step ? 0 : c.width;
  auto& live = p.live;
  if (!run_.itemised) {
    live.push_back({"micro_batch_peak", bytes(c.parts.step_gib), "step"});
  } else {
    live.push_back({"weights", bytes(run_.weights_gib), "run"});
    if (run_.trainable_gib > 0) live.push_back({"lora_adapters_fp32", bytes(run_.trainable_gib), "run"});
    const model::RunPosition at{true, c.after_optimizer_step, c.first_seen};
    const double step_bytes = model::RunMemory::step_bytes_gib(c.parts, at);
    const double working = c.at_optimizer_step ? 0.0 : run_.working_set_gib(c.parts, at);
    const bool floor = !c.at_optimizer_step && working > step_bytes;  // the embedding's backward sets the peak
    live.push_back({"gradients", bytes(run_.gradients_gib), "window"});
    if (c.after_optimizer_step) live.push_back({"adamw_states", bytes(run_.optimizer_state_gib), "run"});
    live.push_back({"fixed_slack_workspaces", bytes(run_.fixed_gib), "run"});
    if (c.at_optimizer_step) {
      live.push_back({"optimizer_temporaries", bytes(c.transient_share * run_.optimizer_transient_gib), "optimizer_step"});
    } else {
      if (floor) {
        live.push_back({"embedding_backward_fp32", bytes(working), "step"});
      } else {
        live.push_back({"activations_logits_masks", bytes(c.parts.step_gib), "step"});
        if (c.parts.run_gib > 0) live.push_back({"run_only_bytes", bytes(c.parts.run_gib), "step"});
        if (c.first_seen && c.parts.first_seen_gib > 0)
          live.push_back({"first_seen_shape_bytes", bytes(c.parts.first_seen_gib), "step"});
      }
    }
  }
  if (c.extra_gib != 0)
    live.push_back({"parallel_strategy_change", bytes(std::abs(c.extra_gib)) * (c.extra_gib < 0 ? -1 : 1), "run"});
  return p;
}

std::string verdict_name(MemoryVerdict v) {
  switch (v) {
    case MemoryVerdict::fits: return "fits";
    case MemoryVerdict::at_risk: return "at_risk";
    case MemoryVerdict::out_of_memory: return "out_of_memory";
  }
  return "fits";
}

MemoryJudgement judge_memory(double peak_gib, double reserved_peak_gib, int64_t cache_releases,
                             const model::RunMemory& run, double limit_gib) {
  MemoryJudgement j;
  j.limit_gib = limit_gib;
  j.itemised = run.itemised;
  j.fragmentation_known = run.fragmentation_known;
  j.context_known = run.context_known;
  j.usable_gib = limit_gib - (run.context_known ? run.context_gib : 0.0);
  j.need_gib = peak_gib + (run.itemised ? run.persistent_rounding_gib : 0.0);
  j.need_high_gib = j.need_gib;
  if (run.interval) {
    j.peak_low_gib = peak_gib * run.interval->low;
    j.peak_high_gib = peak_gib * run.interval->high;
    j.need_high_gib = std::max(j.need_gib, j.need_gib + *j.peak_high_gib - peak_gib);
  }
  j.margin_gib = j.usable_gib - j.need_high_gib;
  if (limit_gib <= 0) return j;  // no limit: nothing to judge
  if (j.need_gib > j.usable_gib) {
    j.verdict = MemoryVerdict::out_of_memory;
    return j;
  }
  // The most consequential first (the headline shows it): a reserved peak past the card is how a measured run with
  // 12.6 GiB of allocated margin ran out of memory (Gemma-7B on an H100, docs/planner.md, "Memory").
  if (cache_releases > 0 || reserved_peak_gib > j.usable_gib)
    j.risks.push_back("the reserved memory reaches what the card gives: the allocator frees its cache and retries (" +
                      std::to_string(cache_releases) + " times); fragmentation decides the rest");
  if (run.interval && j.need_high_gib > j.usable_gib)
    j.risks.push_back("fits at the point estimate only: the 90 % upper bound needs " + fixed_text(j.need_high_gib) +
                      " GiB of " + fixed_text(j.usable_gib) + " GiB");
  if (!run.interval) j.risks.push_back("no measured whole-run peak error for this predictor (docs/method.md, \"An interval on the peak\")");
  if (!run.context_known) j.risks.push_back("the CUDA context is not measured: judged against the whole card");
  j.verdict = j.risks.empty() ? MemoryVerdict::fits : MemoryVerdict::at_risk;
  return j;
}

}  // namespace stepcast::planner
