#include "model/stacks.hpp"

#include "model/errors.hpp"

namespace stepcast::model {

// Host figures are per launch of model/launches.hpp's count (24 319 for Gemma-4 26B-A4B on the grouped tier),
// converted from each fit's own count: rate x its launches_per_step / 24 319.
const std::array<StackSpec, 2> kStacks{{
    {"transformers-peft",
     "transformers 5.17 + peft 0.21, PyTorch 2.11 (Python; sdpa, grouped_mm experts, reentrant checkpointing)",
     "hf-peft/",
     // 0.024067 s per 1000 of the profiler's 25 800 launches (a 0.621 s floor), p = 4: `stepcast calibrate
     // --measurements measurements/records/h200-hf-peft-host.jsonl measurements/records/h200-hf-peft-host-m3.jsonl
     // measurements/records/h200-hf-peft-host-m4.jsonl --prior <the H200 default predictor> --prior-sigma 0.02`
     // (81 step records of three H200 machines, the device rates held within 2 % of the default's; docs/host.md).
     0.025532, 4.0,
     // first_seen_s, run_start_s, optimizer_step_s: the medians of 555, 16 and 127 samples of probes and recorded
     // runs on four H200 machines (scenarios/coefficients/h200-hf-peft-sdpa-grouped_mm.yaml, docs/host.md), since
     // cuDNN's slower bias path at odd widths is priced in the steady step (docs/families.md, "Odd widths").
     {0.1237372785, 0.7987805241, 0.011286965},
     // On the 86 step records of h200-hf-peft.jsonl and h200-hf-peft-host*.jsonl (Gemma-4, three machines),
     // `stepcast predict --measurements F --format json` (the default predictor, this stack): 55 host-bound steps
     // within 36.2 %, 31 device-bound within 7.3 %; each machine against the other two's quantile: 49 of 55 and
     // 28 of 31 inside (docs/method.md, "Intervals").
     {true, 0.3618, 0.0733}, 55, 31,
     "docs/host.md; measurements/records/h200-hf-peft-host*.jsonl and h200-hf-peft-runs*.jsonl"},
    {"harness",
     "stepcast measure: the C++ LibTorch harness (no Python), LibTorch 2.11",
     "",
     // 0.014149 s per 1000 of the 22 102 CUPTI-counted launches (a 0.313 s floor), p = 8, and the run terms:
     // scenarios/coefficients/h200-gemma4-harness-run.yaml (its host probes and two recorded runs, docs/harness.md).
     0.012859, 8.0,
     {0.1524472783, 0.7149878076, 0.028001249},
     // On the 22 step records of h200-harness-host.jsonl that are not recorded runs: the 8 host-bound steps within
     // 15.1 % (their largest: too few for a quantile); device-bound steps are the file's own held-out error.
     {true, 0.1515, 0.0}, 8, 0,
     "docs/harness.md; measurements/records/h200-harness-host.jsonl"},
}};

const StackSpec& default_stack() { return kStacks[0]; }

const StackSpec& stack_named(const std::string& name) {
  std::string names;
  for (const StackSpec& s : kStacks) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  }
  throw InputError("stack '" + name + "'. Violated constraint: one of " + names + " (model/stacks.hpp)");
}

const StackSpec& stack_of_records(const std::string& tier) {
  for (const StackSpec& s : kStacks)
    if (!s.record_tier_prefix.empty() && tier.rfind(s.record_tier_prefix, 0) == 0) return s;
  return stack_named("harness");
}

Coefficients with_stack(const Coefficients& c, const StackSpec& stack, double launches) {
  Coefficients out = c;
  const std::string from = " (stack " + std::string(stack.name) + ", model/stacks.hpp)";
  out.step[kHost] = {stack.host_s_per_klaunch, 0.0, true, "the stack's cost per kernel launch" + from};
  out.launches_per_step = launches;
  out.overlap_exponent = stack.overlap_exponent;
  for (int i = 0; i < kRunTerms; ++i)
    if (!out.run[i].selected) out.run[i] = {stack.run_s[i], 0.0, true, "the stack's one-off cost" + from};
  return out;
}

}  // namespace stepcast::model
