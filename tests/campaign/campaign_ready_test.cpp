// campaign ready (campaign/ready): in a temporary git repository, a campaign is ready only once the campaign file, its
// prediction and its plan are committed and unchanged.
#include <cstdlib>
#include <string>

#include "campaign/predict.hpp"
#include "campaign/ready.hpp"
#include "campaign_fixture.hpp"
#include "catch.hpp"
#include "io/campaign_io.hpp"

using stepcast::testing::campaign_head;
using stepcast::testing::CampaignRoot;
using Catch::Matchers::Contains;
namespace io = stepcast::io;
namespace campaign = stepcast::campaign;

namespace {

const char* kBody = R"(items:
  - model: tests/data/configs/tiny-llama.json
    stack: hf-peft
    lora: {targets: [q_proj]}
    time_limit_s: 60
    probes: {points: [1x64]}
checks:
  - metric: step_time
    goal: {error: 0.1}
)";

void git(const CampaignRoot& root, const std::string& args) {
  const std::string command = "git -C '" + root.path() + "' -c user.name=t -c user.email=t@t " + args + " >/dev/null 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

TEST_CASE("ready: outside git, untracked, modified, committed", "[campaign][ready]") {
  CampaignRoot root;
  const io::Campaign c = io::load_campaign(root.campaign("r", campaign_head("r") + kBody));
  auto problems = campaign::readiness_problems(c);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Contains("is not a git repository"));

  git(root, "init -q");
  problems = campaign::readiness_problems(c);
  REQUIRE(problems.size() == 3);
  CHECK(problems[0] == "commit measurements/campaigns/r.yaml before measuring (not tracked by git)");
  CHECK(problems[1] == "commit measurements/predictions/r.jsonl before measuring (missing: stepcast campaign predict "
                       "measurements/campaigns/r.yaml)");
  CHECK(problems[2] == "commit measurements/predictions/r.plan.json before measuring (missing: stepcast campaign "
                       "predict measurements/campaigns/r.yaml)");

  campaign::write_prediction(c, campaign::predict_campaign(c), "");
  problems = campaign::readiness_problems(c);
  CHECK(problems.size() == 3);
  CHECK_THAT(joined(problems), Contains("r.plan.json before measuring (not tracked by git)"));

  git(root, "add measurements");
  git(root, "commit -qm register");
  CHECK(campaign::readiness_problems(c).empty());

  root.write("measurements/predictions/r.jsonl", "{}\n");  // edited after registration
  problems = campaign::readiness_problems(c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "commit measurements/predictions/r.jsonl before measuring (it differs from HEAD)");
  git(root, "checkout -- measurements/predictions/r.jsonl");
  CHECK(campaign::readiness_problems(c).empty());
}
