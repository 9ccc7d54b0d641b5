// `stepcast plan --format json`: the headline and checks, the scenario, the baseline and the ranked plans
// with their group (docs/planner.md lists the fields).
#include "report/plan_output.hpp"

namespace stepcast::report {
namespace {

nlohmann::json one_plan_json(const planner::PlanResult& p, const PlanOutput& o) {
  const auto& baseline = o.result.baseline;
  nlohmann::json j{{"label", plan_label(p)},
                   {"policy", planner::policy_name(p.batching.policy)},
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
                   {"saving_vs_baseline", saving_vs_baseline(p, baseline)},
                   {"breakdown_s",
                    {{"compute", p.compute_s},
                     {"first_seen", p.first_seen_s},
                     {"run_start", p.run_start_s},
                     {"kernel_compiles", p.compile_s},
                     {"optimizer", p.optimizer_s},
                     {"checkpoints", p.checkpoint_s},
                     {"evaluation", p.eval_s},
                     {"startup", p.startup_s}}},
                   {"distinct_shapes", p.distinct_shapes},
                   {"compile_classes", p.compile_classes},
                   {"host_bound_micro_batches", p.host_bound_micro_batches},
                   {"first_seen_s", p.first_seen_s},
                   {"run_start_s", p.run_start_s},
                   {"optimizer_step_s", p.optimizer.step_s},
                   {"optimizer_step_source", optimizer_source_key(p, o.optimizer_step_source)},
                   {"padding_fraction", p.padding_fraction},
                   {"real_tokens", p.real_tokens},
                   {"processed_tokens", p.processed_tokens},
                   {"peak_gib", p.peak_gib},
                   {"memory_limit_gib", p.memory_limit_gib},
                   {"fits_memory", p.fits_memory},
                   {"memory_verdict", planner::verdict_name(p.memory.verdict)},
                   {"memory", memory_json(p)},
                   {"fits_window", p.fits_window},
                   {"truncated_samples", p.truncated.samples},
                   {"truncated_tokens", p.truncated.tokens},
                   {"extra_truncated_tokens", planner::extra_truncated_tokens(p, baseline.truncated.tokens)}};
  j["samples_per_step"] = samples_per_step(p);
  j["packer"] = nullptr;
  j["pack_attention"] = nullptr;
  if (p.batching.policy == planner::Policy::pack) j["packer"] = planner::packer_name(p.batching.packer);
  if (planner::packs(p.batching.policy)) j["pack_attention"] = planner::pack_attention_name(p.batching.pack_attention);
  j["documents_attend_each_other"] = documents_attend_each_other(p);
  if (o.corpus->has_kept()) {
    j["kept_tokens"] = p.kept_tokens;
    j["truncated_kept_tokens"] = p.truncated.kept_tokens;
  }
  if (p.roots_per_window >= 0) j["roots_per_window"] = p.roots_per_window;
  // Absent when the predictor has no measured error (every JSON figure is a number).
  if (o.wall_clock_half_width >= 0) j["wall_clock_interval_s"] = wall_clock_interval_json(o, p.wall_clock_s);
  j["out_of_memory"] = nullptr;
  if (p.oom)
    j["out_of_memory"] = {{"micro_batch", p.oom->micro_batch}, {"step", p.oom->step},       {"rows", p.oom->rows},
                          {"width", p.oom->width},             {"peak_gib", p.oom->peak_gib}, {"limit_gib", p.oom->limit_gib}};
  return j;
}

}  // namespace

nlohmann::json plan_json(const PlanOutput& o) {
  const auto& r = o.result;
  const planner::Corpus& corpus = *o.corpus;
  nlohmann::json j;
  j["headline"] = headline(o);
  j["fits"] = baseline_fits(o);
  j["checks"] = checks_json(plan_checks(o));
  j["scenario"] = o.scenario;
  j["corpus"] = {{"source", o.corpus_source},       {"samples", corpus.size()},
                 {"tokens", corpus.total_tokens()}, {"longest", corpus.max_length()},
                 {"roots", corpus.num_roots}};
  j["predictor"] = o.predictor;
  if (!o.transfer.empty()) j["transfer"] = o.transfer;
  j["gpu"] = {{"name", o.gpu_name}, {"memory_gib", o.gpu_memory_gib}, {"memory_cap_gib", o.memory_cap_gib}};
  j["window_hours"] = o.window_hours;
  j["cold_start"] = o.cold_start;  // the compiles: each plan's breakdown_s.kernel_compiles and compile_classes
  j["baseline"] = one_plan_json(r.baseline, o);
  j["ranking_rule"] = planner::ranking_rule();
  j["recommendations"] = nlohmann::json::array();
  for (size_t i = 0; i < r.recommendations.size(); ++i) {
    nlohmann::json p = one_plan_json(r.recommendations[i], o);
    p["rank"] = i + 1;
    p["group"] = group_key(r.recommendations[i], r.baseline);
    p["group_title"] = group_title(r.recommendations[i], r.baseline);
    j["recommendations"].push_back(std::move(p));
  }
  j["sweep"] = {{"configurations", r.configurations},
                {"out_of_memory", r.out_of_memory},
                {"skipped", r.skipped},
                {"elapsed_s", o.elapsed_s}};
  if (o.parallel) j["parallel"] = parallel_json(*o.parallel);
  return j;
}

}  // namespace stepcast::report
