#include "campaign/report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "calibrate/run_records.hpp"
#include "campaign/predict.hpp"
#include "io/json_text.hpp"
#include "model/errors.hpp"
#include "model/gpus.hpp"
#include "model/limits.hpp"
#include "report/format.hpp"
#include "report/run_check.hpp"

namespace stepcast::campaign {
namespace fs = std::filesystem;
namespace {

using Lines = std::vector<nlohmann::json>;

Lines read_prediction(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the prediction (is it committed? stepcast campaign predict writes it)");
  Lines lines;
  std::vector<std::string> problems;
  std::string text;
  for (int64_t n = 1; std::getline(in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const io::JsonParse parsed = io::parse_json_bounded(text);
    if (!parsed.ok || !parsed.value.is_object()) {
      problems.push_back(path + ":" + std::to_string(n) + ":" + std::to_string(parsed.ok ? 1 : parsed.byte + 1) +
                         ": " + (parsed.ok ? "not a JSON object" : "malformed JSON: " + limits::cut(parsed.message)));
      continue;
    }
    lines.push_back(parsed.value);
  }
  if (!problems.empty()) throw InputError(problems);
  return lines;
}

std::optional<double> number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A line belongs to a plan item when it names it, or (files written before campaigns) names no item but its model.
bool line_of(const nlohmann::json& line, const io::PlanItem& p, const io::CampaignItem& item) {
  const std::string named = text(line, "item");
  return named.empty() ? text(line, "model") == item.model_name : named == p.base_id;
}

const nlohmann::json* probe_line(const Lines& lines, const io::PlanItem& p, const io::CampaignItem& item,
                                 const calibrate::Record& r) {
  for (const auto& line : lines)
    if (!line.contains("run") && line_of(line, p, item) && line.value("width", int64_t{-1}) == r.width &&
        line.contains("rows") && line["rows"].is_array() && line["rows"] == nlohmann::json(r.rows))
      return &line;
  return nullptr;
}

const nlohmann::json* run_line(const Lines& lines, const io::PlanItem& p, const io::CampaignItem& item) {
  for (const auto& line : lines)
    if (line.contains("run") && line_of(line, p, item) && text(line, "policy") == planner::policy_name(p.policy))
      return &line;
  return nullptr;
}

std::string probe_kind(const calibrate::Record& r) {
  const auto it = r.extra.find("probe");
  return it != r.extra.end() && it->is_string() ? it->get<std::string>() : "";
}

void require_gpu(const calibrate::Record& r, const std::string& gpu) {
  model::GpuInfo info;
  try {
    info = model::gpu_info(r.gpu);
  } catch (const InputError& e) {
    throw InputError(r.where() + ": " + e.what());
  }
  if (info.name != gpu)
    throw InputError(r.where() + ": gpu '" + r.gpu + "'. Violated constraint: the campaign's GPU, '" + gpu + "'");
}

// Each plan item's records, in file order.
std::vector<std::vector<calibrate::Record>> assign_records(const io::Campaign& c, const std::vector<io::PlanItem>& plan,
                                                            const std::string& source, std::vector<std::string>& notes) {
  std::vector<std::vector<calibrate::Record>> out(plan.size());
  std::error_code ec;
  if (fs::is_directory(source, ec)) {
    for (size_t i = 0; i < plan.size(); ++i) {
      const fs::path f = fs::path(source) / io::records_file_name(plan[i].id);
      if (fs::exists(f, ec)) out[i] = calibrate::read_records(f.string());
    }
  } else {
    int64_t unmatched = 0;
    for (auto& r : calibrate::read_records_required(source)) {
      const std::string named = r.extra.contains("item") && r.extra["item"].is_string() ? r.extra["item"].get<std::string>() : "";
      const bool run = probe_kind(r) == "run";
      const std::string run_id = run && r.extra.contains("run") ? text(r.extra["run"], "id") : "";
      size_t found = plan.size();
      for (size_t i = 0; i < plan.size() && found == plan.size(); ++i) {
        const io::PlanItem& p = plan[i];
        if (!named.empty() ? p.id == named
                           : run ? !p.probes && (p.run_id == run_id || (c.items[p.item].model_name == r.model &&
                                                                         p.repeat == 0 && run_id.empty()))
                                 : p.probes && p.repeat == 0 && c.items[p.item].model_name == r.model)
          found = i;
      }
      if (found == plan.size()) {
        ++unmatched;
        continue;
      }
      out[found].push_back(std::move(r));
    }
    if (unmatched > 0) notes.push_back(std::to_string(unmatched) + " record(s) of " + source + " match no item");
  }
  for (const auto& records : out)
    for (const auto& r : records) require_gpu(r, c.gpu);
  return out;
}

// The values one row compares, and what it says besides.
struct Values {
  std::vector<std::pair<double, double>> steady;  // (predicted, measured)
  std::vector<std::pair<double, double>> apart;
  int64_t oom = 0;
  int64_t unpredicted = 0;
  int64_t records = 0;
  std::vector<std::string> notes;
  std::vector<std::string> apart_notes;  // on the set-apart row
};

std::optional<double> measured_of(io::Metric m, const calibrate::Record& r) {
  if (r.oom) return std::nullopt;
  if (m == io::Metric::step_time) return r.step_s;
  if (m == io::Metric::peak_allocated) return r.usable_peak() ? r.peak_gib : std::nullopt;
  return r.peak_valid ? number(r.extra, "peak_reserved_gib") : std::nullopt;
}

const char* predicted_key(io::Metric m, bool run_micro_batch) {
  if (m == io::Metric::step_time) return run_micro_batch ? "step_s" : "predicted_step_s";
  if (m == io::Metric::peak_allocated) return run_micro_batch ? "peak_gib" : "predicted_peak_gib";
  return run_micro_batch ? "peak_reserved_gib" : "predicted_peak_reserved_gib";
}

void probe_values(io::Metric m, const Lines& lines, const io::PlanItem& p, const io::CampaignItem& item,
                  const std::vector<calibrate::Record>& records, Values& v) {
  for (const auto& r : records) {
    const std::string kind = probe_kind(r);
    if (kind == "kernels" || kind == "run") continue;  // a table's step runs under the profiler; runs are not probes
    ++v.records;
    if (r.oom) {
      ++v.oom;
      continue;
    }
    const nlohmann::json* line = probe_line(lines, p, item, r);
    const auto measured = measured_of(m, r);
    const auto predicted = line != nullptr ? number(*line, predicted_key(m, false)) : std::nullopt;
    if (!predicted) ++v.unpredicted;
    if (measured && predicted && *measured > 0) v.steady.emplace_back(*predicted, *measured);
  }
}

// The recorded run of a plan item (its id, or the only one in its records).
const calibrate::RecordedRun* recorded_run(const std::vector<calibrate::RecordedRun>& runs, const io::PlanItem& p) {
  for (const auto& run : runs)
    if (run.id == p.run_id) return &run;
  return runs.size() == 1 ? &runs.front() : nullptr;
}

void micro_batch_values(io::Metric m, const nlohmann::json& line, const calibrate::RecordedRun& run, bool cold,
                        Values& v) {
  const nlohmann::json& predicted = line.contains("micro_batches") ? line["micro_batches"] : nlohmann::json::array();
  int64_t mismatched = 0;
  for (const auto& step : run.steps) {
    ++v.records;
    const calibrate::Record& r = step.record;
    if (r.oom) {
      ++v.oom;
      continue;
    }
    const auto i = static_cast<size_t>(step.index);
    if (!predicted.is_array() || i >= predicted.size() || predicted[i].value("width", int64_t{-1}) != r.width ||
        predicted[i].value("rows", nlohmann::json()) != nlohmann::json(r.rows)) {
      ++mismatched;
      continue;
    }
    std::optional<double> p = number(predicted[i], predicted_key(m, true));
    if (p && m == io::Metric::step_time)
      *p += number(predicted[i], "first_seen_s").value_or(0) + number(predicted[i], "run_start_s").value_or(0);
    const auto measured = measured_of(m, r);
    if (!p) ++v.unpredicted;
    if (!p || !measured || *measured <= 0) continue;
    (cold || report::jit_cache_growth(r) > 0 ? v.apart : v.steady).emplace_back(*p, *measured);
  }
  if (mismatched > 0)
    v.notes.push_back(std::to_string(mismatched) + " micro-batch(es) not the planned ones (not compared)");
}

std::vector<calibrate::Record>::const_iterator first_oom(const std::vector<calibrate::Record>& records) {
  return std::find_if(records.begin(), records.end(), [](const calibrate::Record& r) { return r.oom; });
}

// "out of memory at micro-batch 25 (1342+8192 x 8192)", or empty where every micro-batch ran.
std::string oom_note(const std::vector<calibrate::Record>& records) {
  const auto oom = first_oom(records);
  if (oom == records.end()) return "";
  std::string rows;
  for (int64_t n : oom->rows) {
    if (!rows.empty()) rows += '+';
    rows += std::to_string(n);
  }
  return "out of memory at micro-batch " + std::to_string(oom - records.begin()) + " (" + rows + " x " +
         std::to_string(oom->width) + ")";
}

// What a report needs of one plan item's run: its recorded run, its prediction line, the planner's replay.
struct RunFacts {
  const calibrate::RecordedRun* run = nullptr;
  const nlohmann::json* line = nullptr;
  report::RunCheck check;
  bool complete = false;
};

struct Context {
  const io::Campaign& c;
  const Lines& lines;
  const std::vector<io::PlanItem>& plan;
  const std::vector<std::vector<calibrate::Record>>& records;
  std::map<size_t, std::vector<calibrate::RecordedRun>> runs;  // by plan item
  std::map<size_t, ItemPredictor> predictors;                  // by campaign item

  // A run that ran out of memory ends there: the executor may go on with the next micro-batches, but a trainer
  // would have stopped, so the run is the records before the first OOM (a partial run, named on its rows).
  const std::vector<calibrate::RecordedRun>& runs_of(size_t i) {
    auto it = runs.find(i);
    if (it != runs.end()) return it->second;
    const std::vector<calibrate::Record> before(records[i].begin(), first_oom(records[i]));
    return runs.emplace(i, calibrate::read_runs(before, plan[i].id)).first->second;
  }
  const model::StepModel& model_of(size_t item) {
    auto it = predictors.find(item);
    if (it == predictors.end()) it = predictors.emplace(item, item_predictor(c, c.items[item])).first;
    return *it->second.model;
  }
  RunFacts facts(size_t i) {
    RunFacts f;
    f.run = recorded_run(runs_of(i), plan[i]);
    f.line = run_line(lines, plan[i], c.items[plan[i].item]);
    if (f.run == nullptr || f.line == nullptr) return f;
    f.check = report::check_runs({*f.run}, model_of(plan[i].item)).runs.front();
    f.complete = static_cast<int64_t>(f.run->steps.size()) == f.line->value("micro_batches_count", int64_t{-1});
    return f;
  }
};

bool cold_or_jit(const io::PlanItem& p, const RunFacts& f) { return p.label == "cold" || f.check.jit_batches > 0; }

// A run's registered wall clock; one set apart (cold or JIT-grown) is held to the warm wall clock plus the compiles
// its prediction names (0 where it names none, or predates them): what a cold machine should take. The run rows and
// the pad / bucket ratio read it alike, so a ratio compares like with like.
std::optional<double> predicted_run_s(const nlohmann::json& line, bool apart) {
  const auto warm = number(line, "predicted_wall_clock_s");
  if (!warm) return std::nullopt;
  return *warm + (apart ? number(line, "predicted_compile_s").value_or(0) : 0.0);
}

std::string index_list(const std::vector<int64_t>& indices) {
  std::string out;
  for (int64_t i : indices) {
    if (!out.empty()) out += ',';
    out += std::to_string(i);
  }
  return out.empty() ? "none" : out;
}

// The machine's kernel compiles the prediction names (micro-batch indices, docs/host.md) against the micro-batches
// whose records grew the JIT cache; empty when the prediction predates them.
std::string compiles_note(const RunFacts& f) {
  if (!f.line->contains("predicted_compiles") || !(*f.line)["predicted_compiles"].is_array()) return "";
  std::vector<int64_t> predicted, measured;
  for (const auto& i : (*f.line)["predicted_compiles"])
    if (i.is_number_integer()) predicted.push_back(i.get<int64_t>());
  for (const auto& step : f.run->steps)
    if (report::jit_cache_growth(step.record) > 0) measured.push_back(step.index);
  if (predicted.empty() && measured.empty()) return "";
  return "kernel compiles predicted at micro-batch " + index_list(predicted) + " (" +
         report::fixed(number(*f.line, "predicted_compile_s").value_or(0), 1) + " s), measured at " +
         index_list(measured);
}

void wall_clock_values(Context& ctx, size_t i, Values& v) {
  const RunFacts f = ctx.facts(i);
  if (f.run == nullptr) return;
  ++v.records;
  if (f.line == nullptr) {
    ++v.unpredicted;
    return;
  }
  if (!f.complete) {
    v.notes.push_back("partial run: " + std::to_string(f.run->steps.size()) + " of " +
                      std::to_string(f.line->value("micro_batches_count", int64_t{0})) + " micro-batches");
    if (const std::string oom = oom_note(ctx.records[i]); !oom.empty()) v.notes.push_back(oom);
    return;
  }
  const bool apart = cold_or_jit(ctx.plan[i], f);
  const auto predicted = predicted_run_s(*f.line, apart);
  if (!predicted) return;
  (apart ? v.apart : v.steady).emplace_back(*predicted, f.check.measured_s);
  v.notes.push_back("replay " + report::fixed(f.check.predicted_s, 2) + " s" +
                    (f.check.jit_batches > 0 ? ", " + std::to_string(f.check.jit_batches) + " JIT micro-batch(es)" : ""));
  if (const std::string note = compiles_note(f); !note.empty()) (apart ? v.apart_notes : v.notes).push_back(note);
}

ReportRow make_row(const std::string& item, io::Metric m, const std::vector<std::pair<double, double>>& values,
                   const io::Goal& goal, bool apart) {
  ReportRow row;
  row.item = item;
  row.metric = io::metric_name(m);
  row.unit = m == io::Metric::step_time || m == io::Metric::run_wall_clock ? "s"
             : m == io::Metric::pad_bucket_ratio                          ? "ratio"
                                                                          : "GiB";
  row.goal = goal.text();
  row.apart = apart;
  row.n = static_cast<int64_t>(values.size());
  row.pass = !values.empty();
  for (const auto& [p, meas] : values) {
    const double e = p / meas - 1.0;
    row.predicted += p;
    row.measured += meas;
    row.mean_error += e;
    row.mape += std::abs(e);
    if (std::abs(e) >= std::abs(row.max_error)) row.max_error = e;
    row.pass = row.pass && goal.passes(e);
  }
  if (row.n > 0)
    for (double* x : {&row.predicted, &row.measured, &row.mean_error, &row.mape}) *x /= static_cast<double>(row.n);
  return row;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// A judged row when anything steady was measured or nothing at all was (a miss: no measurement), an apart row
// for what was set apart.
void add_rows(CampaignReport& out, const std::string& item, io::Metric m, const Values& v, const io::Goal& goal) {
  std::vector<std::string> notes = v.notes;
  if (v.oom > 0) notes.push_back(std::to_string(v.oom) + " OOM");
  if (v.unpredicted > 0) notes.push_back(std::to_string(v.unpredicted) + " without a predicted figure");
  if (!v.steady.empty() || v.apart.empty()) {
    ReportRow row = make_row(item, m, v.steady, goal, false);
    row.note = v.records == 0 ? join({"no records"}) : join(notes);
    if (row.n == 0 && row.note.empty()) row.note = "nothing comparable";
    out.rows.push_back(row);
  }
  if (!v.apart.empty()) {
    ReportRow row = make_row(item, m, v.apart, goal, true);
    row.note = "cold kernel cache or JIT growth: not judged";
    for (const auto& n : v.apart_notes) row.note += "; " + n;
    out.rows.push_back(row);
  }
}

// The processes of one campaign item that share a prediction (the repeats of one probe set or one policy).
// In plan order.
using Groups = std::vector<std::pair<std::string, std::vector<size_t>>>;
Groups by_base(const std::vector<io::PlanItem>& plan, size_t item) {
  Groups out;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].item != item) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == plan[i].base_id; });
    if (it == out.end()) it = out.insert(out.end(), {plan[i].base_id, {}});
    it->second.push_back(i);
  }
  return out;
}

