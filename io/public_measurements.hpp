#pragma once
// measurements/public/*.csv → model::PublicPoint (docs/gpus.md, "The data"). One CSV file per source; every row
// says what was measured, on which GPU, its value and unit, and where it was published (source, locator, the
// date it was read). Read at build time by stepcast_public_table, which writes the initialiser the model library
// compiles in, and by tests; every problem with file:line:col, all of them at once (exit 2 in the tools).
#include <string>
#include <vector>

#include "model/gpus.hpp"
#include "model/public_points.hpp"

namespace stepcast::io {

// The columns a file may have, in any order (the header names them; unknown or repeated names are errors):
//   always   gpu, arch, kind, value, unit, source, locator, read   (+ note)
//   gemm     family, path, m, n, k                   unit tflops
//   attention family, path, direction, head_dim, seqlen (+ batch, heads, causal)   unit tflops
//   memory   family (+ bytes)                        unit gbs
//   tensor_path path                                 unit tflops, or fraction_of_peak
//   step     model, method, micro_batch, seqlen, gpus   unit tokens_per_s_per_gpu, or run_s (a whole run's seconds)
// `gpu` must be a name or alias of `gpus` (except in a fraction_of_peak row, which needs no peak) and `arch`
// that GPU's arch; `file` in each point is the path's last component.
std::vector<model::PublicPoint> load_public_measurements(const std::string& path,
                                                         const std::vector<model::GpuSpec>& gpus,
                                                         const std::vector<model::ArchSpec>& archs);

// The points as the body of a C++ brace initialiser of std::vector<model::PublicPoint>.
std::string public_points_initialiser(const std::vector<model::PublicPoint>& points);

}  // namespace stepcast::io
