#pragma once
// Training stacks: the software that issues a step's kernels (docs/host.md). The host side of a step is the
// stack's cost per kernel launch times the model's launches (model/launches.hpp), combined with the device
// side by the stack's overlap exponent; the one-off costs of a run (a shape new to the process, the process's
// first micro-batch, an optimizer step) are the stack's too. So a model never measured is priced by its own
// launches at its stack's rate: the host floor travels with the stack, the launch count with the model
// (docs/method.md, "Launches").
#include <array>
#include <string>
#include <string_view>

#include "model/coefficients.hpp"

namespace stepcast::model {

struct StackSpec {
  std::string_view name;         // what --stack and the first output line say
  std::string_view description;  // the software and versions measured
  // Records whose tier label starts with this were measured on this stack (tools/device/hf_campaign.py writes
  // "hf-peft/..."); empty: labels of the tier grammar (model/tiers.hpp), which the harness writes.
  std::string_view record_tier_prefix;
  // Seconds per 1000 kernel launches as model/launches.hpp counts them (the stack's own extra launches, if
  // any, are inside the rate), and the overlap exponent p of step = (device^p + host^p)^(1/p).
  double host_s_per_klaunch = 0;
  double overlap_exponent = 4;
  // One-off seconds of a run on this stack (model/coefficients.hpp RunTerm order).
  std::array<double, kRunTerms> run_s{};
  // The 90 % error of the H200 default predictor's device side with this host side, on this stack's Gemma-4
  // records, host-bound and device-bound steps apart (conformal quantiles, model/intervals.hpp): the floor of a
  // calibrated prediction's interval on this stack (its host time varies by machine: docs/host.md).
  StackError error;
  int64_t error_points_host_bound = 0;
  int64_t error_points_device_bound = 0;
  std::string_view source;       // the measurements and the command behind the figures
};

// The stacks measured, the default first (tests/model/stacks_test.cpp checks each figure against its source).
extern const std::array<StackSpec, 2> kStacks;

// transformers + peft: what people train with, and what the default predictor answers for.
const StackSpec& default_stack();
// The stack called `name`; throws InputError listing the names for any other.
const StackSpec& stack_named(const std::string& name);
// The stack that measured records labelled `tier`: the one whose record_tier_prefix starts it, else the
// harness (the tier grammar's labels).
const StackSpec& stack_of_records(const std::string& tier);

// `c` with the stack's host side for a model issuing `launches` kernels per step: the host term at the stack's
// rate (selected), launches_per_step = `launches`, the stack's overlap exponent; each run term the coefficients
// did not select takes the stack's. The device terms are untouched. (The interval's stack error is the caller's:
// Transfer::stack_error = stack.error.)
Coefficients with_stack(const Coefficients& c, const StackSpec& stack, double launches);

}  // namespace stepcast::model