Groups::const_iterator group(const Groups& groups, const std::string& base) {
  return std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == base; });
}

void ratio_rows(Context& ctx, CampaignReport& out, size_t item, const io::CampaignCheck& check) {
  const auto groups = by_base(ctx.plan, item);
  const std::string id = ctx.c.items[item].id;
  const auto pad = group(groups, id + "/pad-to-longest"), bucket = group(groups, id + "/bucket-to-pair");
  if (pad == groups.end() || bucket == groups.end()) return;
  Values v;
  for (size_t k = 0; k < pad->second.size() && k < bucket->second.size(); ++k) {
    const RunFacts a = ctx.facts(pad->second[k]), b = ctx.facts(bucket->second[k]);
    if (a.run == nullptr || b.run == nullptr) continue;
    v.records += 2;
    if (!a.complete || !b.complete) {
      v.notes.push_back("a partial run");
      continue;
    }
    const bool apart_a = cold_or_jit(ctx.plan[pad->second[k]], a);
    const bool apart_b = cold_or_jit(ctx.plan[bucket->second[k]], b);
    const auto pa = predicted_run_s(*a.line, apart_a), pb = predicted_run_s(*b.line, apart_b);
    if (!pa || !pb || *pb <= 0) continue;
    const bool apart = apart_a || apart_b;
    (apart ? v.apart : v.steady).emplace_back(*pa / *pb, a.check.measured_s / b.check.measured_s);
  }
  add_rows(out, id + "/pad-to-longest : bucket-to-pair", check.metric, v, check.goal);
}

