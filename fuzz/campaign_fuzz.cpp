// Fuzz target: a campaign file (io/campaign_io), then the processes it expands into. The replays add campaign check.
#include "fuzz/fuzz_support.hpp"
#include "io/campaign_io.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = scratch_file(data, size, "campaign.yaml");
  io::Campaign c;
  if (reads_or_refuses([&] { c = io::load_campaign(file); }, file)) {
    check_figure(c.total_limit_s, "total_limit_s");
    for (const auto& item : c.items) check_figure(item.time_limit_s, "time_limit_s of " + item.id);
    computes_or_refuses([&] { io::plan_items(c); }, "plan_items");
  }
  if (whole_commands()) run_stepcast({"campaign", "check", file, "--format", "json"}, file);
  return 0;
}
