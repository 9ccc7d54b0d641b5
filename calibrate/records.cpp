#include "calibrate/records.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "io/json_text.hpp"
#include "model/limits.hpp"
#include "model/errors.hpp"

namespace stepcast::calibrate {
namespace {

const std::set<std::string>& known_keys() {
  static const std::set<std::string> keys{"model", "gpu",         "tier", "rows",       "width",
                                          "step_s", "peak_gib",   "kept_tokens", "oom", "peak_valid",
                                          "rank",  "world_size"};
  return keys;
}

// "file:line:col" at the key's first appearance in the line's text, else "file:line".
std::string at_key(const std::string& file, int64_t line, const std::string& text, const std::string& key) {
  const std::string base = file + ":" + std::to_string(line);
  const size_t pos = text.find("\"" + key + "\"");
  if (pos == std::string::npos) return base;
  return base + ":" + std::to_string(pos + 1);
}

// "file:line:col" of `key` inside the object under `parent` (a nested key may also appear at the top level).
std::string at_nested_key(const std::string& file, int64_t line, const std::string& text, const std::string& parent,
                          const std::string& key) {
  const size_t start = text.find("\"" + parent + "\"");
  const size_t pos = start == std::string::npos ? std::string::npos : text.find("\"" + key + "\"", start);
  if (pos == std::string::npos) return at_key(file, line, text, parent);
  return file + ":" + std::to_string(line) + ":" + std::to_string(pos + 1);
}

// A value as it appears in a message: its JSON text, cut (a line may be megabytes long).
std::string shown(const nlohmann::json& value) { return limits::cut(value.dump()); }

class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, const std::string& file, int64_t line, const std::string& text,
              std::vector<std::string>& problems)
      : object_(object), file_(file), line_(line), text_(text), problems_(problems) {}