void check_rows(Context& ctx, CampaignReport& out, const io::CampaignCheck& check) {
  for (size_t item : io::covered_items(ctx.c, check)) {
    if (check.metric == io::Metric::pad_bucket_ratio) {
      ratio_rows(ctx, out, item, check);
      continue;
    }
    for (const auto& [base, processes] : by_base(ctx.plan, item)) {
      const io::PlanItem& first = ctx.plan[processes.front()];
      if (check.metric == io::Metric::run_wall_clock && first.probes) continue;
      Values v;
      for (size_t i : processes) {
        const io::PlanItem& p = ctx.plan[i];
        if (check.metric == io::Metric::run_wall_clock) {
          wall_clock_values(ctx, i, v);
        } else if (p.probes) {
          probe_values(check.metric, ctx.lines, p, ctx.c.items[p.item], ctx.records[i], v);
        } else {
          const RunFacts f = ctx.facts(i);
          if (f.run != nullptr && f.line != nullptr) micro_batch_values(check.metric, *f.line, *f.run, p.label == "cold", v);
          else if (f.run != nullptr) v.records += static_cast<int64_t>(f.run->steps.size()), ++v.unpredicted;
        }
      }
      add_rows(out, base, check.metric, v, check.goal);
    }
  }
}

std::string signed_percent(double e) { return (e > 0 ? "+" : "") + report::percent(e, 1); }

