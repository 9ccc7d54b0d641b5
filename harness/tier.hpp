#pragma once
// The tiers the harness can force and record: the one grammar of model/tiers.hpp (parse_tier), less what
// the harness cannot run. No LibTorch here, so the CLI and the tests can parse labels anywhere.
#include <string>

#include "model/tiers.hpp"

namespace stepcast::harness {

using Tier = model::TierRules;
using model::kDefaultTier;

// model::parse_tier, and InputError for a label the harness cannot run: kernels built for another arch
// (-sm<NN>: the harness runs the device's own) or +ckpt (checkpointing is BuildOptions::checkpointing).
Tier parse_tier(const std::string& label);

}  // namespace stepcast::harness
