#pragma once
// How far below its peak each kernel family runs on each GPU, fitted to the public measurements of
// measurements/public/ (model/public_points.hpp; docs/gpus.md). A kernel's achieved rate on a GPU is
//   rate = peak x path_factor(arch, path) x e_family(x),   e(x) = E x / (x + h)
// peak       the datasheet's dense BF16 rate (memory: bandwidth) of scenarios/gpus.yaml, quoted for the arch's
//            native tensor path;
// path       the instruction path the family issues there (the GPU table's archs): an sm80 kernel issues
//            mma.sync on every NVIDIA arch, so on sm90 it runs against mma.sync's ceiling, not wgmma's;
// path_factor that ceiling as a fraction of the peak: 1 on the native path; elsewhere measured, from tensor-path
//            probes where published (mma.sync on Hopper: about 0.65) or from the same family's points on both
//            paths (ln rate/peak off the native-path mean);
// e(x)       the family's efficiency against its path's ceiling, saturating in the size x (GEMM: cbrt(m n k);
//            attention: sequence length; memory: bytes a kernel moves); E at four levels, the most specific
//            with data wins: the GPU's own points, a sibling's (same arch, per-SM rate within 25 %), its arch's,
//            the family's over every GPU. h is the family's.
// A transfer carries each category's calibrated rate by the ratio of the two GPUs' achieved rates
// (model/transfer.cpp), and its interval by the held-out error of such ratios between GPUs at that distance
// (same arch, another arch, another vendor): held_out_pairs below.
#include <string>
#include <vector>

#include "model/gpus.hpp"
#include "model/public_points.hpp"

namespace stepcast::model {

// The size a point's efficiency depends on: GEMM cbrt(m n k), attention seqlen, memory bytes (0: not stated,
// read as large: e = E).
double point_size(const PublicPoint& p);

// The ceiling of a tensor path on an arch as a fraction of the datasheet peak, and what measured it.
struct PathFactor {
  double value = 1;
  int points = 0;
  std::string how;  // "native", "probe", "family pairs", "unmeasured"
  std::vector<std::string> files;
};

// One family's curve at one level: ln E, h (the family's), and the points that set E.
struct Curve {
  double log_e = 0;
  double half_x = 0;
  int points = 0;
  std::vector<std::string> files;
};

// A category's (or a point's) achieved rate on a GPU at a size, and the data it rests on.
struct Achieved {
  double rate = 0;         // TFLOP/s, or GB/s for memory
  double peak = 0;         // the datasheet figure it is a fraction of
  PathFactor path_factor;  // the path's ceiling
  double efficiency = 1;   // e(x): of the path's ceiling
  std::string family, path;
  std::string level;       // "gpu", "sibling NAME", "arch", "family", or "none" (no public point: the path's
                           // ceiling itself)
  Curve curve;             // the level's curve
};

class EfficiencyModel {
 public:
  // Fits every family's curve and every non-native path's factor from `points`, leaving out the points of the
  // GPU called `without_gpu` (a held-out check), if any.
  EfficiencyModel(const std::vector<PublicPoint>& points, const std::vector<GpuSpec>& gpus,
                  const std::vector<ArchSpec>& archs, const std::string& without_gpu = "");

  PathFactor path_factor(const std::string& arch, const std::string& path) const;
  // What `gpu` achieves for `category` at size x (its arch's family and path for that category).
  Achieved achieved(const GpuInfo& gpu, KernelCategory category, double x) const;
  // What `gpu` achieves for `category` at size x with the kernels `choice` (a stack that runs another family than
  // its arch's, e.g. FlashAttention 2 on sm90).
  Achieved achieved(const GpuInfo& gpu, KernelCategory category, const KernelChoice& choice, double x) const;
  // What the model says a point's own GPU, family, path and size achieve (for held-out checks).
  Achieved achieved(const PublicPoint& p) const;
  // The families with curves, for reports.
  std::vector<std::string> families() const;
  const Curve* curve(const std::string& family, const std::string& level, const std::string& key) const;

 private:
  Achieved rate_of(const GpuInfo& gpu, const std::string& family, const std::string& path, bool memory, double x) const;
  struct Family {
    Curve all;
    std::vector<std::pair<std::string, Curve>> by_arch, by_gpu;
  };
  const Curve* sibling_curve(const Family& f, const GpuInfo& gpu, const std::string& path, bool memory,
                             std::string& name) const;
  std::vector<std::pair<std::string, Family>> families_;
  std::vector<std::pair<std::string, PathFactor>> factors_;  // "arch/path"
  std::vector<GpuSpec> gpus_;
  std::vector<ArchSpec> archs_;
};

// How far apart two GPUs are for a transfer; each distance has its measured error band. same_arch: the same
// arch with a tensor rate per SM within 25 % (a card of the same silicon); the same arch at another density
// counts as another arch (their kernels' efficiencies differ as much).
enum class Distance { same_gpu, same_arch, another_arch, another_vendor };
Distance gpu_distance(const GpuInfo& a, const GpuInfo& b);
const char* distance_name(Distance d);  // "the same GPU", "the same arch and SM density", "another arch", ...

// A held-out check: a published point of one GPU predicted from the same family's point (same kind, direction,
// head_dim, causal, size within 1.5x) on another GPU, by the ratio of their achieved rates in a model fitted
// without the predicted GPU's points.
struct HeldOutPair {
  PublicPoint target, source;
  double predicted = 0;
  Distance distance = Distance::same_gpu;
  double error() const { return predicted / target.value - 1; }
};
std::vector<HeldOutPair> held_out_pairs(const std::vector<PublicPoint>& points, const std::vector<GpuSpec>& gpus,
                                        const std::vector<ArchSpec>& archs);

// The relative half-width covering 90 % of the held-out pairs at a distance (symmetric in the ratio: a
// prediction 1.3x high and one 1.3x low count alike); the largest when fewer than 10 pairs.
struct ErrorBand {
  double half_width = 0;
  int pairs = 0;
  int gpus = 0;  // distinct predicted GPUs
};
ErrorBand error_band(const std::vector<HeldOutPair>& pairs, Distance d);

// The model and bands of the shipped points, the table's GPUs and archs (computed once).
const EfficiencyModel& shipped_efficiency();
ErrorBand shipped_band(Distance d);

}  // namespace stepcast::model