std::string value_text(double v, const std::string& unit) {
  if (unit == "ratio") return report::fixed(v, 3);
  return report::fixed(v, unit == "GiB" ? 2 : 3) + " " + unit;
}

std::string miss_text(const ReportRow& r) {
  if (r.n == 0) return r.item + " " + r.metric + ": nothing measured to compare (" + r.note + ")";
  return r.item + " " + r.metric + ": MAPE " + report::percent(r.mape, 1) + ", max " + signed_percent(r.max_error) +
         " over " + std::to_string(r.n) + " value(s), goal " + r.goal;
}

void markdown_table(std::ostream& out, const std::vector<const ReportRow*>& rows) {
  out << "| item | metric | n | predicted | measured | mean error | MAPE | max error | goal | result | note |\n"
      << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const ReportRow* r : rows) {
    const bool some = r->n > 0;
    out << "| " << r->item << " | " << r->metric << " | " << r->n << " | "
        << (some ? value_text(r->predicted, r->unit) : "") << " | " << (some ? value_text(r->measured, r->unit) : "")
        << " | " << (some ? signed_percent(r->mean_error) : "") << " | " << (some ? report::percent(r->mape, 1) : "")
        << " | " << (some ? signed_percent(r->max_error) : "") << " | " << r->goal << " | "
        << (r->apart ? "apart" : r->pass ? "pass" : "MISS") << " | " << r->note << " |\n";
  }
}

}  // namespace

