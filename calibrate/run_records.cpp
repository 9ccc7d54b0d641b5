#include "calibrate/run_records.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "model/limits.hpp"
#include "model/errors.hpp"
#include "planner/batching.hpp"

namespace stepcast::calibrate {
namespace {


std::string shown(const nlohmann::json& value) { return limits::cut(value.dump()); }

// Reads the `run` object of one record; every problem goes to `problems` as "file:line: run.key ...".
class RunFieldReader {
 public:
  RunFieldReader(const nlohmann::json& run, const std::string& where, std::vector<std::string>& problems)
      : run_(run), where_(where), problems_(problems) {}

  const nlohmann::json* find(const char* key, bool required) {
    auto it = run_.find(key);
    if (it != run_.end()) return &*it;
    if (required) fail(std::string("run.") + key + " is missing. Violated constraint: required in a recorded run");
    return nullptr;
  }
  std::string text(const char* key) {
    const auto* v = find(key, true);
    if (v == nullptr) return {};
    if (!v->is_string() || v->get<std::string>().empty()) {
      fail(std::string("run.") + key + " = " + shown(*v) + ". Violated constraint: a non-empty string");
      return {};
    }
    return v->get<std::string>();
  }
  int64_t integer(const char* key, bool required, int64_t min, int64_t fallback, int64_t max = INT64_MAX) {
    const auto* v = find(key, required);
    if (v == nullptr) return fallback;
    if (!v->is_number_integer() || v->get<int64_t>() < min || v->get<int64_t>() > max) {
      fail(std::string("run.") + key + " = " + shown(*v) + ". Violated constraint: an integer >= " +
           std::to_string(min) + (max == INT64_MAX ? std::string() : " and <= " + std::to_string(max)));
      return fallback;
    }
    return v->get<int64_t>();
  }
  std::optional<double> seconds(const char* key, bool required) {
    const auto* v = find(key, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0 ||
        v->get<double>() > limits::kMaxSeconds) {
      fail(std::string("run.") + key + " = " + shown(*v) + ". Violated constraint: a number of seconds in [0, " +
           std::to_string(static_cast<int64_t>(limits::kMaxSeconds)) + "]");
      return std::nullopt;
    }
    return v->get<double>();
  }
  bool flag(const char* key) {
    const auto* v = find(key, false);
    if (v == nullptr) return false;
    if (!v->is_boolean()) fail(std::string("run.") + key + " = " + shown(*v) + ". Violated constraint: true or false");
    return v->is_boolean() && v->get<bool>();
  }
  std::vector<int32_t> lengths(const char* key) {
    const auto* v = find(key, false);
    if (v == nullptr) return {};
    bool good = v->is_array() && static_cast<int64_t>(v->size()) <= limits::kMaxSamples;
    if (good)
      for (const auto& n : *v)
        good = good && n.is_number_integer() && n.get<int64_t>() >= 1 && n.get<int64_t>() <= limits::kMaxWidth;
    if (!good) {
      fail(std::string("run.") + key + ". Violated constraint: a list of token counts in [1, " +
           std::to_string(limits::kMaxWidth) + "]");
      return {};
    }
    return v->get<std::vector<int32_t>>();
  }
  std::string optional_text(const char* key) { return find(key, false) == nullptr ? std::string() : text(key); }
  // run.documents: one list of document lengths per row of `rows`, each adding up to that row's tokens.
  std::vector<int32_t> documents(const std::vector<int64_t>& rows) {
    const auto* v = find("documents", false);
    if (v == nullptr) return {};
    std::vector<int32_t> flat;
    bool good = v->is_array() && v->size() == rows.size();
    for (size_t i = 0; good && i < rows.size(); ++i) {
      const auto& row = (*v)[i];
      int64_t sum = 0;
      good = row.is_array() && !row.empty() && static_cast<int64_t>(row.size()) <= limits::kMaxSamples;
      for (size_t d = 0; good && d < row.size(); ++d) {
        good = row[d].is_number_integer() && row[d].get<int64_t>() >= 1 && row[d].get<int64_t>() <= limits::kMaxWidth;
        if (good) sum += row[d].get<int64_t>();
        if (good) flat.push_back(row[d].get<int32_t>());
      }
      good = good && sum == rows[i];
    }
    if (!good) {
      fail("run.documents = " + shown(*v) + ". Violated constraint: one list of document lengths in [1, " +
           std::to_string(limits::kMaxWidth) + "] per row of `rows` (" + std::to_string(rows.size()) +
           "), each adding up to its row's tokens");
      return {};
    }
    return flat;
  }
  void fail(const std::string& message) { problems_.push_back(where_ + ": " + message); }