  void problem(const std::string& key, const std::string& message) {
    problems_.push_back(at_key(file_, line_, text_, key) + ": " + message);
    ok_ = false;
  }
  const nlohmann::json* find(const std::string& key, bool required) {
    auto it = object_.find(key);
    if (it == object_.end()) {
      if (required) {
        problems_.push_back(file_ + ":" + std::to_string(line_) + ": " + key +
                            " is missing. Violated constraint: required by the record contract (docs/architecture.md)");
        ok_ = false;
      }
      return nullptr;
    }
    return &*it;
  }
  void read(const std::string& key, std::string& out) {
    const auto* v = find(key, true);
    if (v == nullptr) return;
    if (!v->is_string() || v->get<std::string>().empty()) {
      problem(key, key + " = " + shown(*v) + ". Violated constraint: a non-empty string");
      return;
    }
    out = v->get<std::string>();
  }
  template <typename T>
  void read_number(const std::string& key, std::optional<T>& out, bool required, double min, bool min_inclusive,
                   double max) {
    const auto* v = find(key, required);
    if (v == nullptr) return;
    const bool integral_wanted = std::is_integral_v<T>;
    const bool type_ok = integral_wanted ? v->is_number_integer() : v->is_number();
    const double d = type_ok ? v->get<double>() : 0.0;
    const bool range_ok = (min_inclusive ? d >= min : d > min) && d <= max;
    if (!type_ok || !range_ok || !std::isfinite(d)) {
      std::ostringstream c;
      c << (integral_wanted ? "an integer " : "a number ") << (min_inclusive ? ">= " : "> ") << min << " and <= " << max;
      problem(key, key + " = " + shown(*v) + ". Violated constraint: " + c.str());
      return;
    }
    out = v->get<T>();
  }
  void read_bool(const std::string& key, bool& out) {
    const auto* v = find(key, false);
    if (v == nullptr) return;
    if (!v->is_boolean()) {
      problem(key, key + " = " + shown(*v) + ". Violated constraint: true or false");
      return;
    }
    out = v->get<bool>();
  }
  void read_rows(std::vector<int64_t>& out) {
    const auto* v = find("rows", true);
    if (v == nullptr) return;
    bool good = v->is_array() && !v->empty() && static_cast<int64_t>(v->size()) <= limits::kMaxRows;
    if (good)
      for (const auto& r : *v)
        good = good && r.is_number_integer() && r.get<int64_t>() >= 1 && r.get<int64_t>() <= limits::kMaxWidth;
    if (!good) {
      problem("rows", "rows = " + shown(*v) + ". Violated constraint: a non-empty list of at most " +
                          std::to_string(limits::kMaxRows) + " integers in [1, " + std::to_string(limits::kMaxWidth) +
                          "]");
      return;
    }
    out = v->get<std::vector<int64_t>>();
  }
  // The optional `lora` object: rank an integer >= 0, targets a list of non-empty names (required), alpha a
  // number >= 0, modules an integer >= 0 and dtype a string where present.
  void read_lora(std::optional<RecordLora>& out) {
    const auto* v = find("lora", false);
    if (v == nullptr || v->is_null()) return;
    if (!v->is_object()) {
      problem("lora", "lora = " + shown(*v) + ". Violated constraint: an object {rank, alpha, targets, modules, dtype, dropout}");
      return;
    }
    RecordLora lora;
    lora.at = at_nested_key(file_, line_, text_, "lora", "targets");
    const auto bad = [&](const std::string& key, const nlohmann::json& value, const std::string& constraint) {
      problems_.push_back(at_nested_key(file_, line_, text_, "lora", key) + ": lora." + key + " = " + shown(value) +
                          ". Violated constraint: " + constraint);
      ok_ = false;
    };
    const auto rank = v->find("rank");
    if (rank == v->end() || !rank->is_number_integer() || rank->get<int64_t>() < 0 || rank->get<int64_t>() > 1000000)
      bad("rank", rank == v->end() ? nlohmann::json() : *rank, "an integer >= 0 and <= 1000000 (0: full fine-tuning)");
    else
      lora.rank = rank->get<int64_t>();
    const auto targets = v->find("targets");
    const auto full = v->find("full");
    const bool is_full = full != v->end() && full->is_boolean() && full->get<bool>();
    // A full fine-tune trains no adapters: its targets are an empty list (or absent).
    bool targets_ok = is_full ? targets == v->end() || (targets->is_array() && targets->empty())
                              : targets != v->end() && targets->is_array() && !targets->empty();
    if (targets_ok)
      for (const auto& t : *targets) targets_ok = targets_ok && t.is_string() && !t.get<std::string>().empty();
    if (!targets_ok)
      bad("targets", targets == v->end() ? nlohmann::json() : *targets,
          is_full ? "an empty list under full fine-tuning" : "a non-empty list of module names");
    else if (targets != v->end())
      lora.targets = targets->get<std::vector<std::string>>();
    if (const auto alpha = v->find("alpha"); alpha != v->end()) {
      if (!alpha->is_number() || !std::isfinite(alpha->get<double>()) || alpha->get<double>() < 0)
        bad("alpha", *alpha, "a number >= 0");
      else
        lora.alpha = alpha->get<double>();
    }
    if (const auto modules = v->find("modules"); modules != v->end()) {
      if (!modules->is_number_integer() || modules->get<int64_t>() < 0)
        bad("modules", *modules, "an integer >= 0");
      else
        lora.modules = modules->get<int64_t>();
    }
    if (const auto dtype = v->find("dtype"); dtype != v->end()) {
      if (!dtype->is_string())
        bad("dtype", *dtype, "a string (float32, bfloat16, ...)");
      else
        lora.dtype = dtype->get<std::string>();
    }
    if (const auto dropout = v->find("dropout"); dropout != v->end()) {
      if (!dropout->is_number() || !(dropout->get<double>() >= 0 && dropout->get<double>() < 1))
        bad("dropout", *dropout, "a number in [0, 1)");
      else
        lora.dropout = dropout->get<double>();
    }
    if (const auto autocast = v->find("autocast"); autocast != v->end()) {
      if (!autocast->is_boolean())
        bad("autocast", *autocast, "true or false");
      else
        lora.autocast = autocast->get<bool>();
    }
    if (full != v->end()) {
      if (!full->is_boolean())
        bad("full", *full, "true or false");
      else
        lora.full = full->get<bool>();
    }
    out = std::move(lora);
  }
  bool ok() const { return ok_; }

 private:
  const nlohmann::json& object_;
  const std::string& file_;
  int64_t line_;
  const std::string& text_;
  std::vector<std::string>& problems_;
  bool ok_ = true;
};

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

int64_t Record::real_tokens() const {
  int64_t n = 0;
  for (int64_t r : rows) n += r;
  return n;
}

nlohmann::json to_json(const Record& r) {
  nlohmann::json j = nlohmann::json::object();
  j["model"] = r.model;
  j["gpu"] = r.gpu;
  j["tier"] = r.tier;
  j["rows"] = r.rows;
  j["width"] = r.width;
  if (r.step_s) j["step_s"] = *r.step_s;
  if (r.peak_gib) j["peak_gib"] = *r.peak_gib;
  if (r.kept_tokens) j["kept_tokens"] = *r.kept_tokens;
  if (r.oom) j["oom"] = true;
  if (!r.peak_valid) j["peak_valid"] = false;
  if (r.rank) j["rank"] = *r.rank;
  if (r.world_size) j["world_size"] = *r.world_size;
  for (const auto& [key, value] : r.extra.items())
    if (known_keys().count(key) == 0) j[key] = value;
  return j;
}

