#pragma once
// One published measurement of measurements/public/ (docs/gpus.md): a kernel's achieved rate on a GPU, a
// tensor path's ceiling, or a whole training step's throughput, with where it was published. The files are
// checked by io/public_measurements.cpp when the project is built and compiled into this library, like the GPU
// table: the cost model does no I/O. Header-only, so that the build-time reader can fill it without this library.
#include <string>
#include <vector>

namespace stepcast::model {

struct PublicPoint {
  std::string file;       // the file under measurements/public/
  int line = 0;           // its line there
  std::string gpu;        // a name or alias of scenarios/gpus.yaml (any name for a fraction_of_peak row)
  std::string arch;       // "sm90", "gfx942": the table's arch for that GPU
  std::string kind;       // gemm | attention | memory | tensor_path | step
  std::string family;     // kernel family: blas, flash2, flash3, cudnn, cutlass_efficient, ck, copy, ...
  std::string path;       // tensor instruction path the kernel issues: mma, wgmma, tcgen05, mfma ("" for memory)
  std::string dtype;      // bf16, fp16 (their tensor-core rates are the same on every GPU of the table)
  std::string direction;  // attention: fwd, bwd, fwd+bwd
  double m = 0, n = 0, k = 0;  // GEMM shape
  double batch = 0, heads = 0, head_dim = 0, seqlen = 0;  // attention shape; seqlen also a step's row length
  bool causal = false;
  double bytes = 0;       // memory: bytes moved by one kernel (read + write); 0 = not stated (large)
  double value = 0;       // in `unit`
  std::string unit;       // tflops | gbs | fraction_of_peak | tokens_per_s_per_gpu | run_s
  std::string source;     // repository + file, or paper / vendor document
  std::string locator;    // commit, table, figure or section
  std::string read;       // the date it was read, YYYY-MM-DD
  std::string note;
  std::string model;      // step: a model of scenarios/models/
  std::string method;     // step: lora, qlora, full
  double micro_batch = 0; // step: rows per micro-batch
  double gpus = 0;        // step: GPUs the figure was measured on
};

// The shipped points, in file and line order (generated from measurements/public/*.csv at build time).
const std::vector<PublicPoint>& public_points();

}  // namespace stepcast::model
