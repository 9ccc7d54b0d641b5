#pragma once
// Loading YAML and JSON files into yaml-cpp nodes that remember where each value sat
// (yaml-cpp's Node::Mark), so that every complaint can say file:line:col.
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "model/errors.hpp"

namespace stepcast::io {

// "file:line:col" for a node (yaml-cpp counts from 0; people count from 1).
std::string where(const std::string& file, const YAML::Mark& mark);

// Reads a YAML file. Missing, unreadable, empty or malformed files throw InputError with a position.
YAML::Node load_yaml_file(const std::string& path);

// Reads a JSON file strictly (nlohmann's parser, so trailing commas or comments are errors, reported at
// line:col), then returns it as a yaml-cpp node so that later checks have positions too.
YAML::Node load_json_file(const std::string& path);

// The scalar's text, quoted, for messages ("= 0", "= 'abc'").
std::string show(const YAML::Node& node);

// Strict reader of one mapping: typed fields with constraints, every problem collected in a
// Diagnostics, and unknown keys reported by finish() (a typo must never become a default).
class MapReader {
 public:
  MapReader(YAML::Node node, std::string file, std::string path, Diagnostics& diagnostics);

  bool has(const std::string& key) const;
  YAML::Node node(const std::string& key);  // marks the key as known
  MapReader child(const std::string& key);  // a required nested mapping (missing → reported)
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  YAML::Mark mark() const { return node_.Mark(); }

  // Each returns false (and records why) when the key is missing, has the wrong type or breaks
  // the constraint. `out` keeps its default when the key is absent and optional.
  bool read(const std::string& key, std::string& out, bool required);
  bool read(const std::string& key, bool& out, bool required);
  // Numbers must be finite (YAML's .inf and .nan are refused) and <= max_inclusive (io/limits.hpp).
  bool read(const std::string& key, double& out, bool required, double min_exclusive = -1e308,
            double max_inclusive = 1e308);
  bool read(const std::string& key, int64_t& out, bool required, int64_t min_inclusive = INT64_MIN,
            int64_t max_inclusive = INT64_MAX);
  bool read_choice(const std::string& key, std::string& out, const std::vector<std::string>& choices, bool required);
  bool read_list(const std::string& key, std::vector<int64_t>& out, bool required, int64_t min_inclusive = 1,
                 int64_t max_inclusive = INT64_MAX);
  bool read_list(const std::string& key, std::vector<std::string>& out, bool required);

  void problem(const YAML::Node& at, const std::string& message);
  void problem(const std::string& message);  // at the mapping itself
  void finish();                              // reports keys never asked for

 private:
  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool present(const std::string& key, bool required);
  YAML::Node node_;
  std::string file_;
  std::string path_;
  Diagnostics* diagnostics_;
  std::set<std::string> known_;
  bool is_map_ = true;
};

}  // namespace stepcast::io