std::optional<Record> record_from_json(const nlohmann::json& object, const std::string& file, int64_t line,
                                       const std::string& text, std::vector<std::string>& problems) {
  if (!object.is_object()) {
    problems.push_back(file + ":" + std::to_string(line) + ":1: the line is not a JSON object");
    return std::nullopt;
  }
  Record r;
  r.line = line;
  FieldReader f(object, file, line, text, problems);
  f.read("model", r.model);
  f.read("gpu", r.gpu);
  f.read("tier", r.tier);
  f.read_rows(r.rows);
  std::optional<int64_t> width;
  f.read_number("width", width, true, 1, true, static_cast<double>(limits::kMaxWidth));
  f.read_bool("oom", r.oom);
  f.read_bool("peak_valid", r.peak_valid);
  f.read_number("step_s", r.step_s, !r.oom, limits::kMinStepSeconds, true, limits::kMaxSeconds);
  f.read_number("peak_gib", r.peak_gib, false, 0, false, limits::kMaxGiB);
  f.read_number("kept_tokens", r.kept_tokens, false, 0, true, static_cast<double>(limits::kMaxTokensPerBatch));
  f.read_number("world_size", r.world_size, false, 1, true, 1e6);
  f.read_lora(r.lora);
  f.read_number("rank", r.rank, r.world_size.has_value(), 0, true, 1e6);
  if (r.rank && !r.world_size) f.problem("rank", "rank without world_size. Violated constraint: both or neither");
  if (r.rank && r.world_size && *r.rank >= *r.world_size)
    f.problem("rank", "rank = " + std::to_string(*r.rank) + " of world_size " + std::to_string(*r.world_size) +
                          ". Violated constraint: rank < world_size");
  if (width && !r.rows.empty() && limits::checked_mul(*width, static_cast<int64_t>(r.rows.size())).value_or(INT64_MAX) >
                                       limits::kMaxTokensPerBatch)
    f.problem("width", "rows x width = " + std::to_string(r.rows.size()) + " x " + std::to_string(*width) +
                           ". Violated constraint: <= " + std::to_string(limits::kMaxTokensPerBatch) + " tokens");
  if (width) {
    r.width = *width;
    for (int64_t rows : r.rows)
      if (rows > r.width) {
        f.problem("width", "width = " + std::to_string(r.width) + " but a row has " + std::to_string(rows) +
                               " tokens. Violated constraint: width >= max(rows)");
        break;
      }
  }
  if (r.kept_tokens && !r.rows.empty() && *r.kept_tokens > r.real_tokens())
    f.problem("kept_tokens", "kept_tokens = " + std::to_string(*r.kept_tokens) +
                                 ". Violated constraint: <= the real tokens, sum(rows) = " +
                                 std::to_string(r.real_tokens()));
  for (const auto& [key, value] : object.items())
    if (known_keys().count(key) == 0) r.extra[key] = value;
  if (!f.ok()) return std::nullopt;
  return r;
}

void check_lora_targets(const std::vector<Record>& records, const std::vector<std::string>& lora_able,
                        const std::string& model) {
  std::string names;
  for (const auto& n : lora_able) names += (names.empty() ? "" : ", ") + n;
  std::vector<std::string> problems;
  for (const Record& r : records) {
    if (!r.lora) continue;
    for (const auto& t : r.lora->targets)
      if (std::find(lora_able.begin(), lora_able.end(), t) == lora_able.end())
        problems.push_back(r.lora->at + ": lora target '" + t + "' is not an nn.Linear of " + model +
                           ". Violated constraint: one of " + (names.empty() ? "(none)" : names));
  }
  if (!problems.empty()) throw InputError(problems);
}

std::vector<Record> read_records(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path + ": is a folder. Violated constraint: a measurements file (JSON Lines)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the measurements file (does it exist, is it readable?)");
  std::vector<Record> records;
  std::vector<std::string> problems;
  std::string text;
  for (int64_t line = 1; std::getline(in, text); ++line) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (is_blank(text)) continue;
    io::JsonParse parsed = io::parse_json_bounded(text);
    if (!parsed.ok) {
      const size_t col = std::min(parsed.byte + 1, text.size() + 1);
      problems.push_back(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": malformed JSON: " +
                         limits::cut(parsed.message));
      continue;
    }
    if (auto r = record_from_json(parsed.value, path, line, text, problems)) {
      r->file = path;
      records.push_back(std::move(*r));
    }
  }
  if (!problems.empty()) throw InputError(problems);
  return records;
}

std::vector<Record> read_records_required(const std::string& path) {
  std::vector<Record> records = read_records(path);
  if (records.empty())
    throw InputError(path + ":1: no measurement record (the file is empty or blank). Violated constraint: at least "
                            "one JSON object line");
  return records;
}

void append_record(const std::string& path, const Record& record) {
  const std::string line = to_json(record).dump() + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path + ": cannot open for appending: " + std::strerror(errno));
  const ssize_t written = ::write(fd, line.data(), line.size());
  const int write_errno = errno;
  const bool synced = written == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size()))
    throw Error(path + ": short write while appending a record (" + std::to_string(written) + " of " +
                std::to_string(line.size()) + " bytes): " + std::strerror(write_errno));
  if (!synced) throw Error(path + ": fsync failed after appending a record");
}

}  // namespace stepcast::calibrate
