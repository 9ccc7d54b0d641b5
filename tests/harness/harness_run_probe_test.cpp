// The end-to-end run probe on the CPU (tiny config): the micro-batches are build_schedule's, one record
// per micro-batch in the recorded-run schema, optimizer steps exactly on window ends, first-seen flags.
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>

#include "calibrate/records.hpp"
#include "calibrate/run_records.hpp"
#include "io/model_config.hpp"
#include "kernels/cupti_table.hpp"
#include "harness/run_probe.hpp"
#include "model/errors.hpp"
#include "planner/batching.hpp"
#include "temp_file.hpp"
// After the Torch headers: glog (Debian's LibTorch) defines its own CHECK, Catch's must win.
#include "catch.hpp"

namespace h = stepcast::harness;
namespace p = stepcast::planner;

namespace {

h::RunOptions options(const std::string& out, p::Policy policy) {
  h::RunOptions o;
  o.model_label = "tiny-llama";
  o.tier = "sdpa-auto/loop";
  o.batching.policy = policy;
  o.batching.micro_batch = 2;
  o.batching.max_length = 24;
  o.batching.seed = 7;
  o.accumulation = 3;
  o.corpus_label = "test";
  o.out = out;
  o.command = "test";
  o.progress = false;
  return o;
}

p::Corpus corpus() {
  p::Corpus c;
  c.lengths = {5, 12, 30, 7, 18, 3, 25, 9, 14, 22, 2, 16, 11};  // 13 samples: 7 micro-batches of 2 (last 1)
  return c;
}

}  // namespace

TEST_CASE("run probe records the micro-batches of build_schedule with windows and first-seen flags", "[harness][run]") {
  const auto shape = stepcast::io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json");
  h::BuildOptions b;
  b.dtype = torch::kFloat;
  b.lora.rank = 4;
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  const auto policy = GENERATE(p::Policy::pad_to_longest, p::Policy::bucket_to_pair);
  CAPTURE(p::policy_name(policy));
  h::Model model(shape, b);
  const auto before = model.adapter_parameters()[1].clone();  // lora_B: zero at init, moved by AdamW
  const h::RunOptions o = options(out.path(), policy);
  const h::RunSummary s = h::run_recorded(model, corpus(), o, h::device_info(torch::kCPU));
  const p::Schedule schedule = p::build_schedule(corpus(), o.batching);
  const int64_t n = schedule.num_batches();
  REQUIRE(n == 7);
  CHECK(s.micro_batches == n);
  CHECK(s.optimizer_steps == 3);  // windows end at 2, 5 and the run's end, 6
  CHECK_FALSE(torch::equal(before, model.adapter_parameters()[1]));

  const auto records = stepcast::calibrate::read_records(out.path());
  REQUIRE(static_cast<int64_t>(records.size()) == n);
  std::set<std::pair<int64_t, int64_t>> seen;
  int64_t distinct = 0;
  double last_elapsed = 0;
  stepcast::model::MicroBatch mb;
  for (int64_t i = 0; i < n; ++i) {
    CAPTURE(i);
    const auto& r = records[static_cast<size_t>(i)];
    const auto& run = r.extra["run"];
    schedule.fill(i, mb);
    CHECK(r.extra["probe"] == "run");
    CHECK(r.rows == mb.rows);
    CHECK(r.width == mb.width);
    CHECK(run["index"] == i);
    CHECK(run["optimizer_step"] == i / 3);
    CHECK(run["id"] == "test/" + p::policy_name(policy));
    CHECK(run["policy"] == p::policy_name(policy));
    CHECK(run["micro_batch"] == 2);
    CHECK(run["accumulation"] == 3);
    CHECK(run["max_length"] == 24);
    const bool window_end = i == 2 || i == 5 || i == 6;
    CHECK(run.contains("optimizer_s") == window_end);
    const bool first = seen.emplace(static_cast<int64_t>(mb.rows.size()), mb.width).second;
    distinct += first ? 1 : 0;
    CHECK(run["first_seen"] == first);
    CHECK(run.contains("corpus_lengths") == (i == 0));
    const double elapsed = run["elapsed_s"].get<double>();
    CHECK(elapsed >= last_elapsed);
    CHECK(elapsed >= *r.step_s);
    last_elapsed = elapsed;
    CHECK(std::isfinite(r.extra["loss"].get<double>()));
  }
  CHECK(s.distinct_shapes == distinct);
  CHECK(s.total_s == Approx(last_elapsed));
  CHECK(records[0].extra["run"]["corpus_lengths"].get<std::vector<int32_t>>() == corpus().lengths);

  const auto runs = stepcast::calibrate::read_runs(records, out.path());
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].steps.size() == static_cast<size_t>(n));
  CHECK(runs[0].total_s() == Approx(last_elapsed));

  // The same run id again in the same file: refused before anything runs.
  CHECK_THROWS_AS(h::run_recorded(model, corpus(), o, h::device_info(torch::kCPU)), stepcast::InputError);
}

TEST_CASE("run probe refuses 1-token samples and bad knobs all at once", "[harness][run]") {
  h::RunOptions o = options("", p::Policy::pack);
  o.accumulation = 0;
  p::Corpus c;
  c.lengths = {1, 5, 1};
  try {
    h::check_run(c, o);
    FAIL("expected InputError");
  } catch (const stepcast::InputError& e) {
    REQUIRE(e.problems().size() == 2);
    CHECK(e.problems()[0].find("--accumulation = 0") != std::string::npos);
    CHECK(e.problems()[1].find("2 sample(s)") != std::string::npos);
  }
}

