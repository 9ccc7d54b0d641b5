// Fuzz target: a Hugging Face config.json (io/model_config), then what describe and predict compute from the
// shape: parameter counts, GEMM FLOPs, and the shipped coefficients' step time and peak on 512 + 256 tokens.
#include "fuzz/fuzz_support.hpp"
#include "io/model_config.hpp"
#include "model/counts.hpp"
#include "model/step_model.hpp"

using namespace stepcast;
using namespace stepcast::fuzz;

namespace {

void check_shape(const model::ModelShape& shape) {
  computes_or_refuses(
      [&] {
        const model::ParamCounts counts = model::count_params(shape);
        check_figure(static_cast<double>(counts.total), "parameters");
        check_figure(static_cast<double>(counts.active_per_token), "active parameters");
        check_figure(model::gemm_flops_per_token(shape).total(), "GEMM FLOPs per token");
      },
      "describe");
  computes_or_refuses(
      [&] {
        const model::StepModel m(shape, shipped_coefficients());
        model::MicroBatch batch;
        batch.rows = {512, 256};
        batch.width = 512;
        check_figure(m.step_s(batch), "step_s");
        check_figure(m.peak_gib(batch), "peak_gib");
      },
      "predict");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string config = scratch_file(data, size, "config.json");
  model::ModelShape shape;
  if (reads_or_refuses([&] { shape = io::load_model_config(config); }, config)) check_shape(shape);
  if (whole_commands()) {
    run_stepcast({"describe", "--model", config, "--width", "4096", "--format", "json"}, config);
    run_stepcast({"predict", "--coefficients", shipped("coefficients/h200-hf-peft-sdpa-grouped_mm.yaml"), "--model",
                  config, "--rows", "512,256", "--format", "json"},
                 config);
  }
  return 0;
}
