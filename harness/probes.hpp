#pragma once
// The sm_120 study's four probes as sweeps that write measurement records:
//   scaling  - unpadded rows: step time and peak against width and rows
//   padding  - the same shapes with a share of pad tokens (right-padded rows, explicit 4-D masks)
//   ce       - a full step plus the cross-entropy alone (fp32 logits, softcap, CE; forward + backward)
//   kernels  - a full step plus one more under CUPTI: kernel table and launch counts beside the records
//   host-floor - small widths (128-1,024) where the host, not the GPU, bounds the step: the usual timing plus
//              `launches_per_step` (one more step under CUPTI, when available) and `host_wall_s`. The
//              point `host-floor` alone expands to kHostFloorWidths x kHostFloorRows.
//   first-seen - a shape new to the process: the very first step is timed on its own (`first_step_s`, host
//              wall clock with synchronisation; `first_step_event_s`, CUDA events), then the usual warm-up
//              and repetitions; `first_in_process` says whether it was the process's first forward. A
//              shape the process has already run is refused. When the sweep's first point is first-seen
//              the primer step runs after it, not before, so that the point sees the process start.
// Every point also records `host_wall_s`: the host's wall clock from before the forward is issued to the
// return of backward, before any synchronisation (how long the host needs to issue the step).
// Each point: warm-up steps, N timed steps (CUDA events), the median; the peak from the caching
// allocator (reset after warm-up); the allocated-memory baseline checked before the point and after an
// OOM; an OOM is an `oom: true` record and the sweep goes on once the memory is back at the baseline (see
// run_sweep); a re-run skips points already in the file.
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "harness/activity.hpp"
#include "harness/device.hpp"
#include "harness/model.hpp"
#include "harness/tier.hpp"

namespace stepcast::harness {

// The host-floor preset: every width x every rows, in this order (widths outer).
inline constexpr int64_t kHostFloorWidths[] = {128, 256, 512, 1024};
inline constexpr int64_t kHostFloorRows[] = {1, 2, 4, 8};

struct Shape {
  int64_t rows = 1;
  int64_t width = 0;
};

struct SweepOptions {
  std::string model_label;                     // the record's `model`
  std::vector<std::string> probes = {"scaling"};
  std::vector<Shape> shapes;                   // rows x width; every probe runs every shape
  std::vector<double> padding = {0.25, 0.5};   // padding probe: share of the R x W tokens that are pads
  std::vector<std::string> tiers = {kDefaultTier};
  // Explicit points after the probes x shapes x tiers product: "PROBE:RxW[:PADDING][:TIER]", e.g.
  // "padding:2x4096:0.25:sdpa-efficient/grouped" (TIER defaults to the first of `tiers`). The point
  // "host-floor[:TIER]" expands to the host-floor preset.
  std::vector<std::string> points;
  int64_t warmup = 1;
  int64_t repetitions = 3;
  int64_t max_tokens = 0;                      // skip points with more than R x W tokens (0 = no limit)
  uint64_t seed = 1234;
  std::string out;                             // the JSON Lines file records are appended to
  std::string kernel_dir;                      // kernel tables; default: `<out without .jsonl>.kernels/`
  std::string command;                         // the command line, written into each record's `source`
  // One short step per tier before the baseline is taken, so library workspaces that live for the whole
  // process (cuBLAS: 64 MiB seen on the H200) are not mistaken for a leak.
  bool primer = true;
};

struct PointSpec {
  std::string probe;
  std::string tier;
  std::vector<int64_t> rows;  // real tokens per row
  int64_t width = 0;
  double padding_frac = 0;    // 1 - sum(rows) / (R x W)
  std::string key() const;    // probe|tier|rows|width: what a re-run compares to skip a point
};

// Rows for R rows of width W with a share `padding` of pad tokens: the model library's rule, which predictions of
// a probe point use too (model/batch.hpp).
using model::padded_rows;

// Every point of a sweep, in order (validated: bad probes/tiers/shapes are InputErrors).
std::vector<PointSpec> plan_points(const SweepOptions& options);

std::string point_key(const std::string& probe, const std::string& tier, const std::vector<int64_t>& rows,
                      int64_t width);

// Keys of the points already in `path` (missing file: none).
std::vector<std::string> measured_keys(const std::string& path);

struct SweepSummary {
  int measured = 0;
  int skipped = 0;  // already in the file
  int oom = 0;
  int failed = 0;   // an error other than OOM: reported on stderr, no record
  double device_seconds = 0;  // wall time of the sweep's points, warm-up and tables included
};

// Fault injection for the reliability tests (docs/harness.md "Faults"), from $STEPCAST_HARNESS_FAULT:
//   kill@N  SIGKILL after point N (1-based, in sweep order) is measured and before its record is appended
//   oom@N   point N fails with an out-of-memory error
//   leak@N  as oom@N, and the allocated memory then reads 1 MiB above the baseline
struct Faults {
  int64_t kill_at = 0;  // 0: none
  int64_t oom_at = 0;
  int64_t leaked_bytes = 0;  // added to the allocated memory after the injected OOM
};
inline constexpr const char* kFaultVariable = "STEPCAST_HARNESS_FAULT";
// Unset or empty: no faults. Throws InputError on anything else than the forms above.
Faults faults_from_env();

// Runs the points through `model` and appends one record per point (write + fsync each: a killed sweep
// keeps every finished point, and a re-run skips them and re-runs the interrupted one). After an OOM the
// allocated memory must be back at the baseline before the next point; otherwise the sweep stops
// (CheckFailed) with the OOM record written, since every later peak would include the leaked blocks.
// `activity` may be null (no tables).
SweepSummary run_sweep(Model& model, const SweepOptions& options, const DeviceInfo& device, ActivitySource* activity);

// One more step of `batch` under `activity` (gradients zeroed around it), its CUPTI kernel table written to `file`
// with `label`; returns the step's activity records. The sweep's `kernels` probe and the run probe share it.
std::vector<ActivityRecord> write_step_kernel_table(Model& model, const Batch& batch, const Tier& tier,
                                                    const DeviceInfo& dev, ActivitySource& activity,
                                                    const std::string& label, const std::string& file);
std::string rows_text(const std::vector<int64_t>& rows);  // "4096,2048"
std::string file_safe(std::string s);                       // every character but [A-Za-z0-9._-] -> '_'

double median(std::vector<double> values);

// The fields every harness record carries (the record contract plus provenance: source, versions, LoRA, tier).
calibrate::Record point_record(const PointSpec& p, const SweepOptions& o, const DeviceInfo& dev, const Model& model,
                               const Tier& tier);

}  // namespace stepcast::harness
