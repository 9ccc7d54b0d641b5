#pragma once
// Which StepModel answers a question, and the transfer behind it (docs/method.md, "Transfer"): the one place
// `plan` and `campaign` ask it, so that a second front end (and the campaign library) need not include cli/.
// transfer_for moved here unchanged from cli/transfer_options.cpp; choose_step_model is `plan`'s make_predictor
// without the width-quadratic branch.
#include <cstdint>
#include <string>

#include "model/coefficients.hpp"
#include "model/shape.hpp"
#include "model/transfer.hpp"

namespace stepcast::io {

struct TransferOptions {
  std::string gpu;   // empty: the coefficients'
  std::string tier;  // empty: the coefficients'
  bool transfer = false;
};

// "path:N" for the line of a top-level `key:` of a coefficient file ("path:1" when not found).
std::string coefficient_key_where(const std::string& path, const std::string& key);

// The coefficients for the asked GPU and tier and for `shape`. A model asked with --model (`model_arg`, a name or a
// config path) is a model transfer unless it has the coefficients' model's weights and GEMM work. Throws
// InputError naming each mismatch, located at the coefficient file's key (and the config file), without --transfer.
model::Transfer transfer_for(const model::Coefficients& c, const std::string& coefficients_path,
                             const model::ModelShape& shape, const std::string& model_arg, const TransferOptions& o);

// What a calibrated coefficient file answers for `model_arg` (a name or config path; empty: the coefficients' own
// model) on the GPU and tier asked: the shape, the carried coefficients, and the words that say so.
struct StepModelChoice {
  model::ModelShape shape;
  model::Transfer transfer;          // transfer.coefficients and transfer.gpu are what to build a StepModel with
  std::string description;           // "StepModel M on GPU, tier T (file, N points)": the predictor's first line
  double wall_clock_half_width = 0;  // relative: a run's steps share one cause, so the step's bound, not reduced
};

StepModelChoice choose_step_model(const std::string& coefficients_path, const std::string& model_arg,
                                  const TransferOptions& asked);

}  // namespace stepcast::io
