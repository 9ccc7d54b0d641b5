// Fuzz target: a scenario (io/scenario_io). The replays add plan --no-sweep (the sweep is bounded separately).
#include "fuzz/fuzz_support.hpp"
#include "io/scenario_io.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string scenario = scratch_file(data, size, "scenario.yaml");
  io::Scenario s;
  if (reads_or_refuses([&] { s = io::load_scenario(scenario); }, scenario)) {
    check_figure(s.run.window_hours, "window_hours");
    check_figure(s.run.startup_s, "startup_s");
  }
  if (whole_commands()) run_stepcast({"plan", scenario, "--no-sweep", "--format", "json"}, scenario);
  return 0;
}