CampaignReport build_report(const io::Campaign& c, const std::string& records, const std::string& prediction) {
  CampaignReport out;
  out.campaign = c.file;
  out.prediction = prediction.empty() ? c.prediction : prediction;
  out.records = records;
  const Lines lines = read_prediction(prediction.empty() ? c.at_root(c.prediction) : prediction);
  const std::vector<io::PlanItem> plan = io::plan_items(c);
  std::vector<std::string> notes;
  const auto assigned = assign_records(c, plan, records, notes);
  Context ctx{c, lines, plan, assigned, {}, {}};
  for (const auto& check : c.checks) check_rows(ctx, out, check);
  for (const auto& r : out.rows)
    if (!r.apart && !r.pass) out.misses.push_back(miss_text(r));
  out.notes = notes;
  return out;
}

std::string report_markdown(const CampaignReport& r) {
  std::ostringstream out;
  for (const auto& m : r.misses) out << "MISS " << m << "\n";
  if (!r.misses.empty()) out << "\n";
  out << "Campaign `" << r.campaign << "`: records `" << r.records << "` against the prediction `" << r.prediction
      << "` (error = predicted / measured - 1).\n\n";
  std::vector<const ReportRow*> judged, apart;
  for (const auto& row : r.rows) (row.apart ? apart : judged).push_back(&row);
  markdown_table(out, judged);
  if (!apart.empty()) {
    out << "\nSet apart (a cold kernel cache or JIT growth; not judged):\n\n";
    markdown_table(out, apart);
  }
  for (const auto& n : r.notes) out << "\nNote: " << n << ".\n";
  return out.str();
}

