#pragma once
// Probe advice: what a set of step records cannot tell apart, and which shape would (docs/method.md,
// "Probe advice"). Looks only at the shapes (rows, width, padding), not at the times, so it holds for any tier.
#include <string>
#include <vector>

#include "calibrate/records.hpp"

namespace stepcast::calibrate {

// One sentence per gap of the design, each naming the shape that closes it; empty when the records vary
// rows, width and padding. Only records with a step time count (OOM records constrain the peak only).
std::vector<std::string> design_advice(const std::vector<Record>& records);

}  // namespace stepcast::calibrate
