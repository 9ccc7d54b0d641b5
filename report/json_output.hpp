#pragma once
// The one shape of every JSON document stepcast prints: an object carrying `schema_version` (bumped when a
// field changes meaning or goes away; new fields do not bump it), `stepcast_version`, `commit` and `command`,
// beside the command's own fields. Pass/fail results carry `checks: [{name, value, bar, passed}]` so a script
// reads why a run failed without parsing text.
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace stepcast::report {

// 2: plan's `fits_memory` and `checks.fits_memory` judge the run's memory timeline at the peak's 90 % upper bound
// against the card less the CUDA context (a plan at risk reads false), and `peak_gib` is the run's peak
// (docs/planner.md, "Memory"); `fits` and the headline follow the N-GPU plan under --gpus.
inline constexpr int kJsonSchemaVersion = 2;

// `body` must be an object; its keys sit beside the envelope's. The envelope comes first, then the body's
// `headline`, `fits` and `checks` where it has them (what a reader wants first), then the rest.
nlohmann::ordered_json versioned(const std::string& command, const nlohmann::json& body);

// Prints versioned(command, body), indented, and a newline.
void print_json(std::ostream& out, const std::string& command, const nlohmann::json& body);

struct Check {
  std::string name;  // e.g. "leave_one_out_step_mape", "records_within_tolerance"
  double value = 0;  // what was measured
  double bar = 0;    // the limit it is held to
  bool passed = true;
};

nlohmann::json checks_json(const std::vector<Check>& checks);
bool all_passed(const std::vector<Check>& checks);

}  // namespace stepcast::report
