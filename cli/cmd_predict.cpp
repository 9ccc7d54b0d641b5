// stepcast predict: step time and peak memory from a coefficient file, for every record of a
// measurements file (with the error where a measurement exists) or for one micro-batch. No Ceres.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>

#include "calibrate/records.hpp"
#include "calibrate/run_records.hpp"
#include "cli/app.hpp"
#include "cli/figures.hpp"
#include "cli/transfer_options.hpp"
#include "model/limits.hpp"
#include "io/coefficients_io.hpp"
#include "report/csv.hpp"
#include "report/format.hpp"
#include "report/json_output.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/errors.hpp"
#include "model/step_model.hpp"
#include "model/transfer.hpp"

namespace stepcast::cli {

using report::fixed;
namespace {

struct PredictOptions {
  std::string coefficients;
  std::string model;
  std::string measurements;
  std::vector<int64_t> rows;
  int64_t width = 0;
  LoraOptions lora;  // the --rows batch's adapters (empty: the coefficients' rank on the family's default targets)
  Format format = Format::text;
  TransferOptions transfer;
};

// [lo, hi] of the 90 % step interval, or null when there is none (model/transfer.hpp step_interval).
nlohmann::json interval_json(const model::StepModel& m, const model::Transfer& t, const model::MicroBatch& b,
                             double step) {
  double lo = 0, hi = 0;
  if (!model::step_interval(t, m.features().step(b), step, b.has_padding(), lo, hi)) return nullptr;
  return {lo, hi};
}

std::string interval_text(const nlohmann::json& interval) {
  if (interval.is_null()) return " (90 %: no measured error for this transfer)";
  return " (90 %: " + fixed(interval[0].get<double>(), 3) + "-" + fixed(interval[1].get<double>(), 3) + " s)";
}

// The work each step term's coefficient multiplies (units: model/features.hpp), so that a category's measured
// kernel time (a CUPTI table) can be held against its own work: time / (work x peak) is its efficiency.
nlohmann::json work_json(const model::StepModel& m, const model::MicroBatch& b) {
  const model::StepFeatures f = m.features().step(b);
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < model::kStepTerms; ++i) j[model::step_term_names()[i]] = f.x[i];
  return j;
}

// The coefficients' fitted domain (null when the file does not record it) and the lines that say it.
nlohmann::json domain_json(const model::Transfer& t) { return io::coefficients_json(t.coefficients)["domain"]; }

std::string extrapolation_text(const model::Transfer& shaped) {
  if (shaped.extrapolation.empty()) return "";
  return "  extrapolated-shape: " + shaped.extrapolation + " (interval widened, docs/method.md \"Intervals\")";
}

nlohmann::json predict_record(const model::StepModel& m, const model::Transfer& whole, const calibrate::Record& r) {
  nlohmann::json j = calibrate::to_json(r);
  j["line"] = r.line;
  const auto b = calibrate::to_batch(r);
  const model::Transfer t = model::at_shape(whole, static_cast<int64_t>(b.rows.size()), b.width);
  j["provenance"] = provenance_json(t);
  if (!t.extrapolation.empty()) j["extrapolation"] = t.extrapolation;
  const double step = require_figure(m.step_s(b), r.where(), "predicted step_s");
  const double peak = require_figure(m.peak_gib(b, calibrate::run_position(r)), r.where(), "predicted peak_gib");
  const auto sides = m.sides(b);
  require_figure(sides.device_s, r.where(), "predicted device_s");
  require_figure(sides.host_s, r.where(), "predicted host_s");
  j["predicted_step_s"] = step;
  if (auto i = interval_json(m, t, b, step); !i.is_null()) j["step_interval_s"] = i;
  j["work"] = work_json(m, b);
  j["predicted_device_s"] = sides.device_s;
  j["predicted_host_s"] = sides.host_s;
  j["bound"] = sides.host_bound() ? "host" : "device";
  j["first_seen_graphs"] = std::popcount(m.first_seen_graphs(b));
  j["predicted_peak_gib"] = peak;
  if (r.step_s && !r.oom) j["step_error_rel"] = (step - *r.step_s) / *r.step_s;
  if (r.usable_peak()) j["peak_error_rel"] = (peak - *r.peak_gib) / *r.peak_gib;
  return j;
}

nlohmann::json memory_json(const model::MemoryTable& t) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& i : t.items) items.push_back({{"name", i.name}, {"bytes", i.bytes}, {"lifetime", i.lifetime}});
  return {{"items", items}, {"total_bytes", t.total_bytes()}, {"total_gib", t.total_gib()}};
}

