#include "report/json_output.hpp"

#include <algorithm>
#include <ostream>

#include "report/build_info.hpp"

namespace stepcast::report {

nlohmann::ordered_json versioned(const std::string& command, const nlohmann::json& body) {
  nlohmann::ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["stepcast_version"] = stepcast_version();
  j["commit"] = git_commit();
  j["command"] = command;
  if (!body.is_object()) return j;
  const nlohmann::ordered_json ordered(body);  // nlohmann converts between its specialisations directly
  for (const char* first : {"headline", "fits", "checks"})
    if (ordered.contains(first)) j[first] = ordered[first];
  for (const auto& [key, value] : ordered.items())
    if (!j.contains(key)) j[key] = value;
  return j;
}

void print_json(std::ostream& out, const std::string& command, const nlohmann::json& body) {
  // Names come from traces and YAML as bytes: invalid UTF-8 is written as U+FFFD rather than refused.
  out << versioned(command, body).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

nlohmann::json checks_json(const std::vector<Check>& checks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : checks) a.push_back({{"name", c.name}, {"value", c.value}, {"bar", c.bar}, {"passed", c.passed}});
  return a;
}

bool all_passed(const std::vector<Check>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const Check& c) { return c.passed; });
}

}  // namespace stepcast::report
