#include "planner/width_quadratic.hpp"

#include "model/tiers.hpp"

namespace stepcast::planner {

double WidthQuadraticPredictor::step_s(const model::MicroBatch& batch) const {
  const auto tokens = static_cast<double>(batch.padded_tokens());
  const model::AttentionPath path = model::attention_path(batch);
  const double attention =
      path == model::AttentionPath::varlen ? batch.sum_doc_len_sq : tokens * static_cast<double>(batch.width);
  const double t = c_.step_s_per_token * tokens + c_.step_s_per_token_width * attention + c_.step_s_fixed;
  return path == model::AttentionPath::explicit_mask ? t * c_.masked_step_factor : t;
}

double WidthQuadraticPredictor::peak_gib(const model::MicroBatch& batch) const {
  return c_.peak_gib_fixed + c_.peak_gib_per_token * static_cast<double>(batch.padded_tokens());
}

}  // namespace stepcast::planner
