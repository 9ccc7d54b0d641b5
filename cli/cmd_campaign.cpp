// stepcast campaign check|predict|ready|report: measurement campaigns as data (docs/campaigns.md). The work is in
// the campaign library (campaign/); this file parses the command line and prints.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "campaign/predict.hpp"
#include "campaign/ready.hpp"
#include "campaign/report.hpp"
#include "cli/app.hpp"
#include "io/atomic_file.hpp"
#include "io/campaign_io.hpp"
#include "model/errors.hpp"
#include "model/gpus.hpp"
#include "predict/predictor.hpp"
#include "report/csv.hpp"
#include "report/format.hpp"
#include "report/json_output.hpp"

namespace stepcast::cli {
namespace {

struct CampaignOptions {
  std::string file;
  std::string out;         // predict: a folder; report: a file
  std::string records;     // report
  std::string prediction;  // report: another committed prediction
  bool force = false;
  Format format = Format::text;
};

std::string process_summary(const io::Campaign& c, const io::PlanItem& p) {
  const io::CampaignItem& it = c.items[p.item];
  std::string what = p.probes ? std::to_string(it.probes->points.size()) + " points" +
                                    (it.probes->kernels.empty() ? ""
                                                                : " + " + std::to_string(it.probes->kernels.size()) +
                                                                      " kernel tables")
                              : "run " + p.run_id;
  return p.id + "  " + io::stack_name(it.stack) + "  " + it.model_name + "  " + what + "  " + p.label + "  " +
         report::fixed(it.time_limit_s, 0) + " s";
}

nlohmann::json plan_items_json(const io::Campaign& c) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& p : io::plan_items(c))
    items.push_back({{"id", p.id},
                     {"stack", io::stack_name(c.items[p.item].stack)},
                     {"model", c.items[p.item].model_name},
                     {"label", p.label},
                     {"time_limit_s", c.items[p.item].time_limit_s}});
  return items;
}

// The predictor `campaign predict` will use: the campaign's coefficients, or the GPU's default per-category file
// when it names none (docs/campaigns.md), shown relative to the campaign's root when it lies there.
std::string predictor_text(const io::Campaign& c) {
  if (!c.coefficients.empty()) return c.coefficients;
  const std::string from = predict::default_predictor_gpu(c.gpu);
  const std::string path = predict::default_coefficients_path(from);
  const std::string carried = from == model::gpu_info(c.gpu).name ? "" : ", " + from + "'s, carried by the transfer";
  if (!carried.empty() && !c.transfer)
    return "(none: the GPU declares no default predictor, and " + from + "'s needs transfer: true)";
  const std::filesystem::path relative = std::filesystem::absolute(path).lexically_normal().lexically_relative(
      std::filesystem::absolute(c.root).lexically_normal());
  const bool inside = !relative.empty() && *relative.begin() != "..";
  return "the default per-category predictor (" + (inside ? relative.string() : path) + carried + ")";
}

void run_check(const CampaignOptions& o) {
  const io::Campaign c = io::load_campaign(o.file);
  const auto processes = io::plan_items(c);
  double limits_s = 0;
  for (const auto& p : processes) limits_s += c.items[p.item].time_limit_s;
  if (o.format == Format::json) {
    report::print_json(std::cout, "campaign check",
                       {{"campaign", c.name}, {"file", c.file}, {"prediction", c.prediction}, {"plan", c.plan_file()},
                        {"total_limit_s", c.total_limit_s}, {"processes", plan_items_json(c)},
                        {"checks", c.checks.size()}});
    return;
  }
  std::cout << c.name << " (" << c.file << "): valid\n"
            << "  prediction " << c.prediction << ", plan " << c.plan_file() << "\n"
            << "  predictor " << predictor_text(c) << " on " << c.gpu << (c.transfer ? " (transfer allowed)" : "") << "\n"
            << "  " << c.items.size() << " item(s), " << processes.size() << " process(es), "
            << report::fixed(c.total_limit_s, 0) << " s in all\n";
  for (const auto& p : processes) std::cout << "    " << process_summary(c, p) << "\n";
  for (const auto& check : c.checks) {
    std::string items;
    for (size_t i : io::covered_items(c, check)) items += (items.empty() ? "" : ", ") + c.items[i].id;
    std::cout << "  check " << io::metric_name(check.metric) << " " << check.goal.text() << " on " << items << "\n";
  }
  if (limits_s > c.total_limit_s)
    std::cout << "  note: the processes' limits add up to " << report::fixed(limits_s, 0) << " s, over total_limit_s: "
              << "the runner starts a process only while time is left\n";
}