nlohmann::json report_json(const CampaignReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j{{"item", row.item},   {"metric", row.metric}, {"unit", row.unit}, {"n", row.n},
                     {"goal", row.goal},   {"judged", !row.apart}, {"note", row.note}};
    if (!row.apart) j["pass"] = row.pass;
    if (row.n > 0) {
      j["predicted"] = row.predicted;
      j["measured"] = row.measured;
      j["mean_error_rel"] = row.mean_error;
      j["mape_rel"] = row.mape;
      j["max_error_rel"] = row.max_error;
    }
    rows.push_back(std::move(j));
  }
  return {{"campaign", r.campaign}, {"prediction", r.prediction}, {"records", r.records}, {"rows", rows},
          {"misses", r.misses}, {"notes", r.notes}};
}

report::Table report_table(const CampaignReport& r) {
  report::Table t{{"item", "metric", "unit", "n", "predicted", "measured", "mean_error_rel", "mape_rel", "max_error_rel",
                   "goal", "judged", "pass", "note"},
                  {}};
  for (const auto& row : r.rows) {
    const auto num = [&](double v) { return row.n > 0 ? report::csv_number(v) : std::string(); };
    t.rows.push_back({row.item, row.metric, row.unit, std::to_string(row.n), num(row.predicted), num(row.measured),
                      num(row.mean_error), num(row.mape), num(row.max_error), row.goal, row.apart ? "false" : "true",
                      row.apart ? "" : row.pass ? "true" : "false", row.note});
  }
  return t;
}

}  // namespace stepcast::campaign
