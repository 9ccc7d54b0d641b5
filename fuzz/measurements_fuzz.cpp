// Fuzz target: measurement records (calibrate/records), then what predict computes for each: the shipped
// coefficients' step time and peak of the record's micro-batch. The replays add predict, drift and
// calibrate (a Ceres fit) as commands.
#include "calibrate/records.hpp"
#include "fuzz/fuzz_support.hpp"
#include "model/step_model.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = scratch_file(data, size, "records.jsonl");
  std::vector<calibrate::Record> records;
  if (reads_or_refuses([&] { records = calibrate::read_records_required(file); }, file)) {
    static const model::StepModel m(shipped_model(), shipped_coefficients());
    for (const auto& r : records)
      computes_or_refuses(
          [&] {
            check_figure(m.step_s(calibrate::to_batch(r)), "step_s of " + r.where());
            check_figure(m.peak_gib(calibrate::to_batch(r)), "peak_gib of " + r.where());
          },
          "predict");
  }
  if (whole_commands()) {
    const std::string coefficients = shipped("coefficients/h200-hf-peft-sdpa-grouped_mm.yaml");
    run_stepcast({"predict", "--coefficients", coefficients, "--measurements", file, "--format", "json"}, file);
    run_stepcast({"drift", "--coefficients", coefficients, "--measurements", file, "--format", "json"}, file);
#ifdef STEPCAST_WITH_CALIBRATE
    run_stepcast({"calibrate", "--measurements", file, "--prior", "none", "--format", "json"}, file);
#endif
  }
  return 0;
}