void run_predict(const CampaignOptions& o) {
  const io::Campaign c = io::load_campaign(o.file);
  const campaign::CampaignPrediction p = campaign::predict_campaign(c);
  const campaign::WrittenPrediction w = campaign::write_prediction(c, p, o.out);
  if (o.format == Format::json) {
    report::print_json(std::cout, "campaign predict",
                       {{"prediction", w.prediction}, {"plan", w.plan}, {"lines", p.lines.size()},
                        {"processes", p.plan["items"].size()}});
    return;
  }
  std::cout << "wrote " << w.prediction << " (" << p.lines.size() << " predictions) and " << w.plan << " ("
            << p.plan["items"].size() << " processes)\n";
  if (o.out.empty())
    std::cout << "register them before measuring: git add " << c.file << " " << c.prediction << " " << c.plan_file()
              << " && git commit; then stepcast campaign ready " << o.file << "\n";
}

void run_ready(const CampaignOptions& o) {
  const io::Campaign c = io::load_campaign(o.file);
  const auto problems = campaign::readiness_problems(c);
  if (o.format == Format::json)
    report::print_json(std::cout, "campaign ready", {{"ready", problems.empty()}, {"problems", problems}});
  else if (problems.empty())
    std::cout << "ready: " << c.file << ", " << c.prediction << " and " << c.plan_file()
              << " are committed and unchanged\n";
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
    throw CheckFailed(all);
  }
}

void run_report(const CampaignOptions& o) {
  const io::Campaign c = io::load_campaign(o.file);
  if (!o.out.empty())
    io::check_output(o.out, {"--out", o.force, {o.file, c.at_root(c.prediction), o.prediction, o.records}});
  const campaign::CampaignReport r = campaign::build_report(c, o.records, o.prediction);
  std::ostringstream text;
  if (o.format == Format::json)
    report::print_json(text, "campaign report", campaign::report_json(r));
  else if (o.format == Format::csv)
    report::write_csv(text, campaign::report_table(r));
  else
    text << campaign::report_markdown(r);
  std::cout << text.str();
  if (!o.out.empty()) io::write_file_atomically(o.out, text.str(), "campaign report");
  if (!r.misses.empty())
    throw CheckFailed(std::to_string(r.misses.size()) + " check row(s) missed their goal: " + r.misses.front() +
                      (r.misses.size() > 1 ? " (and more above)" : ""));
}

CLI::App* verb(CLI::App* parent, const std::string& name, const std::string& what, const std::string& footer,
               const std::shared_ptr<CampaignOptions>& o) {
  CLI::App* cmd = parent->add_subcommand(name, what);
  cmd->footer(footer);
  cmd->add_option("file", o->file, "Campaign file (measurements/campaigns/NAME.yaml)")->required();
  return cmd;
}

}  // namespace

