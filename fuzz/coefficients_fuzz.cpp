// Fuzz target: a coefficient file (io/coefficients_io), then what predict computes with it on the shipped
// model: step time and peak of 1024 + 512 tokens. The replays add predict and drift as commands.
#include "fuzz/fuzz_support.hpp"
#include "io/coefficients_io.hpp"
#include "model/step_model.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string coefficients = scratch_file(data, size, "coefficients.yaml");
  model::Coefficients c;
  if (reads_or_refuses([&] { c = io::load_coefficients(coefficients); }, coefficients))
    computes_or_refuses(
        [&] {
          const model::StepModel m(shipped_model(), c);
          model::MicroBatch batch;
          batch.rows = {1024, 512};
          batch.width = 1024;
          check_figure(m.step_s(batch), "step_s");
          check_figure(m.peak_gib(batch), "peak_gib");
        },
        "predict");
  if (whole_commands()) {
    run_stepcast({"predict", "--coefficients", coefficients, "--rows", "1024,512", "--format", "json"}, coefficients);
    run_stepcast({"drift", "--coefficients", coefficients, "--measurements",
                  measured("records/h200-hf-peft.jsonl"), "--format", "json"},
                 coefficients);
  }
  return 0;
}
