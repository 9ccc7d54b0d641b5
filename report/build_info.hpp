#pragma once
// What this binary is: its version, the git commit it was configured from and the optional parts it was
// built with. Filled in by CMake at configure time (report/build_info.cpp.in); the commit reads "unknown"
// when the sources were not a git checkout, and is the commit of the last configure, not of the last build.
#include <string>
#include <vector>

namespace stepcast::report {

struct BuildFeature {
  std::string name;  // "calibrate", "harness", "cupti"
  bool on = false;
};

std::string stepcast_version();  // "0.1.0", the project's version in CMakeLists.txt
std::string git_commit();        // short hash, or "unknown"
std::vector<BuildFeature> build_features();

// `stepcast --version`: "stepcast 0.1.0 (commit 4c21b3b)\nfeatures: calibrate on, harness on, cupti off"
std::string version_text();

}  // namespace stepcast::report