TEST_CASE("run probe runs packed schedules as packed rows and records their documents", "[harness][run][packing]") {
  const auto shape = stepcast::io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json");
  h::BuildOptions b;
  b.dtype = torch::kFloat;
  b.lora.rank = 4;
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  const auto [policy, attention] = GENERATE(std::make_pair(p::Policy::padding_free, stepcast::model::DocumentAttention::varlen),
                                            std::make_pair(p::Policy::pack, stepcast::model::DocumentAttention::block_mask));
  CAPTURE(p::policy_name(policy));
  h::Model model(shape, b);
  h::RunOptions o = options(out.path(), policy);
  o.batching.pack_attention = attention;
  o.kernel_batch = 1;
  o.kernel_dir = out.path() + ".kernels";
  h::ReplaySource activity({{"kernel", "flash_fwd_varlen_kernel", 0, 2000}, {"kernel", "flash_fwd_varlen_kernel", 5000, 6000}});
  const h::RunSummary s = h::run_recorded(model, corpus(), o, h::device_info(torch::kCPU), &activity);
  const p::Schedule schedule = p::build_schedule(corpus(), o.batching, o.accumulation);
  CHECK(s.micro_batches == schedule.num_batches());
  const auto records = stepcast::calibrate::read_records(out.path());
  REQUIRE(records.size() == static_cast<size_t>(schedule.num_batches()));
  stepcast::model::MicroBatch mb;
  int64_t documents = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    schedule.fill(static_cast<int64_t>(i), mb);
    const auto& run = records[i].extra["run"];
    CHECK(run["pack_attention"] == p::pack_attention_name(attention));
    CHECK(run.contains("packer") == (policy == p::Policy::pack));
    const auto per_row = run["documents"].get<std::vector<std::vector<int64_t>>>();
    REQUIRE(per_row.size() == mb.rows.size());
    for (size_t r = 0; r < per_row.size(); ++r) {
      int64_t tokens = 0;
      for (int64_t len : per_row[r]) tokens += len;
      CHECK(tokens == mb.rows[r]);
      documents += static_cast<int64_t>(per_row[r].size());
    }
    CHECK(std::isfinite(records[i].extra["loss"].get<double>()));
  }
  CHECK(documents == static_cast<int64_t>(corpus().lengths.size()));  // every sample ran once
  if (policy == p::Policy::padding_free) CHECK(records[0].rows.size() == 1);  // R samples in one row
  CHECK(stepcast::calibrate::read_runs(records, out.path()).size() == 1);
  // The kernel table of micro-batch 1, captured after the run from the activity source.
  const auto table = stepcast::kernels::read_cupti_table(s.kernel_table);
  REQUIRE(table.rows.size() == 1);
  CHECK(table.rows[0].count == 2);
  CHECK(table.rows[0].total_ns == 3000);
  CHECK(table.header.label.find("micro-batch 1") != std::string::npos);
  std::filesystem::remove_all(o.kernel_dir);
}

TEST_CASE("the synthetic fine-tuning mix has a median near 700 tokens and a tail to max_length", "[harness][run]") {
  const p::Corpus c = p::generate_synthetic(h::finetune_mix(20000, 7, 4096));
  std::vector<int32_t> sorted = c.lengths;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted[sorted.size() / 2] > 600);
  CHECK(sorted[sorted.size() / 2] < 800);
  CHECK(sorted.back() == 4096);
  CHECK(sorted.front() >= 16);
  CHECK(p::generate_synthetic(h::finetune_mix(64, 7, 4096)).lengths == p::generate_synthetic(h::finetune_mix(64, 7, 4096)).lengths);
}

TEST_CASE("run probe hands pad_to_multiple_of to the planner", "[harness][run]") {
  const auto shape = stepcast::io::load_model_config(std::string(STEPCAST_TEST_DATA) + "/configs/tiny-llama.json");
  h::BuildOptions b;
  b.dtype = torch::kFloat;
  b.lora.rank = 4;
  h::Model model(shape, b);
  stepcast::testing::TempFile out("", ".jsonl");
  std::filesystem::remove(out.path());
  h::RunOptions o = options(out.path(), p::Policy::pad_to_longest);
  o.pad_to_multiple_of = 16;
  const h::RunSummary s = h::run_recorded(model, corpus(), o, h::device_info(torch::kCPU));
  CHECK(s.id == "test/pad-to-longest/pad-16");
  p::BatchingSpec spec = o.batching;
  spec.pad_to_multiple_of = 16;
  const p::Schedule schedule = p::build_schedule(corpus(), spec);
  const auto records = stepcast::calibrate::read_records(out.path());
  REQUIRE(static_cast<int64_t>(records.size()) == schedule.num_batches());
  for (size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].width % 16 == 0);
    CHECK(records[i].width == schedule.batch_width[i]);
    CHECK(records[i].extra["run"]["pad_to_multiple_of"] == 16);
  }
  CHECK(s.distinct_shapes < 7);  // widths rounded to 16 or 32 collapse shapes
}
