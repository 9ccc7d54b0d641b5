#include "harness/tier.hpp"

#include <vector>

#include "model/errors.hpp"

namespace stepcast::harness {

Tier parse_tier(const std::string& label) {
  Tier tier = model::parse_tier(label);
  std::vector<std::string> problems;
  if (tier.kernel_sm > 0)
    problems.push_back("tier '" + label + "': kernels for sm" + std::to_string(tier.kernel_sm) +
                       ". Violated constraint: the harness runs the device's own kernels, no -sm<NN>");
  if (tier.stack == model::Stack::hf_peft)
    problems.push_back("tier '" + label + "': transformers + peft. Violated constraint: the harness runs its own "
                       "model; hf-peft labels are measured by tools/device/hf_campaign.py (sdpa-<backend>/... with "
                       "gqa-transformers runs transformers' K/V rule here)");
  if (tier.recompute)
    problems.push_back("tier '" + label + "': +ckpt. Violated constraint: the harness checkpoints by its own "
                       "option, not by the label");
  if (!problems.empty()) throw InputError(problems);
  return tier;
}

}  // namespace stepcast::harness
