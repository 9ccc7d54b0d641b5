// Fuzz target: recorded runs (calibrate/run_records over calibrate/records). The replays add validate --run.
#include "calibrate/run_records.hpp"
#include "fuzz/fuzz_support.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = scratch_file(data, size, "runs.jsonl");
  std::vector<calibrate::RecordedRun> runs;
  if (reads_or_refuses([&] { runs = calibrate::read_runs(calibrate::read_records(file), file); }, file))
    for (const auto& run : runs) {
      check_figure(run.total_s(), "total_s of run " + run.id);
      check_figure(run.optimizer_total_s(), "optimizer_total_s of run " + run.id);
    }
#ifdef STEPCAST_WITH_CALIBRATE
  if (whole_commands())
    run_stepcast({"validate", "--run", file, "--coefficients", shipped("coefficients/h200-hf-peft-sdpa-grouped_mm.yaml"),
                  "--format", "json"},
                 file);
#endif
  return 0;
}
