#include "io/document.hpp"

#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/json_text.hpp"
#include "model/limits.hpp"

namespace stepcast::io {
namespace {

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a folder. Violated constraint: a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the file (does it exist, is it readable?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

std::string where(const std::string& file, const YAML::Mark& mark) {
  if (mark.line < 0) return file;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

YAML::Node load_yaml_file(const std::string& path) {
  const std::string text = read_text(path);
  if (is_blank(text)) throw InputError(path + ":1:1: the file is empty. Violated constraint: a YAML mapping");
  try {
    YAML::Node root = YAML::Load(text);
    // A bare scalar or null document has no mark (line -1): it starts at 1:1.
    const std::string at = root.Mark().line < 0 ? path + ":1:1" : where(path, root.Mark());
    if (!root.IsMap()) throw InputError(at + ": the document is not a mapping of keys to values");
    return root;
  } catch (const YAML::Exception& e) {
    throw InputError(where(path, e.mark) + ": malformed YAML: " + e.msg);
  }
}

YAML::Node load_json_file(const std::string& path) {
  const std::string text = read_text(path);
  if (is_blank(text)) throw InputError(path + ":1:1: the file is empty. Violated constraint: a JSON object");
  const JsonParse parsed = parse_json_bounded(text);
  if (!parsed.ok) {
    auto [line, col] = line_col(text, parsed.byte);
    throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(col) +
                     ": malformed JSON: " + limits::cut(parsed.message));
  }
  if (!parsed.value.is_object()) throw InputError(path + ":1:1: the document is not a JSON object");
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // Valid JSON that yaml-cpp cannot read (rare: tabs inside flow collections); positions are lost.
    throw InputError(where(path, e.mark) + ": cannot index this JSON for positions: " + e.msg);
  }
}

std::string show(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return "'" + limits::cut(node.Scalar()) + "'";
  if (node.IsSequence()) return "a list";
  return "a mapping";
}

MapReader::MapReader(YAML::Node node, std::string file, std::string path, Diagnostics& diagnostics)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), diagnostics_(&diagnostics) {
  if (!node_.IsMap()) {
    is_map_ = false;
    problem(node_, (path_.empty() ? std::string("document") : path_) + " = " + show(node_) +
                       ". Violated constraint: a mapping of keys to values");
  }
}

void MapReader::problem(const YAML::Node& at, const std::string& message) {
  diagnostics_->add(where(file_, at.Mark()) + ": " + message);
}

void MapReader::problem(const std::string& message) { problem(node_, message); }

bool MapReader::has(const std::string& key) const { return is_map_ && node_[key].IsDefined(); }

YAML::Node MapReader::node(const std::string& key) {
  known_.insert(key);
  return is_map_ ? node_[key] : YAML::Node();
}

bool MapReader::present(const std::string& key, bool required) {
  known_.insert(key);
  if (!is_map_) return false;
  if (node_[key].IsDefined() && !node_[key].IsNull()) return true;
  if (required) problem(key_path(key) + " is missing. Violated constraint: required");
  return false;
}

MapReader MapReader::child(const std::string& key) {
  if (!present(key, true)) return MapReader(YAML::Node(YAML::NodeType::Map), file_, key_path(key), *diagnostics_);
  return MapReader(node_[key], file_, key_path(key), *diagnostics_);
}

bool MapReader::read(const std::string& key, std::string& out, bool required) {
  if (!present(key, required)) return false;
  YAML::Node n = node_[key];
  if (!n.IsScalar()) {
    problem(n, key_path(key) + " = " + show(n) + ". Violated constraint: a string");
    return false;
  }
  out = n.Scalar();
  return true;
}

bool MapReader::read(const std::string& key, bool& out, bool required) {
  if (!present(key, required)) return false;
  YAML::Node n = node_[key];
  try {
    out = n.as<bool>();
    return true;
  } catch (const YAML::Exception&) {
    problem(n, key_path(key) + " = " + show(n) + ". Violated constraint: true or false");
    return false;
  }
}

bool MapReader::read(const std::string& key, double& out, bool required, double min_exclusive, double max_inclusive) {
  if (!present(key, required)) return false;
  YAML::Node n = node_[key];
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    problem(n, key_path(key) + " = " + show(n) + ". Violated constraint: a number");
    return false;
  }
  if (!std::isfinite(v)) {
    problem(n, key_path(key) + " = " + show(n) + ". Violated constraint: a finite number");
    return false;
  }
  if (!(v > min_exclusive)) {
    problem(n, key_path(key) + " = " + limits::cut(n.Scalar()) + ". Violated constraint: > " +
                   std::to_string(min_exclusive));
    return false;
  }
  if (v > max_inclusive) {
    problem(n, key_path(key) + " = " + limits::cut(n.Scalar()) + ". Violated constraint: <= " +
                   std::to_string(max_inclusive));
    return false;
  }
  out = v;
  return true;
}

