// `stepcast plan` for people: the headline, the scenario, the baseline's breakdown, then the ranked plans
// in groups with the ranking rule.
#include <cstdio>
#include <ostream>

#include "report/format.hpp"
#include "report/plan_output.hpp"

namespace stepcast::report {
namespace {

void print_plan_line(std::ostream& out, const std::string& rank, const planner::PlanResult& p,
                     const planner::PlanResult& baseline, bool roots) {
  char buf[512];
  const std::string bucket = p.batching.policy == planner::Policy::sorted_buckets ? std::to_string(p.batching.bucket_size) : "-";
  const std::string vs_base = &p == &baseline ? std::string("-") : change_vs_baseline(saving_vs_baseline(p, baseline));
  std::snprintf(buf, sizeof buf, "%-8s %-15s %4lld %4lld %8lld %6s %4lld %7s %9s %9s %8s %8s %9s %12s", rank.c_str(),
                planner::policy_name(p.batching.policy).c_str(), static_cast<long long>(p.batching.micro_batch),
                static_cast<long long>(p.accumulation), static_cast<long long>(p.batching.max_length), bucket.c_str(),
                static_cast<long long>(p.batching.pad_to_multiple_of), with_commas(p.distinct_shapes).c_str(),
                with_commas(p.steps).c_str(), duration(p.wall_clock_s).c_str(), vs_base.c_str(),
                percent(p.padding_fraction, 2).c_str(),
                (fixed(p.peak_gib, 1) + (p.memory.verdict == planner::MemoryVerdict::out_of_memory ? "!" : "")).c_str(),
                with_commas(p.truncated.tokens).c_str());
  out << buf;
  if (roots) out << "  " << (p.roots_per_window < 0 ? std::string("-") : fixed(p.roots_per_window, 1));
  out << "  " << fits_text(p) << "\n";
}

void print_header(std::ostream& out, const PlanOutput& o) {
  const planner::Corpus& corpus = *o.corpus;
  out << "stepcast plan: " << o.scenario << "\n";
  out << "  gpu        " << (o.gpu_name.empty() ? "" : o.gpu_name + ", ") << fixed(o.gpu_memory_gib, 1) << " GiB"
      << (o.memory_cap_gib > 0 ? ", cap " + fixed(o.memory_cap_gib, 1) + " GiB" : "") << "; window "
      << (o.window_hours > 0 ? fixed(o.window_hours, 1) + " h" : "none") << "\n";
  out << "  corpus     " << with_commas(corpus.size()) << " samples, " << with_commas(corpus.total_tokens())
      << " tokens, longest " << with_commas(corpus.max_length())
      << (corpus.has_roots() ? ", " + with_commas(corpus.num_roots) + " roots" : "") << " (" << o.corpus_source << ")\n";
  out << "  predictor  " << o.predictor << "\n\n";
}

// The run's memory: where its peak is, what is live then, reserved and the margin, and why it is at risk.
void print_memory(std::ostream& out, const planner::PlanResult& p) {
  out << "  memory: " << memory_text(p) << " -> " << fits_text(p) << "\n";
  out << "  live at the peak: " << live_text(p.memory_peak) << "\n";
  for (const auto& risk : p.memory.risks) out << "  at risk: " << risk << "\n";
}

void print_baseline(std::ostream& out, const PlanOutput& o) {
  const auto& b = o.result.baseline;
  const std::string verdict = b.memory.verdict == planner::MemoryVerdict::out_of_memory ? "if it ran: it runs OUT OF MEMORY"
                              : b.fits_window ? (o.window_hours > 0 ? "fits the window" : "no window set")
                                              : "DOES NOT fit the window";
  out << "baseline: " << plan_label(b) << " -> " << duration(b.wall_clock_s) << " (" << verdict << "), padding "
      << percent(b.padding_fraction, 2) << ", peak " << fixed(b.peak_gib, 1) << " GiB of " << fixed(b.memory.usable_gib, 1)
      << " usable\n";
  out << "  " << with_commas(b.steps) << " optimizer steps of " << b.accumulation << " micro-batches; compute "
      << duration(b.compute_s) << ", optimizer " << duration(b.optimizer_s) << ", checkpoints " << duration(b.checkpoint_s)
      << ", evaluation " << duration(b.eval_s) << ", start-up " << fixed(b.startup_s, 0) << " s\n";
  if (o.cold_start)
    out << "  cold machine: " << b.compile_classes << " kernel classes x " << o.compile_head_sizes
        << " head size(s) compile, " << fixed(b.compile_s, 1) << " s (one-off per machine; docs/host.md)\n";
  out << "  " << with_commas(b.distinct_shapes) << " distinct shapes (rows x width, pad_to_multiple_of "
      << b.batching.pad_to_multiple_of << "): first-seen " << fixed(b.first_seen_s, 1) << " s, run start "
      << fixed(b.run_start_s, 1) << " s; optimizer step " << fixed(b.optimizer.step_s, 4) << " s ("
      << optimizer_source_text(b, o.optimizer_step_source) << ")\n";
  if (b.host_bound_micro_batches > 0)
    out << "  host-bound: " << with_commas(b.host_bound_micro_batches) << " of " << with_commas(b.micro_batches)
        << " micro-batches (the host issues their kernels slower than the device runs them: fewer, fuller "
           "micro-batches pay; docs/host.md)\n";
  out << "  truncated at " << b.batching.max_length << ": " << with_commas(b.truncated.samples) << " samples, "
      << with_commas(b.truncated.tokens) << " tokens\n";
  print_memory(out, b);
  if (b.oom)
    out << "  OUT OF MEMORY: micro-batch " << with_commas(b.oom->micro_batch) << " (" << b.oom->rows << " x "
        << b.oom->width << ", " << fixed(b.oom->peak_gib, 1) << " GiB > " << fixed(b.oom->limit_gib, 1)
        << " GiB) at optimizer step " << with_commas(b.oom->step) << "\n";
}

void print_table(std::ostream& out, const PlanOutput& o) {
  const auto& r = o.result;
  const bool roots = o.corpus->has_roots();
  char head[512];
  std::snprintf(head, sizeof head, "%-8s %-15s %4s %4s %8s %6s %4s %7s %9s %9s %8s %8s %9s %12s", "rank", "policy", "R",
                "acc", "max_len", "bucket", "pad", "shapes", "steps", "wall", "vs base", "padding", "peak GiB", "trunc tok");
  out << head << (roots ? "  roots/win" : "") << "  fits\n";
  print_plan_line(out, "baseline", r.baseline, r.baseline, roots);
  std::string group;
  for (size_t i = 0; i < r.recommendations.size(); ++i) {
    const auto& p = r.recommendations[i];
    const std::string title = group_title(p, r.baseline);
    if (title != group) out << "-- " << (group = title) << ":\n";
    print_plan_line(out, std::to_string(i + 1), p, r.baseline, roots);
  }
}

// One line per packed plan shown: samples and tokens per optimizer step against the baseline's, and the
// warning when documents attend to each other.
void print_packing_notes(std::ostream& out, const PlanOutput& o) {
  const auto& r = o.result;
  const std::string base = packing_note(r.baseline, r.baseline);
  if (!base.empty()) out << "packing: baseline " << base << "\n";
  for (size_t i = 0; i < r.recommendations.size(); ++i) {
    const std::string note = packing_note(r.recommendations[i], r.baseline);
    if (!note.empty()) out << "packing: " << i + 1 << ". " << note << "\n";
  }
}

}  // namespace

void print_plan_text(std::ostream& out, const PlanOutput& o) {
  const auto& r = o.result;
  // The verdict first, whatever answered it; a transferred predictor says so on the next line.
  out << headline(o) << "\n";
  if (!o.transfer.empty()) out << o.transfer << "\n";
  print_header(out, o);
  if (o.parallel) {
    print_parallel_text(out, *o.parallel);
    out << "\none GPU with the same micro-batch and accumulation, for comparison ("
        << with_commas(o.result.baseline.batching.micro_batch * o.result.baseline.accumulation)
        << " rows per optimizer step):\n";
  }
  print_baseline(out, o);
  if (r.configurations == 0) {
    out << "\nno sweep (no configurations; --no-sweep or an empty sweep.policies): the baseline alone, "
        << fixed(o.elapsed_s, 2) << " s\n";
  } else {
    out << "\nrecommendations (" << r.recommendations.size() << " best of " << r.configurations << " simulated; "
        << r.out_of_memory << " out of memory; " << r.skipped << " skipped: cannot keep tokens per step; "
        << fixed(o.elapsed_s, 2) << " s)\n";
    out << "ranked: " << planner::ranking_rule() << "\n";
  }
  print_table(out, o);
  print_packing_notes(out, o);
  out << "labels: " << plan_label_legend()
      << "; fits: yes (at the peak's 90 % upper bound), at risk (at the point estimate only), OOM (out of memory) or "
         "late (misses the window)\n";
}

}  // namespace stepcast::report
