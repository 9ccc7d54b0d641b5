#pragma once
// `stepcast campaign ready`: a campaign may be measured only once its prediction is registered, i.e. the campaign
// file, its prediction and its device plan exist, are tracked by git and equal HEAD (`git ls-files
// --error-unmatch`, `git diff --quiet HEAD --`, run in the repository root). The device runner and the integrator
// call it before every device call (docs/campaigns.md).
#include <string>
#include <vector>

#include "io/campaign_io.hpp"

namespace stepcast::campaign {

// What stands between the campaign and a measurement, one sentence each ("commit measurements/predictions/X.jsonl
// before measuring (not tracked by git)"); empty: ready. Runs git; a missing git or a folder outside any
// repository is a reason like the others.
std::vector<std::string> readiness_problems(const io::Campaign& c);

// The exit status of `git -C root args...` with its output discarded (127: git could not be started).
int run_git(const std::string& root, const std::vector<std::string>& args);

}  // namespace stepcast::campaign
