// stepcast plan: simulate a training run over a real corpus and rank restart parameters.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/app.hpp"
#include "io/coefficients_io.hpp"
#include "io/corpus_io.hpp"
#include "report/format.hpp"
#include "io/model_config.hpp"
#include "report/report_html.hpp"
#include "io/scenario_io.hpp"
#include "model/errors.hpp"
#include "model/step_model.hpp"
#include "planner/simulate.hpp"
#include "planner/sweep.hpp"
#include "planner/width_quadratic.hpp"

namespace stepcast::cli {

using io::load_coefficients;
using io::load_corpus_file;
using io::load_model;
using io::load_scenario;
using io::save_corpus_csv;
using io::CorpusSource;
using io::Scenario;
using report::fixed;
using report::plan_label;
using report::with_commas;
using report::write_report;
using report::ReportInput;
namespace {

struct PlanOptions {
  std::string scenario;
  std::string corpus;
  std::string coefficients;
  std::string policy;
  int64_t micro_batch = 0;
  int64_t max_length = 0;
  int64_t accumulation = 0;
  int64_t bucket_size = 0;
  int64_t pad_to_multiple_of = 0;  // 0: the scenario's
  double optimizer_step_s = -1;    // < 0: the scenario's, else the predictor's
  int64_t top = 0;
  int threads = 2;
  std::string report;
  std::string save_corpus;
  bool no_sweep = false;
  Format format = Format::text;
};

// The scenario with the command line's overrides applied; every bad override reported at once.
Scenario scenario_with_overrides(const PlanOptions& o) {
  Scenario s = load_scenario(o.scenario);
  Diagnostics d;
  if (!o.policy.empty()) {
    if (auto p = planner::parse_policy(o.policy)) {
      s.baseline.policy = *p;
    } else {
      std::string valid;
      for (const auto& n : planner::policy_names()) valid += (valid.empty() ? "" : ", ") + n;
      d.add("--policy = '" + o.policy + "'. Violated constraint: one of " + valid);
    }
  }
  if (o.micro_batch > 0) s.baseline.micro_batch = o.micro_batch;
  if (o.max_length > 0) s.baseline.max_length = o.max_length;
  if (o.max_length > INT32_MAX) d.add("--max-length = " + std::to_string(o.max_length) + ". Violated constraint: <= 2147483647");
  if (o.accumulation > 0) s.run.accumulation = o.accumulation;
  if (o.bucket_size > 0) s.baseline.bucket_size = o.bucket_size;
  if (o.pad_to_multiple_of > 0) s.baseline.pad_to_multiple_of = o.pad_to_multiple_of;
  if (o.pad_to_multiple_of > planner::kMaxPadToMultipleOf)
    d.add("--pad-to-multiple-of = " + std::to_string(o.pad_to_multiple_of) +
          ". Violated constraint: <= " + std::to_string(planner::kMaxPadToMultipleOf));
  else if (s.baseline.max_length <= INT32_MAX &&
           planner::round_up_width(s.baseline.max_length, s.baseline.pad_to_multiple_of) > INT32_MAX)
    d.add("max_length " + std::to_string(s.baseline.max_length) + " rounded up to a multiple of " +
          std::to_string(s.baseline.pad_to_multiple_of) + ". Violated constraint: <= 2147483647");
  if (o.optimizer_step_s >= 0) {
    s.run.optimizer_step_s = o.optimizer_step_s;
    s.optimizer_step_source = "--optimizer-step-s";
  }
  if (o.top > 0) s.sweep.top = o.top;
  s.sweep.threads = o.threads;
  if (o.no_sweep) s.sweep.policies.clear();  // the baseline alone: a what-if
  if (!o.corpus.empty()) s.corpus = CorpusSource{o.corpus, std::nullopt, {}, 0};
  if (!o.coefficients.empty()) {
    s.coefficients = o.coefficients;
    s.width_quadratic.reset();
  }
  d.throw_if_any();
  return s;
}

planner::Corpus read_corpus(const CorpusSource& c, std::string& description) {
  if (c.synthetic) {
    description = "synthetic (seed " + std::to_string(c.synthetic->seed) + ")";
    return planner::generate_synthetic(*c.synthetic);
  }
  if (!c.histogram.empty()) {
    description = "histogram of " + std::to_string(c.histogram.size()) + " lengths";
    return planner::expand_histogram(c.histogram, c.histogram_seed);
  }
  description = c.file;
  return load_corpus_file(c.file);
}

planner::Corpus load_corpus(const CorpusSource& c, std::string& description) {
  planner::Corpus corpus = read_corpus(c, description);
  if (corpus.size() == 0) throw InputError(description + ": the corpus has no samples. Violated constraint: at least one");
  return corpus;
}

std::unique_ptr<model::StepPredictor> make_predictor(const Scenario& s, std::string& description) {
  if (s.width_quadratic) {
    description = "width-quadratic equation from the scenario";
    return std::make_unique<planner::WidthQuadraticPredictor>(*s.width_quadratic);
  }
  const model::Coefficients c = load_coefficients(s.coefficients);
  // The scenario's model wins over the one the coefficients were fitted on (same architecture, other size).
  const std::string model_name = s.model.empty() ? c.model : s.model;
  const model::ModelShape shape = load_model(model_name);
  description = "StepModel " + model_name + " on " + c.gpu + ", tier " + c.tier + " (" + s.coefficients + ", " +
                std::to_string(c.points) + " points)";
  return std::make_unique<model::StepModel>(shape, c);
}

// Prints "simulated i/n" on stderr once a sweep has run for more than a second.
planner::Progress progress_on_stderr() {
  const auto start = std::chrono::steady_clock::now();
  auto last = std::make_shared<double>(0.0);
  return [start, last](int64_t done, int64_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s < 1.0 || (s - *last < 0.1 && done < total)) return;
    *last = s;
    std::fprintf(stderr, "\rplan: simulated %lld/%lld configurations (%.0f %%) ", static_cast<long long>(done),
                 static_cast<long long>(total), 100.0 * static_cast<double>(done) / static_cast<double>(total));
    if (done == total) std::fprintf(stderr, "\n");
  };
}

// Where a plan's optimizer step came from: "scenario", "flag" or "predictor" (the calibrated coefficients;
// 0 from a predictor that has none, e.g. width_quadratic).
std::string optimizer_source(const planner::PlanResult& p, const Scenario& s) {
  if (p.optimizer.source == planner::OptimizerSource::predictor) return "predictor";
  return s.optimizer_step_source == "--optimizer-step-s" ? "flag" : "scenario";
}

nlohmann::json plan_json(const planner::PlanResult& p, const planner::PlanResult& baseline, bool has_kept,
                         const Scenario& s) {
  nlohmann::json j{{"policy", planner::policy_name(p.batching.policy)},
                   {"micro_batch", p.batching.micro_batch},
                   {"accumulation", p.accumulation},
                   {"max_length", p.batching.max_length},
                   {"bucket_size", p.batching.bucket_size},
                   {"seed", p.batching.seed},
                   {"pad_to_multiple_of", p.batching.pad_to_multiple_of},
                   {"epochs", p.epochs},
                   {"steps", p.steps},
                   {"micro_batches", p.micro_batches},
                   {"tokens_per_step", p.tokens_per_step},
                   {"wall_clock_s", p.wall_clock_s},
                   {"wall_clock_h", p.wall_clock_s / 3600},
                   {"saving_vs_baseline", baseline.wall_clock_s > 0 ? 1 - p.wall_clock_s / baseline.wall_clock_s : 0.0},
                   {"breakdown_s",
                    {{"compute", p.compute_s},
                     {"first_seen", p.first_seen_s},
                     {"run_start", p.run_start_s},
                     {"optimizer", p.optimizer_s},
                     {"checkpoints", p.checkpoint_s},
                     {"evaluation", p.eval_s},
                     {"startup", p.startup_s}}},
                   {"distinct_shapes", p.distinct_shapes},
                   {"host_bound_micro_batches", p.host_bound_micro_batches},
                   {"first_seen_s", p.first_seen_s},
                   {"run_start_s", p.run_start_s},
                   {"optimizer_step_s", p.optimizer.step_s},
                   {"optimizer_step_source", optimizer_source(p, s)},
                   {"padding_fraction", p.padding_fraction},
                   {"real_tokens", p.real_tokens},
                   {"processed_tokens", p.processed_tokens},
                   {"peak_gib", p.peak_gib},
                   {"memory_limit_gib", p.memory_limit_gib},
                   {"fits_memory", p.fits_memory},
                   {"fits_window", p.fits_window},
                   {"truncated_samples", p.truncated.samples},
                   {"truncated_tokens", p.truncated.tokens}};
  if (has_kept) {
    j["kept_tokens"] = p.kept_tokens;
    j["truncated_kept_tokens"] = p.truncated.kept_tokens;
  }
  if (p.roots_per_window >= 0) j["roots_per_window"] = p.roots_per_window;
  j["out_of_memory"] = nullptr;
  if (p.oom)
    j["out_of_memory"] = {{"micro_batch", p.oom->micro_batch}, {"step", p.oom->step},       {"rows", p.oom->rows},
                          {"width", p.oom->width},             {"peak_gib", p.oom->peak_gib}, {"limit_gib", p.oom->limit_gib}};
  return j;
}

std::string optimizer_source_text(const planner::PlanResult& p, const Scenario& s) {
  if (p.optimizer.source == planner::OptimizerSource::given) return "from " + s.optimizer_step_source;
  return p.optimizer.step_s > 0 ? "calibrated, from the predictor" : "the predictor has none: 0";
}

// Hours for runs people book windows for; seconds or minutes for the short runs that check a prediction.
std::string hours(double s) {
  if (s < 600) return fixed(s, 1) + " s";
  if (s < 3600) return fixed(s / 60, 1) + " min";
  return fixed(s / 3600, 2) + " h";
}
std::string percent(double f, int digits = 1) { return fixed(100 * f, digits) + " %"; }

void print_plan_line(std::ostream& out, const std::string& rank, const planner::PlanResult& p,
                     const planner::PlanResult& baseline, bool roots) {
  char buf[512];
  const std::string bucket = p.batching.policy == planner::Policy::sorted_buckets ? std::to_string(p.batching.bucket_size) : "-";
  const double saving = baseline.wall_clock_s > 0 ? 1 - p.wall_clock_s / baseline.wall_clock_s : 0;
  std::snprintf(buf, sizeof buf, "%-8s %-15s %4lld %4lld %8lld %6s %4lld %7s %9s %9s %8s %8s %9s %12s", rank.c_str(),
                planner::policy_name(p.batching.policy).c_str(), static_cast<long long>(p.batching.micro_batch),
                static_cast<long long>(p.accumulation), static_cast<long long>(p.batching.max_length), bucket.c_str(),
                static_cast<long long>(p.batching.pad_to_multiple_of), with_commas(p.distinct_shapes).c_str(),
                with_commas(p.steps).c_str(), hours(p.wall_clock_s).c_str(),
                (&p == &baseline ? std::string("-") : (saving > 0 ? "-" : "+") + percent(std::abs(saving))).c_str(), percent(p.padding_fraction, 2).c_str(),
                (fixed(p.peak_gib, 1) + (p.fits_memory ? "" : "!")).c_str(), with_commas(p.truncated.tokens).c_str());
  out << buf;
  if (roots) out << "  " << (p.roots_per_window < 0 ? std::string("-") : fixed(p.roots_per_window, 1));
  out << "  " << (p.fits_window ? "yes" : "NO") << "\n";
}

void print_text(std::ostream& out, const Scenario& s, const planner::Corpus& corpus, const std::string& corpus_desc,
                const std::string& predictor_desc, const planner::SweepResult& r, double elapsed_s) {
  const auto& b = r.baseline;
  out << "stepcast plan: " << (s.name.empty() ? s.path : s.name) << "\n";
  out << "  gpu        " << (s.gpu_name.empty() ? "" : s.gpu_name + ", ") << fixed(s.run.gpu_memory_gib, 1) << " GiB"
      << (s.run.memory_cap_gib > 0 ? ", cap " + fixed(s.run.memory_cap_gib, 1) + " GiB" : "") << "; window "
      << (s.run.window_hours > 0 ? fixed(s.run.window_hours, 1) + " h" : "none") << "\n";
  out << "  corpus     " << with_commas(corpus.size()) << " samples, " << with_commas(corpus.total_tokens())
      << " tokens, longest " << with_commas(corpus.max_length())
      << (corpus.has_roots() ? ", " + with_commas(corpus.num_roots) + " roots" : "") << " (" << corpus_desc << ")\n";
  out << "  predictor  " << predictor_desc << "\n\n";
  out << "baseline: " << plan_label(b) << " -> " << hours(b.wall_clock_s) << " ("
      << (b.fits_window ? "fits the window" : "DOES NOT fit the window") << "), padding " << percent(b.padding_fraction, 2)
      << ", peak " << fixed(b.peak_gib, 1) << " GiB of " << fixed(b.memory_limit_gib, 1) << "\n";
  out << "  " << with_commas(b.steps) << " optimizer steps of " << b.accumulation << " micro-batches; compute "
      << hours(b.compute_s) << ", optimizer " << hours(b.optimizer_s) << ", checkpoints " << hours(b.checkpoint_s)
      << ", evaluation " << hours(b.eval_s) << ", start-up " << fixed(b.startup_s, 0) << " s\n";
  out << "  " << with_commas(b.distinct_shapes) << " distinct shapes (rows x width, pad_to_multiple_of "
      << b.batching.pad_to_multiple_of << "): first-seen " << fixed(b.first_seen_s, 1) << " s, run start "
      << fixed(b.run_start_s, 1) << " s; optimizer step " << fixed(b.optimizer.step_s, 4) << " s ("
      << optimizer_source_text(b, s) << ")\n";
  if (b.host_bound_micro_batches > 0)
    out << "  host-bound: " << with_commas(b.host_bound_micro_batches) << " of " << with_commas(b.micro_batches)
        << " micro-batches (the host issues their kernels slower than the device runs them: fewer, fuller "
           "micro-batches pay; docs/host.md)\n";
  out << "  truncated at " << b.batching.max_length << ": " << with_commas(b.truncated.samples) << " samples, "
      << with_commas(b.truncated.tokens) << " tokens\n";
  if (b.oom)
    out << "  OUT OF MEMORY: micro-batch " << with_commas(b.oom->micro_batch) << " (" << b.oom->rows << " x "
        << b.oom->width << ", " << fixed(b.oom->peak_gib, 1) << " GiB > " << fixed(b.oom->limit_gib, 1)
        << " GiB) at optimizer step " << with_commas(b.oom->step) << "\n";
  if (r.configurations == 0) {
    out << "\nno sweep (no configurations; --no-sweep or an empty sweep.policies): the baseline alone, "
        << fixed(elapsed_s, 2) << " s\n";
  } else {
    out << "\nrecommendations (" << r.recommendations.size() << " best of " << r.configurations << " simulated; "
        << r.out_of_memory << " out of memory; " << r.skipped << " skipped: cannot keep tokens per step; "
        << fixed(elapsed_s, 2) << " s):\n";
  }
  char head[512];
  std::snprintf(head, sizeof head, "%-8s %-15s %4s %4s %8s %6s %4s %7s %9s %9s %8s %8s %9s %12s", "rank", "policy", "R",
                "acc", "max_len", "bucket", "pad", "shapes", "steps", "wall", "vs base", "padding", "peak GiB", "trunc tok");
  out << head << (corpus.has_roots() ? "  roots/win" : "") << "  window\n";
  print_plan_line(out, "baseline", b, b, corpus.has_roots());
  for (size_t i = 0; i < r.recommendations.size(); ++i)
    print_plan_line(out, std::to_string(i + 1), r.recommendations[i], b, corpus.has_roots());
}

void write_html(const PlanOptions& o, const Scenario& s, const planner::Corpus& corpus, const std::string& corpus_desc,
                const std::string& predictor_desc, const planner::SweepResult& r, const model::StepPredictor& predictor) {
  ReportInput in;
  in.title = "stepcast plan: " + (s.name.empty() ? s.path : s.name);
  in.facts = {"GPU: " + s.gpu_name + ", " + fixed(s.run.gpu_memory_gib, 1) + " GiB; window " + fixed(s.run.window_hours, 1) + " h",
              "Corpus: " + with_commas(corpus.size()) + " samples, " + with_commas(corpus.total_tokens()) + " tokens (" +
                  corpus_desc + ")",
              "Predictor: " + predictor_desc,
              "Baseline: " + plan_label(r.baseline) + ", " + hours(r.baseline.wall_clock_s) + ", padding " +
                  percent(r.baseline.padding_fraction, 2) + ", " + with_commas(r.baseline.distinct_shapes) +
                  " distinct shapes, first-seen " + fixed(r.baseline.first_seen_s, 1) + " s",
              "Optimizer step: " + fixed(r.baseline.optimizer.step_s, 4) + " s (" + optimizer_source_text(r.baseline, s) + ")"};
  in.baseline = r.baseline;
  in.recommendations = r.recommendations;
  in.window_hours = s.run.window_hours;
  const double limit = s.run.memory_limit_gib();
  in.baseline_points = planner::evaluate(planner::build_schedule(corpus, r.baseline.batching), predictor, limit, 400).points;
  if (!r.recommendations.empty())
    in.best_points =
        planner::evaluate(planner::build_schedule(corpus, r.recommendations.front().batching), predictor, limit, 400).points;
  write_report(o.report, in);
}

void run_plan(const PlanOptions& o) {
  const Scenario s = scenario_with_overrides(o);
  std::string corpus_desc, predictor_desc;
  const planner::Corpus corpus = load_corpus(s.corpus, corpus_desc);
  if (!o.save_corpus.empty()) save_corpus_csv(o.save_corpus, corpus);
  const auto predictor = make_predictor(s, predictor_desc);
  const auto start = std::chrono::steady_clock::now();
  const auto result = planner::sweep(corpus, s.baseline, s.run, s.sweep, *predictor, progress_on_stderr());
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.format == Format::json) {
    nlohmann::json j;
    j["scenario"] = s.name.empty() ? s.path : s.name;
    j["corpus"] = {{"source", corpus_desc},           {"samples", corpus.size()},
                   {"tokens", corpus.total_tokens()}, {"longest", corpus.max_length()},
                   {"roots", corpus.num_roots}};
    j["predictor"] = predictor_desc;
    j["gpu"] = {{"name", s.gpu_name}, {"memory_gib", s.run.gpu_memory_gib}, {"memory_cap_gib", s.run.memory_cap_gib}};
    j["window_hours"] = s.run.window_hours;
    j["baseline"] = plan_json(result.baseline, result.baseline, corpus.has_kept(), s);
    j["recommendations"] = nlohmann::json::array();
    for (const auto& p : result.recommendations)
      j["recommendations"].push_back(plan_json(p, result.baseline, corpus.has_kept(), s));
    j["sweep"] = {{"configurations", result.configurations},
                  {"out_of_memory", result.out_of_memory},
                  {"skipped", result.skipped},
                  {"elapsed_s", elapsed_s}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";  // names are YAML bytes
  } else {
    print_text(std::cout, s, corpus, corpus_desc, predictor_desc, result, elapsed_s);
  }
  if (!o.report.empty()) write_html(o, s, corpus, corpus_desc, predictor_desc, result, *predictor);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Simulate a training run over a corpus: wall clock, padding, memory; rank restart parameters");
  cmd->footer(
      "Examples:\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml\n"
      "  stepcast plan scenarios/seed-sm120.yaml --policy bucket-to-pair --format json\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml --corpus my-lengths.csv --max-length 8192 --report plan.html\n"
      "  stepcast plan scenarios/h200-gemma-4-26b-a4b.yaml --pad-to-multiple-of 64 --no-sweep\n"
      "Corpus files: one token length per line, or CSV with a header length[,kept][,root].\n"
      "Policies: fixed, pad-to-longest, sorted-buckets, bucket-to-pair, pack (see docs/planner.md).\n"
      "The flags override the scenario's baseline; the sweep keeps its tokens per optimizer step.\n"
      "Every new rows x width shape pays the predictor's first-seen seconds once per run; the optimizer step is\n"
      "the scenario's run.optimizer_step_s or --optimizer-step-s when given, else the calibrated one.");
  cmd->add_option("scenario", opts->scenario, "Scenario YAML (see scenarios/ and docs/planner.md)")->required();
  cmd->add_option("--corpus", opts->corpus, "Corpus file instead of the scenario's (lengths, or CSV length[,kept][,root])");
  cmd->add_option("--coefficients", opts->coefficients, "Calibrated coefficients YAML instead of the scenario's predictor");
  cmd->add_option("--policy", opts->policy, "Baseline policy: fixed, pad-to-longest, sorted-buckets, bucket-to-pair, pack");
  cmd->add_option("--micro-batch", opts->micro_batch, "Baseline rows per micro-batch")->check(CLI::PositiveNumber);
  cmd->add_option("--max-length", opts->max_length, "Baseline max_length (tokens; longer samples are truncated)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--accumulation", opts->accumulation, "Baseline micro-batches per optimizer step")->check(CLI::PositiveNumber);
  cmd->add_option("--bucket-size", opts->bucket_size, "Baseline bucket size (sorted-buckets)")->check(CLI::PositiveNumber);
  cmd->add_option("--pad-to-multiple-of", opts->pad_to_multiple_of,
                  "Baseline collator rounding: every micro-batch's width up to a multiple of N tokens (1 = off)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer-step-s", opts->optimizer_step_s,
                  "Seconds per optimizer step instead of the scenario's or the calibrated one")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top", opts->top, "Recommendations to show")->check(CLI::PositiveNumber);
  cmd->add_option("--threads", opts->threads, "Threads for the sweep")->check(CLI::Range(1, 64))->default_str("2");
  cmd->add_option("--report", opts->report, "Also write a self-contained HTML report with SVG charts");
  cmd->add_flag("--no-sweep", opts->no_sweep, "Simulate the baseline only (no recommendations)");
  cmd->add_option("--save-corpus", opts->save_corpus, "Also write the corpus used (e.g. a synthetic one) as CSV");
  add_format_option(cmd, opts->format);
  cmd->callback([opts]() { run_plan(*opts); });
}

}  // namespace stepcast::cli
