#include "calibrate/run_costs.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include "calibrate/run_records.hpp"
#include "model/step_model.hpp"

namespace stepcast::calibrate {
namespace {

// The steady step of a record under the coefficients being fitted, with the record's own model and adapters:
// one StepModel per (model, LoRA plan) met.
class SteadySteps {
 public:
  SteadySteps(const FitShapes& shapes, const model::Coefficients& c) : shapes_(shapes), c_(c) {}
  double step_s(const Record& r) { return model_of(r).step_s(to_batch(r)); }
  // The cuDNN attention graphs the record's shape builds when new (model/features.hpp, cudnn_graphs): the
  // first-seen term is a cost per graph.
  int graphs(const Record& r) { return std::popcount(model_of(r).first_seen_graphs(to_batch(r))); }

 private:
  const model::StepModel& model_of(const Record& r) {
    const model::LoraChoice lora = lora_choice(r, c_.lora_rank);
    auto& m = models_[r.model + "|" + lora_key(lora)];
    if (!m) m = std::make_unique<model::StepModel>(shapes_.of(r), c_, model::gpu_info(c_.gpu), lora);
    return *m;
  }
  const FitShapes& shapes_;
  const model::Coefficients& c_;
  std::map<std::string, std::unique_ptr<model::StepModel>> models_;
};

struct Samples {
  std::vector<double> values;
  int from_probes = 0;
  int from_runs = 0;
};


// A micro-batch that JIT-compiled kernels into a cold driver cache (tools/device/hf_campaign.py labels them):
// a one-off per machine, not a first-seen or start cost of the stack.
bool compiled_kernels(const Record& r) {
  const auto it = r.extra.find("jit_cache_files_added");
  return it != r.extra.end() && it->is_number_integer() && it->get<int64_t>() > 0;
}

std::optional<double> number(const Record& r, const char* key) {
  const auto it = r.extra.find(key);
  if (it == r.extra.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

bool flag(const Record& r, const char* key) {
  const auto it = r.extra.find(key);
  return it != r.extra.end() && it->is_boolean() && it->get<bool>();
}

std::string fmt(double v) {
  std::ostringstream o;
  o.precision(3);
  o << v;
  return o.str();
}

void set_term(model::Term& term, const Samples& s, const std::string& what) {
  if (s.values.empty()) {
    term = {0, 0, false, "not selected: no " + what + " in these records"};
    return;
  }
  term.value = std::max(0.0, median(s.values));
  term.std_error = median_std_error(s.values);
  term.selected = true;
  term.reason = "median of " + std::to_string(s.values.size()) + " " + what + " (" + std::to_string(s.from_probes) +
                " from probes, " + std::to_string(s.from_runs) + " from recorded runs)";
}

Samples optimizer_samples(const std::vector<Record>& records, const std::vector<RecordedRun>& runs,
                          std::vector<double>& first_extra) {
  Samples s;
  for (const Record& r : records) {
    const auto it = r.extra.find("optimizer_times_s");
    if (it == r.extra.end() || !it->is_array() || it->size() < 2) continue;
    for (size_t i = 1; i < it->size(); ++i)
      if ((*it)[i].is_number()) {
        s.values.push_back((*it)[i].get<double>());
        ++s.from_probes;
      }
  }
  for (const RecordedRun& run : runs) {
    bool first = true;
    for (const RunStep& step : run.steps) {
      if (!step.optimizer_s) continue;
      if (!first) {
        s.values.push_back(*step.optimizer_s);
        ++s.from_runs;
      }
      first = false;
    }
  }
  const double steady = s.values.empty() ? 0.0 : median(s.values);
  for (const RecordedRun& run : runs)
    for (const RunStep& step : run.steps)
      if (step.optimizer_s) {
        first_extra.push_back(*step.optimizer_s - steady);
        break;
      }
  return s;
}

}  // namespace

void fit_run_costs(const FitShapes& shapes, const std::vector<Record>& records, const std::string& file,
                   model::Coefficients& coefficients, std::vector<std::string>& notes) {
  const std::vector<RecordedRun> runs = read_runs(records, file);
  SteadySteps steady(shapes, coefficients);
  Samples first_seen, start;
  std::vector<double> start_probe_raw;  // first_step_s - step_s of the process's first point
  for (const Record& r : records) {
    const auto first = number(r, "first_step_s");
    if (!first || !r.step_s || r.oom || !flag(r, "first_seen") || compiled_kernels(r)) continue;
    if (flag(r, "first_in_process")) {
      start_probe_raw.push_back(*first - *r.step_s);
    } else if (const int g = steady.graphs(r); g > 0) {
      first_seen.values.push_back((*first - *r.step_s) / g);
      ++first_seen.from_probes;
    }
  }
  std::vector<double> run_start_raw;  // index 0 of each run: step_s - steady step
  for (const RecordedRun& run : runs)
    for (const RunStep& step : run.steps) {
      if (compiled_kernels(step.record)) continue;
      const double excess = *step.record.step_s - steady.step_s(step.record);
      if (step.index == 0) {
        run_start_raw.push_back(excess);
      } else if (const int g = step.first_seen ? steady.graphs(step.record) : 0; g > 0) {
        first_seen.values.push_back(excess / g);
        ++first_seen.from_runs;
      }
    }
  set_term(coefficients.run[model::kFirstSeen], first_seen, "first-step excesses over the steady step, per cuDNN graph");
  const double fs = coefficients.run[model::kFirstSeen].value;
  for (double x : start_probe_raw) {
    start.values.push_back(x - fs);
    ++start.from_probes;
  }
  for (double x : run_start_raw) {
    start.values.push_back(x - fs);
    ++start.from_runs;
  }
  std::vector<double> first_optimizer_extra;
  const Samples optimizer = optimizer_samples(records, runs, first_optimizer_extra);
  set_term(coefficients.run[model::kOptimizerStep], optimizer, "optimizer steps after each process's first");
  set_term(coefficients.run[model::kRunStart], start, "process-first steps' excesses over a first-seen step");
  if (!first_optimizer_extra.empty() && coefficients.run[model::kRunStart].selected) {
    const double extra = std::max(0.0, median(first_optimizer_extra));
    coefficients.run[model::kRunStart].value += extra;
    coefficients.run[model::kRunStart].reason += ", plus the first optimizer step's extra " + fmt(extra) + " s";
  }
  int64_t jit = 0;
  for (const RecordedRun& run : runs)
    for (const RunStep& step : run.steps) jit += compiled_kernels(step.record) ? 1 : 0;
  if (jit > 0)
    notes.push_back("run costs: " + std::to_string(jit) + " micro-batch(es) that JIT-compiled kernels into a cold driver "
                    "cache left out (a one-off per machine, docs/host.md)");
  if (!runs.empty())
    notes.push_back("run costs: " + std::to_string(runs.size()) + " recorded run(s) used for first-seen, start and "
                    "optimizer costs, not for the steady step fit");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Standard error of the median of n samples: sqrt(pi/2) * sd / sqrt(n), with sd from the median absolute
// deviation (1.4826 MAD) so that a few cold-cache stalls do not inflate it.
double median_std_error(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = median(v);
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::abs(x - m));
  const double sd = 1.4826 * median(dev);
  return 1.2533 * sd / std::sqrt(static_cast<double>(v.size()));
}

}  // namespace stepcast::calibrate
