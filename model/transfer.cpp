#include "model/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "model/errors.hpp"
#include "model/gpu_efficiency.hpp"
#include "model/tiers.hpp"

namespace stepcast::model {

namespace {

// Which rate of the GPU a step term's work runs against (docs/method.md, "Transfer").
enum class Rate { none, bf16, fp32, bandwidth };

Rate rate_of(int term) {
  switch (term) {
    case kGemm:
    case kAttention:
    case kAttentionMath:
    case kMaskPath:
    case kExpertGemm:
    case kAttentionEfficient:
    case kAttentionMasked:
    case kAttentionEfficientMasked: return Rate::bf16;
    case kLoraGemm: return Rate::fp32;  // peft keeps adapters in fp32: cuBLAS runs them as fp32 (ffma) GEMMs
    case kExpertStream:
    case kMemoryBound:
    case kMaskBytes: return Rate::bandwidth;
    default: return Rate::none;  // fixed and host: CPU and driver time, carried as they are
  }
}

double rate(const GpuInfo& gpu, Rate r) {
  switch (r) {
    case Rate::bf16: return gpu.peaks.bf16_tflops;
    case Rate::fp32: return gpu.peaks.fp32_tflops;
    case Rate::bandwidth: return gpu.peaks.memory_gbs;
    case Rate::none: return 0.0;
  }
  return 0.0;
}

const char* rate_key(Rate r) {
  return r == Rate::bf16 ? "peak_bf16_tflops" : r == Rate::fp32 ? "peak_fp32_tflops" : "memory_bandwidth_gbs";
}

std::string canonical_tier(const std::string& label) { return tier_label(tier_from_label(label)); }

// The held-out error of each kind of transfer is measured and kept in one table (model/intervals.hpp).
constexpr double kZ90 = 1.645;  // two-sided 90 % of a normal distribution: files without held-out errors

std::string number(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

// Refuses a transfer of a selected term when either GPU lacks the datasheet figure its rate is a fraction of.
void require_peaks(const Coefficients& c, const GpuInfo& from, const GpuInfo& to) {
  for (int i = 0; i < kStepTerms; ++i) {
    const Rate r = rate_of(i);
    if (r == Rate::none || !c.step[i].selected) continue;
    for (const GpuInfo* gpu : {&from, &to})
      if (!(rate(*gpu, r) > 0))
        throw InputError("GPU '" + gpu->name + "' has no " + rate_key(r) + " in scenarios/gpus.yaml. Violated " +
                         "constraint: a transfer of " + step_term_names()[i] +
                         " needs that figure for both GPUs (docs/method.md, \"Transfer\")");
  }
}

// The kernel category of the GPU table's archs whose public curves carry a step term; false for the terms with
// no published counterpart (LoRA's fp32 GEMMs) and the host side.
bool category_of(int term, KernelCategory& out) {
  switch (term) {
    case kGemm:
    case kExpertGemm:
    case kAttentionMath: out = KernelCategory::gemm; return true;  // the math backend's bmm are GEMMs
    case kAttention:
    case kAttentionMasked: out = KernelCategory::attention; return true;
    case kAttentionEfficient:
    case kAttentionEfficientMasked:
    case kMaskPath: out = KernelCategory::attention_efficient; return true;  // a padding mask: the masked kernel
    case kExpertStream:
    case kMemoryBound:
    case kMaskBytes: out = KernelCategory::memory; return true;
    default: return false;
  }
}

double category_size(KernelCategory c, const TransferSizes& s) {
  switch (c) {
    case KernelCategory::gemm: return s.gemm_dim;
    case KernelCategory::attention:
    case KernelCategory::attention_efficient: return s.attention_seqlen;
    case KernelCategory::memory: return s.memory_bytes;
  }
  return 0;
}

// The sizes asked, or the defaults of TransferSizes (the attention one from the fitted widths).
TransferSizes sizes_for(const TransferSizes& asked, const ShapeDomain& d) {
  TransferSizes s = asked;
  if (!(s.gemm_dim > 0)) s.gemm_dim = 4096;
  if (!(s.attention_seqlen > 0))
    s.attention_seqlen = d.known && d.width_min > 0 ? std::sqrt(static_cast<double>(d.width_min) * d.width_max) : 4096;
  if (!(s.memory_bytes > 0)) s.memory_bytes = 256.0 * (1 << 20);
  return s;
}

std::string level_text(const Achieved& a) {
  if (a.level == "none") return "no public point: the path's ceiling";
  std::string files;
  for (const auto& f : a.curve.files) files += (files.empty() ? "" : ", ") + f;
  return a.level + " level, " + std::to_string(a.curve.points) + " points (" + files + ")";
}

std::string side_text(const GpuInfo& g, const Achieved& a) {
  std::string t = g.arch + " " + a.family + (a.path.empty() ? "" : "/" + a.path) + " " + number(a.rate) +
                  (a.path.empty() ? " GB/s" : " TFLOP/s");
  if (a.path_factor.how != "native")
    t += " [path ceiling " + number(a.path_factor.value) + " of peak, " + a.path_factor.how + ", " +
         std::to_string(a.path_factor.points) + " points]";
  return t + " [" + level_text(a) + "]";
}

// Whether a bandwidth term's work is the bytes its kernels really move (docs/gpus.md, "Memory-bound kernels are not
// all DRAM"): mask and expert-stream bytes are; memory_s_per_gb's are with the weighted count (an eager norm's
// passes and LoRA's elementwise bytes counted, docs/method.md "Memory-bound work"), not with the plain count, whose
// rate is ~22x the bandwidth's cost because its bytes miss most of the traffic.
bool bytes_are_real(int term, const Coefficients& c) {
  return term == kMaskBytes || term == kExpertStream ||
         (term == kMemoryBound && memory_work_from(c.memory_work) == MemoryWork::weighted);
}

// A card's SMs x clock (GHz): its peak FP32 over 2 x its arch's FP32 lanes a SM (scenarios/gpus.yaml, archs); 0
// when the arch does not declare its lanes or the card its FP32 peak.
double sm_ghz(const GpuInfo& gpu) {
  const ArchSpec* arch = find_arch(known_archs(), gpu.arch);
  if (arch == nullptr || arch->fp32_lanes_per_sm <= 0 || !(gpu.peaks.fp32_tflops > 0)) return 0;
  return gpu.peaks.fp32_tflops * 1e3 / (2.0 * arch->fp32_lanes_per_sm);
}

// A memory-bound term's factor when its work is real bytes: its calibrated cost per GB splits into the DRAM's
// (1 / the source's achieved copy rate) and the rest, spent on the SMs (instruction issue, index and fp32 math,
// tails), which carries by SMs x clock. Measured: the H200 -> H100 kernel tables' memory-bound time grew
// 1.17-1.19x where copies grow 1.43x (measurements/records/h100-transfer; docs/gpus.md).
struct MemorySplit {
  double factor = 1;
  double dram_share = 1;  // of the source's cost per GB
};

MemorySplit split_memory_cost(double s_per_gb, const Achieved& src, const Achieved& dst, double sm_from,
                              double sm_to) {
  MemorySplit m;
  const double dram = 1.0 / src.rate;  // s per GB at the achieved copy rate
  m.dram_share = s_per_gb > dram ? dram / s_per_gb : 1.0;
  m.factor = m.dram_share * src.rate / dst.rate + (1 - m.dram_share) * sm_from / sm_to;
  return m;
}

std::string percent(double share) { return number(100 * share) + " %"; }

// Scales every selected term that runs against a GPU rate by what the two GPUs' kernels of its category achieve
// (model/gpu_efficiency.hpp); memory-bound terms of real bytes by their DRAM share only (split_memory_cost); LoRA's
// fp32 term by the FP32 peaks. Returns one evidence line per category used (per term for memory).
std::vector<std::string> carry_to_gpu_by_public_data(Coefficients& c, const GpuInfo& from, const GpuInfo& to,
                                                     const TransferSizes& sizes) {
  require_peaks(c, from, to);
  const EfficiencyModel& m = shipped_efficiency();
  const double sm_from = sm_ghz(from), sm_to = sm_ghz(to);
  std::vector<std::string> evidence;
  std::array<bool, kKernelCategories> told{};
  for (int i = 0; i < kStepTerms; ++i) {
    const Rate r = rate_of(i);
    if (r == Rate::none || !c.step[i].selected) continue;
    KernelCategory cat{};
    double factor = rate(from, r) / rate(to, r);
    if (category_of(i, cat)) {
      const double x = category_size(cat, sizes);
      const Achieved src = m.achieved(from, cat, x), dst = m.achieved(to, cat, x);
      factor = src.rate / dst.rate;
      const std::string sides = ": " + side_text(from, src) + " -> " + side_text(to, dst);
      if (cat == KernelCategory::memory && bytes_are_real(i, c) && sm_from > 0 && sm_to > 0 && c.step[i].value > 0) {
        const MemorySplit split = split_memory_cost(c.step[i].value, src, dst, sm_from, sm_to);
        evidence.push_back(std::string(step_term_names()[i]) + " x" + number(split.factor) + ": " +
                           percent(split.dram_share) + " of its " + number(1e3 * c.step[i].value) +
                           " ms/GB is DRAM (copy x" + number(factor) + " at size " + number(x) + sides +
                           "), the rest on the SMs, by SMs x clock " + number(sm_from) + " -> " + number(sm_to) +
                           " SM GHz");
        factor = split.factor;
      } else if (!told[static_cast<int>(cat)]) {
        told[static_cast<int>(cat)] = true;
        evidence.push_back(std::string(kernel_category_name(cat)) + " x" + number(factor) + " at size " + number(x) +
                           sides);
      }
    } else if (i == kLoraGemm) {
      evidence.push_back("lora_gemm x" + number(factor) + ": no public fp32 GEMM points, by peak FP32 " +
                         number(rate(from, r)) + " -> " + number(rate(to, r)) + " TFLOP/s");
    }
    c.step[i].value *= factor;
    c.step[i].std_error *= factor;
  }
  return evidence;
}

// The attention terms re-priced on `gpu` from its arch's kernels to `choice` (TransferAsk::attention_kernels): the
// ratio of the two families' achieved rates at the same size. Returns the evidence line.
std::string carry_to_attention_kernels(Coefficients& c, const GpuInfo& gpu, const KernelChoice& choice,
                                       const TransferSizes& sizes) {
  const EfficiencyModel& m = shipped_efficiency();
  const double x = category_size(KernelCategory::attention, sizes);
  const Achieved arch = m.achieved(gpu, KernelCategory::attention, x);
  const Achieved own = m.achieved(gpu, KernelCategory::attention, choice, x);
  if (arch.rate <= 0 || own.rate <= 0)
    throw InputError("attention kernels '" + choice.family + "' on " + gpu.name + ": no public rate of that family "
                     "or of the arch's. Violated constraint: public attention points of both (docs/gpus.md)");
  const double factor = arch.rate / own.rate;
  for (int i : {kAttention, kAttentionMasked}) {
    c.step[i].value *= factor;
    c.step[i].std_error *= factor;
  }
  return "attention kernels x" + number(factor) + " at size " + number(x) + ": " + side_text(gpu, arch) + " -> " +
         side_text(gpu, own) + " (the stack's own)";
}

// What a step's fixed cost grows by per 1000 kernel launches, seconds (docs/method.md, "Launches"): Gemma-4's
// fixed_s (0.1764 s at 24 319 predicted launches, h200-gemma4-categories.yaml) against the fixed_s that fits
// Llama-3-8B's 15 H200 records best with every rate held at Gemma-4's (0.010 s at 11 788 launches, least
// squares of the relative step residuals): 13.3 us a launch, the host floor's own rate (13.7 us,
// measurements/records/h200-harness-host.jsonl, docs/host.md).
constexpr double kFixedSPerKlaunch = 0.0133;

// A model transfer re-prices the host side by the two models' launches: the host term's launch count in
// proportion (the coefficients' count is measured, the ratio predicted), and fixed_s by its per-launch cost,
// never below 0 (a model with fewer launches hides more of its host time under the device's). Returns the
// change for the summary line.
std::string carry_to_launches(Coefficients& c, double from, double to) {
  if (c.launches_per_step > 0) c.launches_per_step *= to / from;
  Term& fixed = c.step[kFixed];
  if (fixed.selected) fixed.value = std::max(0.0, fixed.value + kFixedSPerKlaunch * (to - from) / 1000.0);
  return "; host side re-priced by kernel launches " + std::to_string(std::llround(from)) + " -> " + std::to_string(std::llround(to)) +
         " per step (fixed_s " + number(fixed.value) + " s)";
}

}  // namespace

// A model transfer cannot carry the source model's activation bytes per token (token_kib is what one model
// saves per token: Gemma-4's 4277 KiB priced Mixtral's peak 30 % high, docs/families.md). Where the file prices
// activations that way, the target's activations come from its own architecture (model/memory.hpp) at scale 1,
// the memory model's zero-shot form; a file that already fits activation_scale keeps it (it is per stack, not per
// model). Returns the note for the transfer line, empty when nothing changed.
std::string carry_activations_to_architecture(Coefficients& c) {
  Term& per_token = c.memory[kMemToken];
  Term& scale = c.memory[kMemActivation];
  if (!per_token.selected || scale.selected) return "";
  per_token = {0.0, 0.0, false, "not carried: the source model's bytes per token (model transfer)"};
  scale = {1.0, 0.0, true, "architecture activations of the target model at scale 1 (model transfer)"};
  return "; activations from the target's architecture (the source's KiB per token does not travel)";
}

std::string provenance_name(Provenance p) {
  switch (p) {
    case Provenance::calibrated: return "calibrated";
    case Provenance::transferred_model: return "transferred-model";
    case Provenance::transferred_gpu: return "transferred-gpu";
    case Provenance::transferred_tier: return "transferred-tier";
    case Provenance::extrapolated_shape: return "extrapolated-shape";
  }
  return "calibrated";
}

std::array<double, kStepTerms> step_efficiencies(const Coefficients& c, const GpuInfo& gpu) {
  std::array<double, kStepTerms> e{};
  for (int i = 0; i < kStepTerms; ++i) {
    const double peak = rate(gpu, rate_of(i));
    if (c.step[i].selected && c.step[i].value > 0 && peak > 0) e[i] = 1.0 / (c.step[i].value * peak);
  }
  return e;
}

KernelChoice attention_kernels(const std::string& family, const std::string& arch) {
  if (family == "flash2") return {"flash2", "mma"};
  if (family == "cudnn") {
    const ArchSpec* a = find_arch(known_archs(), arch);
    return {"cudnn", a ? a->native_path : ""};
  }
  throw InputError("attention kernels '" + family + "'. Violated constraint: flash2 or cudnn");
}

Transfer transfer_coefficients(const Coefficients& c, const TransferAsk& ask, bool allowed) {
  Transfer t;
  t.coefficients = c;
  const GpuInfo from = gpu_info(c.gpu);
  t.gpu = ask.gpu.empty() ? from : gpu_info(ask.gpu);
  std::vector<std::string> mismatches;
  if (!ask.model.empty() && ask.model != c.model) {
    t.changes.push_back("model '" + c.model + "' -> '" + ask.model + "' (efficiencies carried to its work)");
    t.provenance.push_back(Provenance::transferred_model);
    mismatches.push_back("model '" + ask.model + "' (the coefficients are '" + c.model + "')");
    t.coefficients.model = ask.model;
    const bool launches_known = ask.source_launches > 0 && ask.target_launches > 0;
    if (launches_known) t.changes.back() += carry_to_launches(t.coefficients, ask.source_launches, ask.target_launches);
    t.changes.back() += carry_activations_to_architecture(t.coefficients);
    for (MemoryTerm run_only : {kMemRunToken, kMemFirstSeenToken})  // the source model's bytes per token, too
      t.coefficients.memory[run_only] = {0.0, 0.0, false, "not carried: the source model's bytes per token (model transfer)"};
    t.add_error(held_out_error(launches_known ? kModelTransfer : kModelTransferNoLaunches),
                held_out_error(launches_known ? kModelTransferRun : kModelTransferNoLaunches));
  }
  if (t.gpu.name != from.name) {
    t.gpu_evidence = carry_to_gpu_by_public_data(t.coefficients, from, t.gpu, sizes_for(ask.sizes, c.domain));
    const Distance d = gpu_distance(from, t.gpu);
    const ErrorBand band = shipped_band(d);
    t.changes.push_back("GPU '" + from.name + "' -> '" + t.gpu.name + "' (" + from.arch + " -> " + t.gpu.arch +
                        ": each category by its kernels' public efficiencies, docs/gpus.md)");
    t.gpu_evidence.push_back("interval: +-" + number(100 * band.half_width) + " % for " + distance_name(d) +
                             " (90 % of " + std::to_string(band.pairs) + " held-out pairs of published points, " +
                             std::to_string(band.gpus) + " GPUs predicted)");
    t.provenance.push_back(Provenance::transferred_gpu);
    mismatches.push_back("GPU '" + t.gpu.name + "' (the coefficients are '" + from.name + "')");
    t.coefficients.gpu = t.gpu.name;
    // The measured band of the distance between the two GPUs (model/gpu_efficiency.hpp), padded or not.
    t.add_error(HalfWidth{band.half_width, band.half_width});
  }
  if (!ask.attention_kernels.empty()) {
    const ArchSpec* arch = find_arch(known_archs(), t.gpu.arch);
    const KernelChoice choice = attention_kernels(ask.attention_kernels, t.gpu.arch);
    if (arch == nullptr || arch->kernel(KernelCategory::attention).family != choice.family) {
      t.gpu_evidence.push_back(carry_to_attention_kernels(t.coefficients, t.gpu, choice, sizes_for(ask.sizes, c.domain)));
      t.changes.push_back("attention kernels '" + choice.family + "' (not " + t.gpu.arch + "'s '" +
                          (arch ? arch->kernel(KernelCategory::attention).family : std::string("?")) +
                          "': by the two families' public efficiencies, docs/gpus.md)");
      t.provenance.push_back(Provenance::transferred_gpu);
      const double band = shipped_band(Distance::another_arch).half_width;  // a kernel family the rates never ran
      t.add_error(HalfWidth{band, band});
    }
  }
  if (!ask.tier.empty() && canonical_tier(ask.tier) != canonical_tier(c.tier)) {
    t.changes.push_back("tier '" + c.tier + "' -> '" + ask.tier + "' (each layer re-planned, rates kept)");
    t.provenance.push_back(Provenance::transferred_tier);
    mismatches.push_back("tier '" + ask.tier + "' (the coefficients are '" + c.tier + "')");
    t.coefficients.tier = ask.tier;
    const TierRules from_tier = tier_from_label(c.tier), to_tier = tier_from_label(ask.tier);
    const bool experts_change = from_tier.known && to_tier.known && from_tier.experts != to_tier.experts;
    t.add_error(held_out_error(experts_change ? kExpertsTransfer : kTierTransfer));
    Term& math = t.coefficients.step[kAttentionMath];
    const bool may_take_math = !to_tier.known || to_tier.auto_backend || to_tier.forced == Backend::math;
    if (!math.selected && t.coefficients.step[kAttention].selected && may_take_math) {
      // No math-backend rate in the source: the fused rate is all there is, and math is never faster.
      math = t.coefficients.step[kAttention];
      math.reason = "transferred: the source had no math-backend rate; its fused-attention rate, a lower bound";
      t.changes.back() += "; math layers at the fused-attention rate (a lower bound)";
    }
  }
  // The peak interval was measured on the source's runs: it does not travel (the plan is then at risk). The CUDA
  // context is the source GPU's and driver's (docs/method.md, "Memory of a run").
  if (t.provenance.size() > 0) t.coefficients.peak_interval.reset();
  if (t.gpu.name != from.name) t.coefficients.memory[kMemContext] = {0, 0, false, "not carried: the source GPU's context"};
  if (!mismatches.empty() && !allowed) {
    std::string what;
    for (const auto& m : mismatches) what += (what.empty() ? "" : ", ") + m;
    throw InputError("asked for " + what +
                     ". Violated constraint: predicting for another model, GPU or tier needs --transfer (the result "
                     "is then marked transferred, docs/method.md)");
  }
  if (t.provenance.empty()) t.provenance.push_back(Provenance::calibrated);
  return t;
}

double step_half_width(const Transfer& t, const StepFeatures& f, double step_s, bool padded) {
  double stack = 0;
  if (t.stack_error.known) {
    std::array<double, kStepTerms> c{};
    for (int i = 0; i < kStepTerms; ++i) c[i] = t.coefficients.step[i].selected ? t.coefficients.step[i].value : 0.0;
    const bool host_bound = host_seconds(c.data(), f) > device_seconds(c.data(), f);
    stack = host_bound ? t.stack_error.host_bound : t.stack_error.device_bound;
  }
  // A transfer's measured error is the whole error of such predictions (the source's own fit is inside it), at
  // least the stack's: a model transfer's figures are measured on device-bound steps, and a host-bound step carries
  // the machine's host speed, which no transfer knows (model/intervals.cpp).
  if (t.transferred()) return std::max(t.transfer_half_width.at(padded), stack);
  const HeldOut& held_out = t.coefficients.held_out;
  if (held_out.known) return std::max(held_out.half_width.at(padded), stack) + t.transfer_half_width.at(padded);
  // Coefficient uncertainty: the standard errors are the diagonal of Ceres' covariance (the files keep no
  // off-diagonal terms), summed linearly over the terms, which bounds any correlation between them.
  double coefficient_s = 0;
  for (int i = 0; i < kStepTerms; ++i)
    if (t.coefficients.step[i].selected) coefficient_s += f.x[i] * t.coefficients.step[i].std_error;
  const double fit_rel = std::sqrt(std::pow(t.coefficients.step_rms_rel, 2) + std::pow(coefficient_s / step_s, 2));
  return std::max(kZ90 * fit_rel, stack) + t.transfer_half_width.at(padded);
}

bool step_interval(const Transfer& t, const StepFeatures& f, double step_s, bool padded, double& lo, double& hi) {
  if (!(step_s > 0)) return false;
  const double half = step_half_width(t, f, step_s, padded);
  // Symmetric in the ratio measured / predicted (a +40 % miss and a 1/1.4 miss count alike), so that a
  // half-width above 1 still gives a positive lower end.
  lo = step_s / (1.0 + half);
  hi = step_s * (1.0 + half);
  return true;
}

std::string domain_text(const ShapeDomain& d) {
  if (!d.known) return "domain: unknown";  // a file from before calibrate recorded it: no claim either way
  auto range = [](int64_t lo, int64_t hi) { return std::to_string(lo) + "-" + std::to_string(hi); };
  return "domain: rows " + range(d.rows_min, d.rows_max) + ", width " + range(d.width_min, d.width_max) + ", tokens " +
         range(d.tokens_min, d.tokens_max) + " (the step fit's records)";
}

namespace {

// "tokens 32768 above the fitted 1024-16384", empty inside [lo, hi].
std::string outside(const char* what, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return "";
  return std::string(what) + " " + std::to_string(v) + (v > hi ? " above" : " below") + " the fitted " +
         std::to_string(lo) + "-" + std::to_string(hi);
}

}  // namespace

Transfer at_shape(const Transfer& t, int64_t rows, int64_t width) {
  const ShapeDomain& d = t.coefficients.domain;
  if (!d.known) return t;
  std::string why = outside("tokens", rows * width, d.tokens_min, d.tokens_max);
  const std::string width_why = outside("width", width, d.width_min, d.width_max);
  if (!width_why.empty()) why += (why.empty() ? "" : ", ") + width_why;
  if (why.empty()) return t;
  Transfer shaped = t;
  shaped.extrapolation = why;
  std::erase(shaped.provenance, Provenance::calibrated);
  shaped.provenance.push_back(Provenance::extrapolated_shape);
  shaped.transfer_half_width += held_out_error(kExtrapolatedShape);
  return shaped;
}

std::string Transfer::summary() const {
  if (changes.empty()) return "calibrated: " + coefficients.model + " on " + gpu.name + ", tier " + coefficients.tier;
  std::string s = "transferred:";
  for (size_t i = 0; i < changes.size(); ++i) s += (i ? "; " : " ") + changes[i];
  for (const auto& line : gpu_evidence) s += "\n  " + line;  // what the GPU factors rest on, one line each
  return s;
}

}  // namespace stepcast::model