 private:
  const nlohmann::json& run_;
  const std::string& where_;
  std::vector<std::string>& problems_;
};

// A finite GiB figure in [0, limits::kMaxGiB] under `object.key`, or a problem.
class MemoryFieldReader {
 public:
  MemoryFieldReader(const nlohmann::json& object, std::string name, const std::string& where, std::vector<std::string>& problems)
      : object_(object), name_(std::move(name)), where_(where), problems_(problems) {}
  std::optional<double> gib(const char* key) {
    known_.push_back(key);
    const auto it = object_.find(key);
    if (it == object_.end()) return std::nullopt;
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 || it->get<double>() > limits::kMaxGiB) {
      fail(key, *it, "a number of GiB in [0, 1e9]");
      return std::nullopt;
    }
    return it->get<double>();
  }
  std::optional<int64_t> count(const char* key) {
    known_.push_back(key);
    const auto it = object_.find(key);
    if (it == object_.end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      fail(key, *it, "an integer >= 0");
      return std::nullopt;
    }
    return it->get<int64_t>();
  }
  std::optional<std::string> text(const char* key, const std::vector<std::string>& choices) {
    known_.push_back(key);
    const auto it = object_.find(key);
    if (it == object_.end()) return std::nullopt;
    if (!it->is_string() || std::find(choices.begin(), choices.end(), it->get<std::string>()) == choices.end()) {
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
      fail(key, *it, "one of " + list);
      return std::nullopt;
    }
    return it->get<std::string>();
  }
  // Unknown keys are errors: a typo must not silently drop a measurement.
  void finish() {
    for (const auto& [key, value] : object_.items())
      if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
        std::string list;
        for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
        problems_.push_back(where_ + ": " + name_ + "." + limits::cut(key) + " is not a field of " + name_ +
                            ". Violated constraint: one of " + list + " (calibrate/run_records.hpp)");
      }
  }

 private:
  void fail(const char* key, const nlohmann::json& v, const std::string& constraint) {
    problems_.push_back(where_ + ": " + name_ + "." + key + " = " + shown(v) + ". Violated constraint: " + constraint);
  }
  const nlohmann::json& object_;
  std::string name_;
  const std::string& where_;
  std::vector<std::string>& problems_;
  std::vector<std::string> known_;
};

const nlohmann::json* object_field(const Record& record, const char* key, const std::string& where,
                                   std::vector<std::string>& problems) {
  const auto it = record.extra.find(key);
  if (it == record.extra.end()) return nullptr;
  if (!it->is_object()) {
    problems.push_back(where + ": " + key + " = " + shown(*it) + ". Violated constraint: a JSON object");
    return nullptr;
  }
  return &*it;
}

std::optional<RunStepMemory> step_memory(const Record& record, const std::string& where, std::vector<std::string>& problems) {
  const nlohmann::json* object = object_field(record, "memory", where, problems);
  if (object == nullptr) return std::nullopt;
  MemoryFieldReader r(*object, "memory", where, problems);
  RunStepMemory m;
  m.allocated_before_gib = r.gib("allocated_before_gib");
  m.reserved_before_gib = r.gib("reserved_before_gib");
  m.forward_peak_gib = r.gib("forward_peak_gib");
  m.backward_peak_gib = r.gib("backward_peak_gib");
  m.allocated_after_gib = r.gib("allocated_after_gib");
  m.optimizer_peak_gib = r.gib("optimizer_peak_gib");
  m.optimizer_reserved_gib = r.gib("optimizer_reserved_gib");
  m.device_used_gib = r.gib("device_used_gib");
  m.card_total_gib = r.gib("card_total_gib");
  m.alloc_retries = r.count("alloc_retries");
  m.inactive_split_gib = r.gib("inactive_split_gib");
  r.finish();
  return m;
}

std::optional<RunMemoryStart> memory_start(const Record& record, const std::string& where, std::vector<std::string>& problems) {
  const nlohmann::json* object = object_field(record, "memory_start", where, problems);
  if (object == nullptr) return std::nullopt;
  MemoryFieldReader r(*object, "memory_start", where, problems);
  RunMemoryStart m;
  m.weights_gib = r.gib("weights_gib");
  m.context_gib = r.gib("context_gib");
  m.reserved_gib = r.gib("reserved_gib");
  m.card_total_gib = r.gib("card_total_gib");
  if (const auto a = r.text("allocator", {"default", "expandable_segments", "expandable-segments"}))
    m.allocator = *model::parse_allocator(*a);
  r.finish();
  return m;
}

