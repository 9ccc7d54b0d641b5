#pragma once
// `stepcast plan`'s result in each output form: text (plan_text.cpp), JSON (plan_json.cpp), CSV
// (plan_csv.cpp) and HTML (report_html.cpp). What every form says first is the same headline: a baseline
// that runs out of memory DOES NOT FIT, whatever its wall clock; one that misses the window DOES NOT FIT
// the window. Recommendations are grouped by the tokens they truncate beyond the baseline's.
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "planner/corpus.hpp"
#include "planner/sweep.hpp"
#include "report/csv.hpp"
#include "report/plan_parallel.hpp"
#include "report/json_output.hpp"

namespace stepcast::report {

struct PlanOutput {
  std::string scenario;                // the scenario's name, or its path
  std::string gpu_name;
  double gpu_memory_gib = 0;
  double memory_cap_gib = 0;           // 0: none
  double window_hours = 0;             // 0: none
  std::string optimizer_step_source;   // who gave the optimizer step when the scenario or a flag did
  bool cold_start = false;             // a fresh machine (--cold-start, run.cold_start): compiles are charged
  int64_t compile_head_sizes = 1;      // attention head sizes that compile their own kernels (cold machine)
  const planner::Corpus* corpus = nullptr;
  std::string corpus_source;           // a file name, "synthetic (seed 7)", ...
  std::string predictor;               // what predicts a micro-batch, in words
  planner::SweepResult result;
  double elapsed_s = 0;                // the sweep's own time
  // Relative half-width h of the 90 % wall-clock interval [t / (1 + h), t x (1 + h)] (model/transfer.hpp,
  // docs/method.md "Intervals"); < 0: none (a predictor without measured error, or a transfer not yet measured).
  double wall_clock_half_width = -1;
  std::string transfer;                // "transferred: ..." (model/transfer.hpp), empty when calibrated
  std::optional<ParallelOutput> parallel;  // several GPUs (scenario `parallel` or --gpus); absent: one GPU
};

// "6.4 h (6.1 h-6.8 h)": a wall clock with its 90 % interval where there is one.
std::string wall_clock_text(const PlanOutput& o, double seconds);
// [lo, hi] in seconds, or null when there is none.
nlohmann::json wall_clock_interval_json(const PlanOutput& o, double seconds);

// The first line of every form: "DOES NOT FIT: ..." or "FITS: ...".
std::string headline(const PlanOutput& o);
bool baseline_fits(const PlanOutput& o);  // in memory and in the window

// The baseline held to the run's limits: fits_memory (peak GiB vs the limit), fits_window (hours vs the
// window; passed when there is none), keeps_every_token (truncated tokens vs 0). `--fail-on` picks among them.
std::vector<Check> plan_checks(const PlanOutput& o);

// A recommendation's group, e.g. "keeps every token the baseline keeps" or "truncates 2,519,516 more tokens
// than the baseline"; plans that miss the window say so first. Consecutive plans of one group share it.
std::string group_title(const planner::PlanResult& plan, const planner::PlanResult& baseline);
std::string group_key(const planner::PlanResult& plan, const planner::PlanResult& baseline);  // for scripts

// "pad-to-longest R2x8 L16384 m8": policy, rows per micro-batch x accumulation, max_length, bucket size (k),
// pad multiple (m), and for packed plans the packer (pack) and the attention mode ("pack R2x4 L8192 ffd
// varlen"). plan_label_legend() says so in words.
std::string plan_label(const planner::PlanResult& p);
std::string plan_label_legend();

// Mean samples per optimizer step over the run (packing changes it while keeping tokens per step close).
double samples_per_step(const planner::PlanResult& p);
// True for packed rows without a document mask (pack_attention cross): documents attend to each other.
bool documents_attend_each_other(const planner::PlanResult& p);
// The warning and the per-step change of a packed plan against the baseline, in words ("" when not packed).
std::string packing_note(const planner::PlanResult& p, const planner::PlanResult& baseline);

// Where a plan's optimizer step came from, in words and as a key ("predictor", "scenario" or "flag").
std::string optimizer_source_text(const planner::PlanResult& p, const std::string& given_by);
std::string optimizer_source_key(const planner::PlanResult& p, const std::string& given_by);

double saving_vs_baseline(const planner::PlanResult& p, const planner::PlanResult& baseline);

// A plan's memory (planner/memory_timeline.hpp), in words and as JSON (docs/planner.md, "Memory"):
//   fits_text      "yes", "at risk" (fits at the point estimate only), "OOM" or "late" (misses the window)
//   memory_text    "peak 107.0 GiB allocated (90 %: 104.9-109.1) at micro-batch 139 (2 x 16384), optimizer step 18;
//                   reserved 112.4 GiB (default allocator); usable 139.3 GiB (...): margin 30.2 GiB"
//   live_text      what is live at the peak: "weights 47.00 GiB (run), gradients 0.07 GiB (window), ..."
std::string fits_text(const planner::PlanResult& p);
std::string peak_where_text(const planner::MemoryPeak& peak);
std::string memory_text(const planner::PlanResult& p);
std::string live_text(const planner::MemoryPeak& peak);
nlohmann::json memory_json(const planner::PlanResult& p);

void print_plan_text(std::ostream& out, const PlanOutput& o);
nlohmann::json plan_json(const PlanOutput& o);  // the body; print it through print_json
Table plan_table(const PlanOutput& o);          // baseline first, then the recommendations in rank order

}  // namespace stepcast::report