void run_batch(const predict::Predictor& p, const PredictOptions& o) {
  const auto model = p.step_model();
  const model::StepModel& m = *model;
  const model::Transfer& whole = p.transfer;
  model::MicroBatch b;
  b.rows = o.rows;
  b.width = o.width > 0 ? o.width : *std::max_element(o.rows.begin(), o.rows.end());
  for (int64_t r : b.rows)
    if (r > b.width)
      throw InputError("--rows: a row of " + std::to_string(r) + " tokens. Violated constraint: <= --width " +
                       std::to_string(b.width));
  if (static_cast<int64_t>(b.rows.size()) > limits::kMaxRows || b.width > limits::kMaxWidth ||
      b.width * static_cast<int64_t>(b.rows.size()) > limits::kMaxTokensPerBatch)
    throw InputError("--rows / --width: " + std::to_string(b.rows.size()) + " rows x width " + std::to_string(b.width) +
                     ". Violated constraint: <= " + std::to_string(limits::kMaxRows) + " rows, width <= " +
                     std::to_string(limits::kMaxWidth) + ", rows x width <= " +
                     std::to_string(limits::kMaxTokensPerBatch) + " tokens");
  const std::string where = "--rows " + std::to_string(b.rows.size()) + " x " + std::to_string(b.width);
  const model::Transfer t = model::at_shape(whole, static_cast<int64_t>(b.rows.size()), b.width);
  const double step = require_figure(m.step_s(b), where, "predicted step_s");
  const auto sides = m.sides(b);
  const auto table = m.memory_table(b);
  require_figure(table.total_gib(), where, "predicted peak_gib");
  if (o.format == Format::csv) {
    report::Table csv{{"name", "bytes", "gib", "lifetime"}, {}};
    for (const auto& i : table.items)
      csv.rows.push_back({i.name, std::to_string(i.bytes), report::csv_number(static_cast<double>(i.bytes) / 1073741824.0),
                        i.lifetime});
    report::write_csv(std::cout, csv);
    return;
  }
  if (o.format == Format::json) {
    nlohmann::json j{{"provenance", provenance_json(t)},
                                {"predictor", p.first_line},
                                {"transfer", t.summary()},
                                {"domain", domain_json(t)},
                                {"rows", b.rows},
                                {"width", b.width},
                                {"predicted_step_s", step},
                                {"work", work_json(m, b)},
                                {"predicted_device_s", sides.device_s},
                                {"predicted_host_s", sides.host_s},
                                {"bound", sides.host_bound() ? "host" : "device"},
                                {"first_seen_s", m.first_seen_s(b)},
                                {"first_seen_graphs", std::popcount(m.first_seen_graphs(b))},
                                {"predicted_peak_gib", table.total_gib()},
                                {"memory", memory_json(table)}};
    // Absent, not null, when the transfer has no measured error (every JSON figure is a number).
    if (auto i = interval_json(m, t, b, step); !i.is_null()) j["step_interval_s"] = i;
    if (!t.extrapolation.empty()) j["extrapolation"] = t.extrapolation;
    if (!p.notes.empty()) j["notes"] = p.notes;
    report::print_json(std::cout, "predict", j);
    return;
  }
  print_predictor(std::cout, p);
  std::cout << model::domain_text(t.coefficients.domain) << "\n";
  std::cout << "rows " << b.rows.size() << " x width " << b.width << " (" << b.real_tokens() << " real tokens, "
            << fixed(100.0 * (1.0 - static_cast<double>(b.real_tokens()) / static_cast<double>(b.padded_tokens())), 1)
            << " % padding)\n";
  std::cout << "  predicted step " << fixed(step, 3) << " s" << interval_text(interval_json(m, t, b, step)) << ", peak " << fixed(table.total_gib(), 2) << " GiB\n";
  if (!t.extrapolation.empty()) std::cout << extrapolation_text(t) << "\n";
  if (sides.host_s > 0)
    std::cout << "  bound by the " << (sides.host_bound() ? "host" : "device") << ": device " << fixed(sides.device_s, 3)
              << " s, host " << fixed(sides.host_s, 3) << " s (" << fixed(m.coefficients().launches_per_step, 0)
              << " launches), overlap p = " << fixed(m.coefficients().overlap_exponent, 1) << "\n";
  else
    std::cout << "  bound by the device (these coefficients have no host term)\n";
  if (const int graphs = std::popcount(m.first_seen_graphs(b)); m.first_seen_s(b) > 0)
    std::cout << "  a shape new to the process pays " << fixed(m.first_seen_s(b), 3) << " s once more (" << graphs
              << " cuDNN attention graph" << (graphs == 1 ? "" : "s") << " built)\n";
  else if (graphs == 0)
    std::cout << "  a shape new to the process builds no cuDNN attention graph: no first-seen cost\n";
  for (const auto& i : table.items)
    std::cout << "    " << i.name << std::string(36 - std::min<size_t>(35, i.name.size()), ' ')
              << fixed(static_cast<double>(i.bytes) / 1073741824.0, 3) << " GiB  (" << i.lifetime << ")\n";
}

