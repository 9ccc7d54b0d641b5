#pragma once
// A throw-away repository root for campaign tests: measurements/{campaigns,predictions}/ plus copies of what a
// campaign names (the Gemma-4 per-category coefficients, tiny configs), so that a test writes campaigns, predicts
// and reports without touching the source tree. Removed with the fixture.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stepcast::testing {

class CampaignRoot {
 public:
  CampaignRoot() {
    static std::atomic<int> counter{0};
    root_ = std::filesystem::temp_directory_path() /
            ("stepcast_campaign_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    for (const char* dir : {"measurements/campaigns", "measurements/predictions", "measurements/records",
                            "scenarios/coefficients", "scenarios/models", "tests/data/configs"})
      std::filesystem::create_directories(root_ / dir);
    copy(std::string(STEPCAST_SCENARIOS) + "/coefficients/h200-gemma4-categories.yaml",
         "scenarios/coefficients/h200-gemma4-categories.yaml");
    copy(std::string(STEPCAST_SCENARIOS) + "/models/qwen1.5-moe-a2.7b.json", "scenarios/models/qwen1.5-moe-a2.7b.json");
    copy(std::string(STEPCAST_SCENARIOS) + "/models/gpt-oss-20b.json", "scenarios/models/gpt-oss-20b.json");
    for (const char* tiny : {"tiny-llama.json", "tiny-qwen2-moe.json"})
      copy(std::string(STEPCAST_TEST_DATA) + "/configs/" + tiny, std::string("tests/data/configs/") + tiny);
  }
  ~CampaignRoot() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  CampaignRoot(const CampaignRoot&) = delete;
  CampaignRoot& operator=(const CampaignRoot&) = delete;

  std::string path(const std::string& relative = "") const { return (root_ / relative).string(); }
  // Writes `text` to measurements/campaigns/NAME.yaml and returns its path.
  std::string campaign(const std::string& name, const std::string& text) const {
    return write("measurements/campaigns/" + name + ".yaml", text);
  }
  std::string write(const std::string& relative, const std::string& text) const {
    std::filesystem::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
    return path(relative);
  }
  std::string read(const std::string& relative) const {
    std::ifstream in(root_ / relative);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  void copy(const std::string& from, const std::string& to) const {
    std::filesystem::copy_file(from, root_ / to, std::filesystem::copy_options::overwrite_existing);
  }
  std::filesystem::path root_;
};

// The head every test campaign shares: the prediction, the predictor, the GPU, the time.
inline std::string campaign_head(const std::string& name) {
  return "schema_version: 1\nprediction: measurements/predictions/" + name +
         ".jsonl\ncoefficients: scenarios/coefficients/h200-gemma4-categories.yaml\ntransfer: true\ngpu: NVIDIA H200\n"
         "total_limit_s: 300\n";
}

}  // namespace stepcast::testing