bool MapReader::read(const std::string& key, int64_t& out, bool required, int64_t min_inclusive,
                     int64_t max_inclusive) {
  if (!present(key, required)) return false;
  YAML::Node n = node_[key];
  int64_t v = 0;
  try {
    v = n.as<int64_t>();
  } catch (const YAML::Exception&) {
    problem(n, key_path(key) + " = " + show(n) + ". Violated constraint: an integer");
    return false;
  }
  if (v < min_inclusive) {
    problem(n, key_path(key) + " = " + std::to_string(v) + ". Violated constraint: " +
                   (min_inclusive == 1 ? std::string("> 0") : ">= " + std::to_string(min_inclusive)));
    return false;
  }
  if (v > max_inclusive) {
    problem(n, key_path(key) + " = " + std::to_string(v) + ". Violated constraint: <= " + std::to_string(max_inclusive));
    return false;
  }
  out = v;
  return true;
}

bool MapReader::read_choice(const std::string& key, std::string& out, const std::vector<std::string>& choices,
                            bool required) {
  std::string value;
  if (!read(key, value, required)) return false;
  for (const auto& c : choices)
    if (c == value) {
      out = value;
      return true;
    }
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  problem(node_[key], key_path(key) + " = '" + limits::cut(value) + "'. Violated constraint: one of " + list);
  return false;
}

bool MapReader::read_list(const std::string& key, std::vector<int64_t>& out, bool required, int64_t min_inclusive,
                          int64_t max_inclusive) {
  if (!present(key, required)) return false;
  YAML::Node n = node_[key];
  if (!n.IsSequence()) {
    problem(n, key_path(key) + " = " + show(n) + ". Violated constraint: a list of integers");
    return false;
  }
  std::vector<int64_t> values;
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string item = key_path(key) + "[" + std::to_string(i) + "]";
    try {
      int64_t v = n[i].as<int64_t>();
      if (v < min_inclusive || v > max_inclusive) {
        problem(n[i], item + " = " + std::to_string(v) + ". Violated constraint: >= " + std::to_string(min_inclusive) +
                          (max_inclusive == INT64_MAX ? std::string() : " and <= " + std::to_string(max_inclusive)));
        ok = false;
      }
      values.push_back(v);
    } catch (const YAML::Exception&) {
      problem(n[i], item + " = " + show(n[i]) + ". Violated constraint: an integer");
      ok = false;
    }
  }
  if (ok) out = std::move(values);
  return ok;
}

bool MapReader::read_list(const std::string& key, std::vector<std::string>& out, bool required) {
  if (!present(key, required)) return false;
  YAML::Node n = node_[key];
  if (!n.IsSequence()) {
    problem(n, key_path(key) + " = " + show(n) + ". Violated constraint: a list of strings");
    return false;
  }
  std::vector<std::string> values;
  for (size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) {
      problem(n[i], key_path(key) + "[" + std::to_string(i) + "] = " + show(n[i]) + ". Violated constraint: a string");
      return false;
    }
    values.push_back(n[i].Scalar());
  }
  out = std::move(values);
  return true;
}

void MapReader::finish() {
  if (!is_map_) return;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (known_.count(key) == 0) {
      std::string list;
      for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
      diagnostics_->add(where(file_, it->first.Mark()) + ": unknown key '" + limits::cut(key_path(key)) +
                        "'. Violated constraint: one of " + list);
    }
  }
}

}  // namespace stepcast::io