std::optional<double> peak_reserved(const Record& record, const std::string& where, std::vector<std::string>& problems) {
  const auto it = record.extra.find("peak_reserved_gib");
  if (it == record.extra.end()) return std::nullopt;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 || it->get<double>() > limits::kMaxGiB) {
    problems.push_back(where + ": peak_reserved_gib = " + shown(*it) + ". Violated constraint: a number of GiB in [0, 1e9]");
    return std::nullopt;
  }
  return it->get<double>();
}

struct Parsed {
  RunFields fields;
  RunStep step;
  std::optional<RunMemoryStart> memory_start;
};

std::string where_of(const Record& record, const std::string& file) {
  return (record.file.empty() ? file : record.file) + ":" + std::to_string(record.line);
}

std::optional<Parsed> parse_step(const Record& record, const std::string& file, std::vector<std::string>& problems) {
  const std::string where = where_of(record, file);
  const auto it = record.extra.find("run");
  if (it == record.extra.end() || !it->is_object()) {
    problems.push_back(where + ": a record with \"probe\": \"run\" needs a `run` object (calibrate/run_records.hpp)");
    return std::nullopt;
  }
  const size_t before = problems.size();
  RunFieldReader r(*it, where, problems);
  Parsed p;
  RunFields& f = p.fields;
  f.id = r.text("id");
  f.policy = r.text("policy");
  f.micro_batch = r.integer("micro_batch", true, 1, 0, limits::kMaxRows);
  f.accumulation = r.integer("accumulation", true, 1, 1, limits::kMaxAccumulation);
  f.max_length = r.integer("max_length", false, 1, 0, limits::kMaxWidth);
  f.pad_to_multiple_of = r.integer("pad_to_multiple_of", false, 1, 1, planner::kMaxPadToMultipleOf);
  f.seed = static_cast<uint64_t>(r.integer("seed", false, 0, 0));
  f.index = r.integer("index", true, 0, 0, limits::kMaxSamples);
  f.optimizer_step = r.integer("optimizer_step", true, 0, 0, limits::kMaxSamples);
  f.first_seen = r.flag("first_seen");
  f.optimizer_s = r.seconds("optimizer_s", false);
  f.elapsed_s = r.seconds("elapsed_s", true).value_or(0);
  f.corpus_lengths = r.lengths("corpus_lengths");
  f.packer = r.optional_text("packer");
  const std::string attention = r.optional_text("pack_attention");
  if (!attention.empty()) {
    f.pack_attention = planner::parse_pack_attention(attention);
    if (!f.pack_attention) r.fail("run.pack_attention = \"" + attention + "\". Violated constraint: one of varlen, block-mask, cross");
  }
  std::vector<int32_t> documents = r.documents(record.rows);
  if (!attention.empty() && !it->contains("documents"))
    r.fail("run.pack_attention is set but run.documents is missing. Violated constraint: a packed micro-batch names its documents");
  if (attention.empty() && !documents.empty())
    r.fail("run.documents is set but run.pack_attention is missing. Violated constraint: a packed micro-batch names its attention mode");
  if (record.oom || !record.step_s) r.fail("a run's micro-batch needs a measured step_s (not an OOM record)");
  if (f.micro_batch > 0 && record.rows.size() > static_cast<size_t>(f.micro_batch))
    r.fail("rows has " + std::to_string(record.rows.size()) + " rows. Violated constraint: <= run.micro_batch = " +
           std::to_string(f.micro_batch));
  std::optional<double> reserved = peak_reserved(record, where, problems);
  std::optional<RunStepMemory> memory = step_memory(record, where, problems);
  p.memory_start = memory_start(record, where, problems);
  if (problems.size() != before) return std::nullopt;
  p.step = RunStep{record, f.index, f.optimizer_step, f.first_seen, f.optimizer_s, f.elapsed_s, std::move(documents),
                   reserved, std::move(memory)};
  return p;
}

void check_run(const RecordedRun& run, const std::vector<std::string>& wheres, std::vector<std::string>& problems) {
  for (size_t i = 0; i < run.steps.size(); ++i) {
    const std::string& where = wheres[i];
    const RunStep& s = run.steps[i];
    if (s.index != static_cast<int64_t>(i))
      problems.push_back(where + ": run.index = " + std::to_string(s.index) + " in run '" + run.id +
                         "'. Violated constraint: indices 0, 1, 2, ... in file order (expected " + std::to_string(i) + ")");
    if (s.optimizer_step != static_cast<int64_t>(i) / run.accumulation)
      problems.push_back(where + ": run.optimizer_step = " + std::to_string(s.optimizer_step) +
                         ". Violated constraint: index / accumulation = " + std::to_string(static_cast<int64_t>(i) / run.accumulation));
    if (i > 0 && s.elapsed_s < run.steps[i - 1].elapsed_s)
      problems.push_back(where + ": run.elapsed_s went backwards. Violated constraint: non-decreasing in run order");
  }
}

}  // namespace