// --format csv: one row per record, the measurement beside the prediction where there is one.
report::Table records_table(const nlohmann::json& records) {
  auto number = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_number() ? report::csv_number(j[key].get<double>()) : std::string();
  };
  report::Table t{{"line", "rows", "width", "predicted_step_s", "step_s", "step_error_rel", "predicted_peak_gib",
                   "peak_gib", "peak_error_rel", "bound", "oom"},
                  {}};
  for (const auto& j : records) {
    std::string rows;
    for (const auto& r : j["rows"]) {
      if (!rows.empty()) rows += ' ';
      rows += std::to_string(r.get<int64_t>());
    }
    t.rows.push_back({std::to_string(j["line"].get<int64_t>()), rows, std::to_string(j["width"].get<int64_t>()),
                      number(j, "predicted_step_s"), number(j, "step_s"), number(j, "step_error_rel"),
                      number(j, "predicted_peak_gib"), number(j, "peak_gib"), number(j, "peak_error_rel"),
                      j["bound"].get<std::string>(), j.value("oom", false) ? "true" : "false"});
  }
  return t;
}

void run_records(const std::vector<calibrate::Record>& records, const predict::Predictor& p, const PredictOptions& o) {
  const model::Transfer& t = p.transfer;
  require_records_on_gpu(records, t, p.coefficients_path, "predict");
  calibrate::check_lora_targets(records, model::lora_able_names(p.modules), p.shape.name);
  // Each record is priced with the adapters it trained (calibrate::lora_choice): one model per LoRA plan.
  std::map<std::string, std::unique_ptr<model::StepModel>> models;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : records) {
    const model::LoraChoice lora = calibrate::lora_choice(r, t.coefficients.lora_rank);
    auto& m = models[calibrate::lora_key(lora)];
    if (!m) m = p.step_model(lora);
    out.push_back(predict_record(*m, t, r));
  }
  if (o.format == Format::json) {
    nlohmann::json j{{"provenance", provenance_json(t)}, {"predictor", p.first_line},  {"transfer", t.summary()},
                     {"domain", domain_json(t)},         {"coefficients", p.coefficients_path},
                     {"measurements", o.measurements},   {"records", out}};
    if (!p.notes.empty()) j["notes"] = p.notes;
    report::print_json(std::cout, "predict", j);
    return;
  }
  if (o.format == Format::csv) {
    if (t.transferred()) std::cerr << p.first_line << "\n";  // stdout stays one CSV table
    report::write_csv(std::cout, records_table(out));
    return;
  }
  print_predictor(std::cout, p);
  std::cout << model::domain_text(t.coefficients.domain) << "\n";
  double sum_abs = 0, max_abs = 0;
  int64_t n = 0;
  for (const auto& j : out) {
    std::cout << o.measurements << ":" << j["line"].get<int64_t>() << "  " << j["rows"].size() << " x "
              << j["width"].get<int64_t>() << "  step " << fixed(j["predicted_step_s"].get<double>(), 3) << " s"
              << interval_text(j.value("step_interval_s", nlohmann::json()));
    if (j.contains("step_error_rel"))
      std::cout << " (measured " << fixed(j["step_s"].get<double>(), 3) << ", "
                << fixed(j["step_error_rel"].get<double>() * 100, 2) << " %)";
    std::cout << "  peak " << fixed(j["predicted_peak_gib"].get<double>(), 2) << " GiB";
    if (j.contains("peak_error_rel"))
      std::cout << " (measured " << fixed(j["peak_gib"].get<double>(), 2) << ", "
                << fixed(j["peak_error_rel"].get<double>() * 100, 2) << " %)";
    if (j.value("oom", false)) std::cout << " [OOM record]";
    if (j.contains("extrapolation"))
      std::cout << " [extrapolated-shape: " << j["extrapolation"].get<std::string>() << "]";
    std::cout << "\n";
    if (j.contains("step_error_rel")) {
      const double e = std::abs(j["step_error_rel"].get<double>());
      sum_abs += e;
      max_abs = std::max(max_abs, e);
      ++n;
    }
  }
  if (n > 0)
    std::cout << "step MAPE " << fixed(100.0 * sum_abs / static_cast<double>(n), 2) << " %, max "
              << fixed(100.0 * max_abs, 2) << " % over " << n << " measured records\n";
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand("predict", "Predict step time and peak memory from a coefficient file");
  cmd->footer(
      "Examples:\n"
      "  stepcast predict --model scenarios/models/qwen2.5-7b.json --rows 4096,4096\n"
      "  stepcast predict --model llama-3-8b --rows 2048,1024 --width 2048 --lora-targets q_proj,v_proj --format json\n"
      "  stepcast predict --measurements measurements/records/h200-llama-3-8b.jsonl --format csv > predictions.csv\n"
      "  stepcast predict --model mistral-7b --gpu \"NVIDIA L40S\" --transfer --rows 4096\n"
      "  stepcast predict --coefficients my-fit.yaml --measurements m.jsonl   (your own calibration)\n"
      "Without --coefficients the GPU's default per-category predictor answers (scenarios/gpus.yaml), carried to\n"
      "the model asked (or the records' model); the first line says which predictor answered and why. JSON: an\n"
      "object whose `records` hold each record plus predicted_step_s, predicted_peak_gib, step_interval_s and,\n"
      "where measured, step_error_rel / peak_error_rel.");
  cmd->add_option("--coefficients", o->coefficients,
                  "Coefficient file (YAML) written by calibrate (default: the GPU's default predictor)");
  cmd->add_option("--model", o->model,
                  "config.json path or model name (default: the records', else the coefficients' model)");
  auto* meas = cmd->add_option("--measurements", o->measurements, "measurement records to predict (JSON Lines)");
  auto* rows = cmd->add_option("--rows", o->rows, "One micro-batch: real tokens of each row, comma-separated")
                   ->delimiter(',')
                   ->check(CLI::PositiveNumber);
  cmd->add_option("--width", o->width, "Padded width of the --rows batch (default: the longest row)")
      ->check(CLI::PositiveNumber);
  add_lora_options(cmd, o->lora, "The --rows batch");
  meas->excludes(rows);
  meas->excludes("--lora-targets");  // a record's own `lora` prices it
  meas->excludes("--lora-rank");
  meas->excludes("--autocast");
  add_transfer_options(cmd, o->transfer);
  add_format_option(cmd, o->format, true);
  cmd->callback([o]() {
    if (o->measurements.empty() && o->rows.empty())
      throw InputError("predict: nothing to predict. Violated constraint: give --measurements F.jsonl or --rows R1,R2");
    if (o->rows.empty()) {
      const auto records = calibrate::read_records_required(o->measurements);
      run_records(records, predict::choose_predictor(records_ask(records, o->coefficients, o->model, o->transfer)), *o);
      return;
    }
    predict::PredictorAsk ask = predictor_ask(o->coefficients, o->model, o->transfer);
    set_lora(ask, o->lora);
    run_batch(predict::choose_predictor(ask), *o);
  });
}

}  // namespace stepcast::cli
