#include "io/shape_limits.hpp"

#include <cmath>

#include "io/document.hpp"
#include "model/limits.hpp"

namespace stepcast::io {
namespace {

// A product of every size in a model: parameters with a margin (each attention projection counted as a
// full heads x head_dim x hidden matrix, every expert and the dense MLP at once). Refusing beyond 10^15
// parameters (a thousand times the largest published model) keeps every byte count in int64 (x8 bytes).
constexpr double kMaxParameters = 1e15;

class Locator {
 public:
  Locator(const YAML::Node& root, std::string path, Diagnostics& d) : root_(root), path_(std::move(path)), d_(d) {}

  // file:line:col of `key` (in text_config when the config nests it there), else the file alone.
  std::string at(const std::string& key) const {
    const YAML::Node& root = root_;  // const: looking a key up must not add it
    for (const YAML::Node& scope : {root["text_config"], root})
      if (scope.IsDefined() && scope.IsMap() && scope[key].IsDefined()) return where(path_, scope[key].Mark());
    return path_ + ":1:1";
  }
  void bound(const std::string& key, int64_t value, int64_t max) {
    if (value > max)
      d_.add(at(key) + ": " + key + " = " + std::to_string(value) + ". Violated constraint: <= " + std::to_string(max) +
             " (io/limits.hpp, docs/reliability.md)");
  }
  void fail(const std::string& key, const std::string& message) { d_.add(at(key) + ": " + message); }

 private:
  YAML::Node root_;
  std::string path_;
  Diagnostics& d_;
};

// Layers repeat their type's spec, so the first layer that breaks a rule is reported and the rest are not.
void check_attention(const model::ModelShape& s, Locator& at, const Diagnostics& d) {
  for (const model::AttentionSpec& a : s.layers) {
    const size_t before = d.problems().size();
    at.bound("num_attention_heads", a.num_heads, limits::kMaxHeads);
    at.bound("head_dim", a.head_dim, limits::kMaxHeadDim);
    at.bound("num_key_value_heads", a.num_kv_heads, limits::kMaxHeads);
    at.bound("sliding_window", a.window, limits::kMaxWidth);
    if (a.head_dim < 1)
      at.fail("num_attention_heads", "num_attention_heads = " + std::to_string(a.num_heads) +
                                         " does not divide hidden_size = " + std::to_string(s.hidden_size) +
                                         " (head_dim 0). Violated constraint: hidden_size / num_attention_heads >= 1, "
                                         "or an explicit head_dim");
    if (a.num_kv_heads > 0 && a.num_heads % a.num_kv_heads != 0)
      at.fail("num_key_value_heads", "num_key_value_heads = " + std::to_string(a.num_kv_heads) +
                                         ". Violated constraint: divides num_attention_heads = " +
                                         std::to_string(a.num_heads) + " (grouped-query attention)");
    if (!(std::isfinite(a.rope_theta) && a.rope_theta > 0))
      at.fail("rope_parameters", "rope_theta. Violated constraint: a finite number > 0");
    if (!(a.partial_rotary_factor >= 0 && a.partial_rotary_factor <= 1))
      at.fail("rope_parameters", "partial_rotary_factor. Violated constraint: in [0, 1]");
    if (d.problems().size() != before) return;
  }
}

double parameter_bound(const model::ModelShape& s) {
  double per_layer = 0;
  for (const model::AttentionSpec& a : s.layers)
    per_layer += 4.0 * static_cast<double>(std::max(a.num_heads, a.num_kv_heads)) * static_cast<double>(a.head_dim) *
                 static_cast<double>(s.hidden_size);
  const double hidden = static_cast<double>(s.hidden_size);
  const double mlp = 3.0 * hidden * static_cast<double>(s.intermediate_size) +
                     3.0 * hidden * static_cast<double>(s.moe.intermediate_size) * static_cast<double>(s.moe.num_experts) +
                     hidden * static_cast<double>(s.moe.num_experts + 8 + 2);  // 8 >= any family's norms per layer (Gemma-4: 7)
  return per_layer + static_cast<double>(s.num_layers()) * mlp + 2.0 * static_cast<double>(s.vocab_size) * hidden;
}

}  // namespace

void check_shape_limits(const model::ModelShape& s, const YAML::Node& root, const std::string& path,
                        Diagnostics& diagnostics) {
  Locator at(root, path, diagnostics);
  const size_t before = diagnostics.problems().size();
  at.bound("num_hidden_layers", s.num_layers(), limits::kMaxLayers);
  at.bound("hidden_size", s.hidden_size, limits::kMaxHiddenSize);
  at.bound("intermediate_size", s.intermediate_size, limits::kMaxIntermediateSize);
  at.bound("vocab_size", s.vocab_size, limits::kMaxVocab);
  at.bound("num_experts", s.moe.num_experts, limits::kMaxExperts);
  at.bound("moe_intermediate_size", s.moe.intermediate_size, limits::kMaxIntermediateSize);
  check_attention(s, at, diagnostics);
  const std::string dtype_key = (root.IsMap() && root["dtype"].IsDefined()) ? "dtype" : "torch_dtype";
  try {
    model::dtype_bytes(s.dtype);
  } catch (const InputError& e) {
    at.fail(dtype_key, dtype_key + " = '" + limits::cut(s.dtype) + "': " + e.what());
  }
  if (diagnostics.problems().size() == before && parameter_bound(s) > kMaxParameters)
    at.fail("hidden_size", "about " + std::to_string(parameter_bound(s)) +
                               " parameters. Violated constraint: <= 1e15 (every byte count must fit in 64 bits)");
}

}  // namespace stepcast::io