double RecordedRun::optimizer_total_s() const {
  double total = 0;
  for (const RunStep& s : steps) total += s.optimizer_s.value_or(0);
  return total;
}

model::MicroBatch run_batch(const RecordedRun& run, const RunStep& step) {
  model::MicroBatch b = to_batch(step.record);
  if (!run.pack_attention) return b;
  b.packed = true;
  b.attention = *run.pack_attention;
  b.document_lengths = step.document_lengths;
  b.documents = static_cast<int64_t>(step.document_lengths.size());
  for (int32_t l : step.document_lengths) b.sum_doc_len_sq += static_cast<double>(l) * static_cast<double>(l);
  return b;
}

nlohmann::json run_json(const RunFields& f) {
  nlohmann::json j = nlohmann::json::object();
  j["id"] = f.id;
  j["policy"] = f.policy;
  j["micro_batch"] = f.micro_batch;
  j["accumulation"] = f.accumulation;
  if (f.max_length > 0) j["max_length"] = f.max_length;  // optional: 0 = not recorded
  j["pad_to_multiple_of"] = f.pad_to_multiple_of;
  j["seed"] = f.seed;
  j["index"] = f.index;
  j["optimizer_step"] = f.optimizer_step;
  j["first_seen"] = f.first_seen;
  if (f.optimizer_s) j["optimizer_s"] = *f.optimizer_s;
  j["elapsed_s"] = f.elapsed_s;
  if (!f.corpus_lengths.empty()) j["corpus_lengths"] = f.corpus_lengths;
  return j;
}

std::vector<RecordedRun> read_runs(const std::vector<Record>& records, const std::string& file) {
  std::vector<RecordedRun> runs;
  std::vector<std::vector<std::string>> wheres;
  std::map<std::string, size_t> by_id;
  std::vector<std::string> problems;
  for (const Record& record : records) {
    const auto probe = record.extra.find("probe");
    if (probe == record.extra.end() || *probe != "run") continue;
    auto parsed = parse_step(record, file, problems);
    if (!parsed) continue;
    const RunFields& f = parsed->fields;
    // The same run id in two files is two runs (the same corpus and policy measured on two machines).
    auto [it, inserted] = by_id.emplace(record.file + "\n" + f.id, runs.size());
    if (inserted) {
      RecordedRun run;
      static_cast<RunHeader&>(run) = f;
      runs.push_back(std::move(run));
      wheres.emplace_back();
    }
    RecordedRun& run = runs[it->second];
    const std::string where = where_of(record, file);
    if (f.micro_batch != run.micro_batch || f.accumulation != run.accumulation || f.policy != run.policy ||
        f.pack_attention != run.pack_attention || f.packer != run.packer)
      problems.push_back(where + ": run '" + run.id +
                         "' changes policy, micro_batch, accumulation, pack_attention or packer. Violated constraint: one of each per run id");
    if (!f.corpus_lengths.empty()) run.corpus_lengths = f.corpus_lengths;
    if (parsed->memory_start) run.memory_start = parsed->memory_start;
    run.steps.push_back(std::move(parsed->step));
    wheres[it->second].push_back(where);
  }
  for (size_t r = 0; r < runs.size(); ++r) check_run(runs[r], wheres[r], problems);
  if (!problems.empty()) throw InputError(problems);
  return runs;
}

model::RunPosition run_position(const Record& record) {
  model::RunPosition at;
  const auto probe = record.extra.find("probe");
  const auto run = record.extra.find("run");
  if (probe == record.extra.end() || *probe != "run" || run == record.extra.end() || !run->is_object()) return at;
  const auto step = run->find("optimizer_step");
  if (step == run->end() || !step->is_number_integer()) return at;
  at.in_run = true;
  at.after_optimizer_step = step->get<int64_t>() >= 1;  // window w starts after optimizer step w - 1
  const auto first = run->find("first_seen");
  at.first_seen = first != run->end() && first->is_boolean() && first->get<bool>();
  return at;
}

}  // namespace stepcast::calibrate
