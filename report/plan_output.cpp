// What every form of `stepcast plan`'s output shares: the headline, the checks, the groups and the labels.
#include "report/plan_output.hpp"

#include "report/format.hpp"

namespace stepcast::report {
namespace {

std::string out_of_memory_text(const planner::PlanResult& p) {
  if (!p.oom)
    return "peaks at " + fixed(p.peak_gib, 1) + " GiB > " + fixed(p.memory.usable_gib, 1) + " GiB usable";
  const auto& m = *p.oom;
  return "runs out of memory at micro-batch " + with_commas(m.micro_batch) + ", optimizer step " + with_commas(m.step) +
         " (" + std::to_string(m.rows) + " x " + std::to_string(m.width) + ": " + fixed(m.peak_gib, 1) + " GiB > " +
         fixed(m.limit_gib, 1) + " GiB usable)";
}

std::string best_plan_text(const PlanOutput& o) {
  const auto& r = o.result;
  if (r.recommendations.empty()) return r.configurations > 0 ? "; no swept plan fits in memory" : "";
  const auto& best = r.recommendations.front();
  const bool risky = best.memory.verdict == planner::MemoryVerdict::at_risk;
  return std::string(risky ? "; best plan, AT RISK (" + best.memory.risks.front() + "): 1. "
                           : "; best plan that fits in memory: 1. ") +
         plan_label(best) + ", " + duration(best.wall_clock_s) + " (" + group_title(best, r.baseline) + ")";
}

// "peak 107.0 GiB (90 %: 104.9-109.1 GiB) of 139.3 GiB usable, margin 30.2 GiB"
std::string peak_and_margin_text(const planner::PlanResult& p) {
  const auto& m = p.memory;
  std::string text = "peak " + fixed(p.peak_gib, 1) + " GiB";
  if (m.peak_low_gib) text += " (90 %: " + fixed(*m.peak_low_gib, 1) + "-" + fixed(*m.peak_high_gib, 1) + " GiB)";
  return text + " of " + fixed(m.usable_gib, 1) + " GiB usable, margin " + fixed(m.margin_gib, 1) + " GiB";
}

}  // namespace

bool baseline_fits(const PlanOutput& o) {
  if (o.parallel) return o.parallel->baseline.fits_memory && o.parallel->baseline.fits_window;
  return o.result.baseline.fits_memory && o.result.baseline.fits_window;
}

std::string wall_clock_text(const PlanOutput& o, double seconds) {
  const double h = o.wall_clock_half_width;
  if (h < 0) return duration(seconds);
  return duration(seconds) + " (" + duration(seconds / (1 + h)) + "-" + duration(seconds * (1 + h)) + ")";
}

nlohmann::json wall_clock_interval_json(const PlanOutput& o, double seconds) {
  const double h = o.wall_clock_half_width;
  if (h < 0) return nullptr;
  return {seconds / (1 + h), seconds * (1 + h)};
}

namespace {

// The N-GPU plan's headline: `plan --gpus N` answers for N GPUs first (the one-GPU plan follows for comparison).
std::string parallel_headline(const PlanOutput& o) {
  const auto& p = o.parallel->baseline;
  const std::string who = "on " + std::to_string(p.parallel.gpus) + " GPUs, " + parallel_label(p) + " (" +
                          plan_label(o.result.baseline) + " per rank, " + with_commas(p.rows_per_step()) +
                          " rows per optimizer step)";
  const std::string peak = fixed(p.peak_gib, 1) + " GiB per rank";
  if (p.memory.verdict == planner::MemoryVerdict::out_of_memory)
    return "DOES NOT FIT " + who + ": runs out of memory (" + peak + " > " + fixed(p.memory.usable_gib, 1) + " GiB usable)";
  if (!p.fits_window)
    return "DOES NOT FIT the " + fixed(o.window_hours, 1) + " h window " + who + ": takes " + wall_clock_text(o, p.wall_clock_s);
  const bool risky = p.memory.verdict == planner::MemoryVerdict::at_risk;
  return std::string(risky ? "AT RISK " : "FITS ") + who + ": takes " + wall_clock_text(o, p.wall_clock_s) +
         (o.window_hours > 0 ? " of the " + fixed(o.window_hours, 1) + " h window" : " (no window set)") + ", peak " +
         peak + " of " + fixed(p.memory.usable_gib, 1) + " GiB usable, margin " + fixed(p.memory.margin_gib, 1) + " GiB" +
         (risky ? "; at risk: " + p.memory.risks.front() : "");
}

}  // namespace

std::string headline(const PlanOutput& o) {
  if (o.parallel) return parallel_headline(o);
  const auto& b = o.result.baseline;
  const std::string who = "the baseline (" + plan_label(b) + ")";
  if (b.memory.verdict == planner::MemoryVerdict::out_of_memory) return "DOES NOT FIT: " + who + " " + out_of_memory_text(b) + best_plan_text(o);
  if (!b.fits_window)
    return "DOES NOT FIT the " + fixed(o.window_hours, 1) + " h window: " + who + " takes " + wall_clock_text(o, b.wall_clock_s) +
           best_plan_text(o);
  const bool risky = b.memory.verdict == planner::MemoryVerdict::at_risk;
  std::string line = std::string(risky ? "AT RISK: " : "FITS: ") + who + " takes " + wall_clock_text(o, b.wall_clock_s) +
                     (o.window_hours > 0 ? " of the " + fixed(o.window_hours, 1) + " h window" : " (no window set)") +
                     ", " + peak_and_margin_text(b);
  if (b.truncated.tokens > 0)
    line += ", truncating " + with_commas(b.truncated.tokens) + " tokens at max_length " +
            std::to_string(b.batching.max_length);
  if (risky) line += "; at risk: " + b.memory.risks.front();
  return line;
}

std::vector<Check> plan_checks(const PlanOutput& o) {
  const auto& b = o.result.baseline;
  if (o.parallel) {  // the N-GPU plan is the one asked about; truncation is the batching's, the same on N GPUs
    const auto& p = o.parallel->baseline;
    return {{"fits_memory", p.memory.need_high_gib, p.memory.usable_gib, p.fits_memory},
            {"fits_window", p.wall_clock_s / 3600, o.window_hours, p.fits_window},
            {"keeps_every_token", static_cast<double>(b.truncated.tokens), 0, b.truncated.tokens == 0}};
  }
  const double hours = b.wall_clock_s / 3600;
  // At the interval's upper bound, against what the card gives less the CUDA context (docs/planner.md, "Memory").
  return {{"fits_memory", b.memory.need_high_gib, b.memory.usable_gib, b.fits_memory},
          {"fits_window", hours, o.window_hours, b.fits_window},
          {"keeps_every_token", static_cast<double>(b.truncated.tokens), 0, b.truncated.tokens == 0}};
}

std::string group_title(const planner::PlanResult& plan, const planner::PlanResult& baseline) {
  const int64_t extra = planner::extra_truncated_tokens(plan, baseline.truncated.tokens);
  std::string tokens;
  if (extra > 0)
    tokens = "truncates " + with_commas(extra) + " more tokens than the baseline";
  else
    tokens = baseline.truncated.tokens > 0 ? "keeps every token the baseline keeps" : "keeps every token";
  return plan.fits_window ? tokens : "misses the window; " + tokens;
}

std::string group_key(const planner::PlanResult& plan, const planner::PlanResult& baseline) {
  const bool keeps = planner::extra_truncated_tokens(plan, baseline.truncated.tokens) == 0;
  return std::string(plan.fits_window ? "" : "misses_window_") + (keeps ? "keeps_every_token" : "truncates_more");
}

std::string plan_label(const planner::PlanResult& p) {
  std::string label = planner::policy_name(p.batching.policy) + " R" + std::to_string(p.batching.micro_batch) + "x" +
                      std::to_string(p.accumulation) + " L" + std::to_string(p.batching.max_length);
  if (p.batching.policy == planner::Policy::sorted_buckets) label += " k" + std::to_string(p.batching.bucket_size);
  if (p.batching.pad_to_multiple_of > 1) label += " m" + std::to_string(p.batching.pad_to_multiple_of);
  if (p.batching.policy == planner::Policy::pack) label += " " + planner::packer_name(p.batching.packer);
  if (planner::packs(p.batching.policy)) label += " " + planner::pack_attention_name(p.batching.pack_attention);
  return label;
}

std::string plan_label_legend() {
  return "R2x8: 2 rows per micro-batch x 8 micro-batches per optimizer step (padding-free: 2 samples in one row); "
         "L16384: max_length (longer samples are truncated); k64: bucket size (sorted-buckets); m8: every width "
         "padded up to a multiple of 8 tokens; packed plans end with their packer (next-fit, ffd, multipack) and "
         "attention mode (varlen, block-mask, cross)";
}

double samples_per_step(const planner::PlanResult& p) {
  return p.steps > 0 ? static_cast<double>(p.samples * p.epochs) / static_cast<double>(p.steps) : 0.0;
}

bool documents_attend_each_other(const planner::PlanResult& p) {
  return planner::packs(p.batching.policy) && p.batching.pack_attention == model::DocumentAttention::cross;
}

std::string packing_note(const planner::PlanResult& p, const planner::PlanResult& baseline) {
  if (!planner::packs(p.batching.policy)) return "";
  std::string note = plan_label(p) + ": " + fixed(samples_per_step(p), 1) + " samples and " +
                     with_commas(p.tokens_per_step) + " tokens per optimizer step (baseline " +
                     fixed(samples_per_step(baseline), 1) + " and " + with_commas(baseline.tokens_per_step) + ")";
  if (documents_attend_each_other(p))
    note += "; WARNING: no document mask, so the documents of a row attend to each other (a correctness "
            "problem, not a speed-up: use varlen or block-mask)";
  return note;
}

std::string optimizer_source_text(const planner::PlanResult& p, const std::string& given_by) {
  if (p.optimizer.source == planner::OptimizerSource::given) return "from " + given_by;
  return p.optimizer.step_s > 0 ? "calibrated, from the predictor" : "the predictor has none: 0";
}

std::string optimizer_source_key(const planner::PlanResult& p, const std::string& given_by) {
  if (p.optimizer.source == planner::OptimizerSource::predictor) return "predictor";
  return given_by == "--optimizer-step-s" ? "flag" : "scenario";
}

double saving_vs_baseline(const planner::PlanResult& p, const planner::PlanResult& baseline) {
  return baseline.wall_clock_s > 0 ? 1 - p.wall_clock_s / baseline.wall_clock_s : 0.0;
}

std::string fits_text(const planner::PlanResult& p) {
  if (p.memory.verdict == planner::MemoryVerdict::out_of_memory) return "OOM";
  if (!p.fits_window) return "late";
  return p.memory.verdict == planner::MemoryVerdict::at_risk ? "at risk" : "yes";
}

std::string peak_where_text(const planner::MemoryPeak& peak) {
  std::string where = peak.at_optimizer_step
                          ? "the optimizer step after micro-batch " + with_commas(peak.micro_batch + 1)
                          : "micro-batch " + with_commas(peak.micro_batch + 1) + " (" + std::to_string(peak.rows) + " x " +
                                std::to_string(peak.width) + ")";
  where += ", optimizer step " + with_commas(peak.step + 1);
  if (peak.later_epoch) where += ", in a later epoch (AdamW's states alive from its start)";
  return where;
}

std::string memory_text(const planner::PlanResult& p) {
  const auto& m = p.memory;
  std::string text = "peak " + fixed(p.peak_gib, 1) + " GiB allocated";
  if (m.peak_low_gib) text += " (90 %: " + fixed(*m.peak_low_gib, 1) + "-" + fixed(*m.peak_high_gib, 1) + ")";
  text += " at " + peak_where_text(p.memory_peak);
  if (m.itemised)
    text += std::string("; reserved ") + (m.fragmentation_known ? "" : "at least ") + fixed(p.reserved_peak_gib, 1) +
            " GiB (" + model::allocator_name(p.allocator) + " allocator" +
            (m.fragmentation_known ? "" : ", fragmentation not calibrated") + ")";
  text += "; usable " + fixed(m.usable_gib, 1) + " GiB (" +
          (m.context_known ? fixed(m.limit_gib, 1) + " GiB less " + fixed(m.limit_gib - m.usable_gib, 2) + " GiB of CUDA context"
                           : std::string("the whole card: the CUDA context is not measured")) +
          "): margin " + fixed(m.margin_gib, 1) + " GiB";
  return text;
}

std::string live_text(const planner::MemoryPeak& peak) {
  std::string text;
  for (const auto& item : peak.live)
    text += (text.empty() ? "" : ", ") + item.name + " " + fixed(static_cast<double>(item.bytes) / 1073741824.0, 2) +
            " GiB (" + item.lifetime + ")";
  return text;
}

nlohmann::json memory_json(const planner::PlanResult& p) {
  const auto& m = p.memory;
  const auto& peak = p.memory_peak;
  nlohmann::json live = nlohmann::json::array();
  for (const auto& item : peak.live)
    live.push_back({{"name", item.name}, {"gib", static_cast<double>(item.bytes) / 1073741824.0}, {"lifetime", item.lifetime}});
  nlohmann::json j{{"verdict", planner::verdict_name(m.verdict)},
                   {"peak_gib", p.peak_gib},
                   {"peak_at",
                    {{"kind", peak.at_optimizer_step ? "optimizer_step" : "micro_batch"},
                     {"micro_batch", peak.micro_batch + 1},
                     {"step", peak.step + 1},
                     {"rows", peak.rows},
                     {"width", peak.width},
                     {"later_epoch", peak.later_epoch}}},
                   {"live", live},
                   {"reserved_peak_gib", p.reserved_peak_gib},
                   {"cache_releases", p.cache_releases},
                   {"allocator", model::allocator_name(p.allocator)},
                   {"limit_gib", m.limit_gib},
                   {"usable_gib", m.usable_gib},
                   {"need_gib", m.need_gib},
                   {"need_high_gib", m.need_high_gib},
                   {"margin_gib", m.margin_gib},
                   {"risks", m.risks}};
  // Absent when the predictor has no measured whole-run error (every JSON figure is a number).
  if (m.peak_low_gib) j["peak_interval_gib"] = {*m.peak_low_gib, *m.peak_high_gib};
  return j;
}

}  // namespace stepcast::report
