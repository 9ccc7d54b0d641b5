// The kernel classes a fresh machine compiles (model/kernel_compiles.hpp, docs/host.md "Which micro-batches compile
// kernels"), on the shapes the records showed.
#include "model/kernel_compiles.hpp"

#include <utility>
#include <vector>

#include "catch.hpp"

namespace {

using stepcast::model::ColdKernelCache;
using stepcast::model::CompileClasses;
using stepcast::model::kernel_compile_class;
using stepcast::model::MicroBatch;

MicroBatch rows_of(std::vector<int64_t> rows, int64_t width) {
  MicroBatch b;
  b.rows = std::move(rows);
  b.width = width;
  return b;
}
MicroBatch padded(int64_t width) { return rows_of({width, width / 2}, width); }
MicroBatch full(int64_t width) { return rows_of({width, width}, width); }

}  // namespace

TEST_CASE("a padded micro-batch's class is its width's alignment, an unpadded one's whether 64 divides it",
          "[kernel_compiles]") {
  CHECK(kernel_compile_class(padded(4096)) == kernel_compile_class(padded(8192)));  // 128-aligned
  CHECK(kernel_compile_class(padded(4032)) != kernel_compile_class(padded(4096)));  // 64, not 128
  CHECK(kernel_compile_class(padded(3944)) == kernel_compile_class(padded(3952)));  // 8..32 share one
  CHECK(kernel_compile_class(padded(3944)) == kernel_compile_class(padded(2160)));
  CHECK(kernel_compile_class(padded(1860)) != kernel_compile_class(padded(2160)));  // 4 against 8
  CHECK(kernel_compile_class(padded(2446)) != kernel_compile_class(padded(1860)));  // 2 against 4
  CHECK(kernel_compile_class(padded(7525)) == kernel_compile_class(padded(3945)));  // odd
  CHECK(kernel_compile_class(full(4096)) == kernel_compile_class(full(1024)));
  CHECK(kernel_compile_class(full(4096)) != kernel_compile_class(full(3945)));
  CHECK(kernel_compile_class(full(4096)) != kernel_compile_class(padded(4096)));  // no mask, other kernels
  MicroBatch packed = full(4096);
  packed.packed = true;
  CHECK(kernel_compile_class(packed) == 0);
}

TEST_CASE("a run pays each class once: the seed-like mix's first padded widths compile four times",
          "[kernel_compiles]") {
  // measurements/records/h200-small-dense-runs: 2 x 2160, 1860, 7525 compiled, 3331 ... 3821 did not, 2446 did.
  CompileClasses classes(ColdKernelCache{3.0});
  double seconds = 0;
  for (int64_t w : {2160, 1860, 7525, 3331, 4951, 3015, 3664, 2463, 2059, 1980, 3316, 3397, 4157, 3821, 2446, 2358})
    seconds += classes.charge(padded(w));
  CHECK(classes.compiled() == 4);
  CHECK(seconds == Approx(12.0));
  CHECK(classes.charge(padded(8192)) == Approx(3.0));  // a 128-aligned padded width: new
  CHECK(classes.charge(padded(4096)) == 0.0);
}

TEST_CASE("only the head sizes whose padded layers run cuDNN compile", "[kernel_compiles]") {
  using stepcast::model::AttentionSpec;
  stepcast::model::ModelShape shape;
  AttentionSpec sliding;
  sliding.num_heads = 16;
  sliding.num_kv_heads = 8;
  sliding.head_dim = 256;
  AttentionSpec global = sliding;
  global.head_dim = 512;  // past cuDNN's 256: a prebuilt backend
  shape.layers = {sliding, sliding, global};
  const auto tier = stepcast::model::tier_from_label("hf-peft/sdpa-grouped_mm");
  const auto on_sm90 = stepcast::model::kernel_compile_heads(shape, tier, 90);
  REQUIRE(on_sm90.size() == 1);
  CHECK(on_sm90.front().first == 256);
  CHECK(stepcast::model::kernel_compile_heads(shape, tier, 80).empty());  // no cuDNN in sm80's dispatch order
}