void add_campaign_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "campaign", "Measurement campaigns as data: check, predict (pre-register), ready (committed?), report");
  cmd->require_subcommand(1);
  cmd->footer(
      "The flow (docs/campaigns.md): write measurements/campaigns/NAME.yaml; `campaign predict` writes its prediction\n"
      "and device plan; commit them; `campaign ready` says so; the device runs tools/device/campaign.sh PLAN.json;\n"
      "`campaign report` checks the records against the committed prediction; commit the records and the table.\n\n"
      "Examples:\n"
      "  stepcast campaign check measurements/campaigns/families2.yaml\n"
      "  stepcast campaign predict measurements/campaigns/NAME.yaml\n"
      "  stepcast campaign predict measurements/campaigns/families2.yaml --out /tmp/x   # a dry run, elsewhere\n"
      "  stepcast campaign ready measurements/campaigns/NAME.yaml && <device call>\n"
      "  stepcast campaign report measurements/campaigns/families2.yaml \\\n"
      "      --records measurements/records/h200-qwen1.5-moe-a2.7b.jsonl");
  auto check = std::make_shared<CampaignOptions>();
  CLI::App* c = verb(cmd, "check", "Validate a campaign file (exit 0, or 2 naming every problem at file:line:col)",
                     "Examples:\n  stepcast campaign check measurements/campaigns/families2.yaml\n"
                     "  stepcast campaign check C.yaml --format json   # its processes, as the device plan will hold them",
                     check);
  add_format_option(c, check->format);
  c->callback([check]() { run_check(*check); });

  auto predict = std::make_shared<CampaignOptions>();
  CLI::App* p = verb(cmd, "predict",
                     "Write the pre-registered prediction and, beside it, the device plan NAME.plan.json",
                     "The prediction is never overwritten: an existing file is exit 2 (a new question is a new\n"
                     "campaign). Probe points are predicted as `stepcast predict --rows` predicts them, runs as `stepcast\n"
                     "plan` simulates them (first-seen shapes, run start, optimizer steps; per micro-batch step and peak).\n"
                     "Every line records the stepcast commit, the command and the predictor's first line.\n\n"
                     "Examples:\n  stepcast campaign predict measurements/campaigns/NAME.yaml\n"
                     "  stepcast campaign predict measurements/campaigns/families2.yaml --out /tmp/x",
                     predict);
  p->add_option("--out", predict->out, "Write both into this folder instead (a dry run; created if missing)");
  add_format_option(p, predict->format);
  p->callback([predict]() { run_predict(*predict); });

  auto ready = std::make_shared<CampaignOptions>();
  CLI::App* r = verb(cmd, "ready",
                     "Exit 0 only when the campaign, its prediction and its plan are committed and unchanged (else 1)",
                     "Runs git in the repository root: `git ls-files --error-unmatch F` and `git diff --quiet HEAD -- F`\n"
                     "for each file. tools/device/campaign.sh calls it first when a .git is present.\n\n"
                     "Examples:\n  stepcast campaign ready measurements/campaigns/NAME.yaml",
                     ready);
  add_format_option(r, ready->format);
  r->callback([ready]() { run_ready(*ready); });

  auto rep = std::make_shared<CampaignOptions>();
  CLI::App* t = verb(
      cmd, "report", "The records a device call brought back against the committed prediction: the table docs/ quote",
      "One row per check and item: predicted, measured (means), mean error, MAPE, the largest error, the goal, the\n"
      "result; error = predicted / measured - 1; a row passes when every value meets the goal. Cold-labelled runs and\n"
      "micro-batches that grew the JIT cache are rows of their own, not judged. Exit 1 (misses printed first) when a\n"
      "check misses, or when an item has no records. Markdown by default.\n\n"
      "Examples:\n"
      "  stepcast campaign report measurements/campaigns/NAME.yaml --records /tmp/NAME/records\n"
      "  stepcast campaign report measurements/campaigns/families2.yaml \\\n"
      "      --records measurements/records/h200-qwen1.5-moe-a2.7b.jsonl --format json\n"
      "  stepcast campaign report measurements/campaigns/families2.yaml \\\n"
      "      --records measurements/records/h200-qwen1.5-moe-a2.7b.jsonl \\\n"
      "      --prediction measurements/predictions/families2.jsonl   # an earlier registration of the same points",
      rep);
  t->add_option("--records", rep->records,
                "The runner's records folder (one <item>.jsonl per process) or one records file")
      ->required();
  t->add_option("--prediction", rep->prediction, "Another committed prediction of the same points (default: the campaign's)");
  t->add_option("--out", rep->out, "Also write the table (in --format) to this file, atomically");
  t->add_flag("--force", rep->force, "Replace an existing --out file (never an input)");
  add_format_option(t, rep->format, true);
  t->callback([rep]() { run_report(*rep); });
}

}  // namespace stepcast::cli
