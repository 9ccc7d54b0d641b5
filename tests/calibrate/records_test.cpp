// Record reader/writer: strict, line-numbered, every problem at once; append-only writer.
#include <unistd.h>

#include <filesystem>

#include "calibrate/records.hpp"
#include "catch.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"

using stepcast::calibrate::append_record;
using stepcast::calibrate::read_records;
using stepcast::calibrate::Record;
using stepcast::testing::TempFile;

namespace {
const char* kGood =
    R"({"model": "gemma-4-26b-a4b", "gpu": "NVIDIA H200", "tier": "sdpa/grouped_mm", "rows": [2048, 1024], "width": 2048, "step_s": 1.012, "peak_gib": 63.99, "kept_tokens": 2427, "seed": 7})";

std::vector<std::string> problems_of(const std::string& text) {
  TempFile f(text, ".jsonl");
  try {
    read_records(f.path());
  } catch (const stepcast::InputError& e) {
    return e.problems();
  }
  return {};
}
}  // namespace

TEST_CASE("a record line reads into a Record, keeping unknown fields", "[records]") {
  TempFile f(std::string(kGood) + "\n\n" + R"({"model":"m","gpu":"g","tier":"t","rows":[4],"width":8,"oom":true})" + "\n",
             ".jsonl");
  const auto records = read_records(f.path());
  REQUIRE(records.size() == 2);
  CHECK(records[0].rows == std::vector<int64_t>{2048, 1024});
  CHECK(records[0].width == 2048);
  CHECK(*records[0].step_s == Approx(1.012));
  CHECK(*records[0].peak_gib == Approx(63.99));
  CHECK(*records[0].kept_tokens == 2427);
  CHECK(records[0].extra.at("seed") == 7);
  CHECK(records[0].line == 1);
  CHECK(records[0].has_padding());
  CHECK(records[1].line == 3);
  CHECK(records[1].oom);
  CHECK_FALSE(records[1].step_s.has_value());
  CHECK_FALSE(records[1].usable_peak());
}

TEST_CASE("every bad line is reported with its line number, all at once", "[records]") {
  struct Case {
    std::string line;
    std::string expect;  // a fragment of the message, after "file:2"
  };
  auto c = GENERATE(values<Case>({
      {R"({"model": "m", "gpu": "g", "tier": "t", "rows": [1], "width": 8, "step_s": 1,})", ":2:"},
      {R"({"gpu": "g", "tier": "t", "rows": [1], "width": 8, "step_s": 1})", "model is missing"},
      {R"({"model": "m", "gpu": "g", "tier": "t", "rows": [], "width": 8, "step_s": 1})", "rows = []"},
      {R"({"model": "m", "gpu": "g", "tier": "t", "rows": [9], "width": 8, "step_s": 1})", "width >= max(rows)"},
      {R"({"model": "m", "gpu": "g", "tier": "t", "rows": [1], "width": 8})", "step_s is missing"},
      {R"({"model": "m", "gpu": "g", "tier": "t", "rows": [1], "width": 8, "step_s": -1})", "step_s = -1"},
      {R"({"model": "m", "gpu": "g", "tier": "t", "rows": [1], "width": 8, "step_s": 1, "oom": "yes"})", "oom"},
      {R"({"model": "m", "gpu": "g", "tier": "t", "rows": [1], "width": 8.5, "step_s": 1})", "width = 8.5"},
      {R"([1, 2])", "not a JSON object"},
  }));
  const auto problems = problems_of(std::string(kGood) + "\n" + c.line + "\n" + kGood + "\n");
  INFO(c.line);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find(".jsonl:2") != std::string::npos);
  CHECK(problems[0].find(c.expect) != std::string::npos);
}

TEST_CASE("field problems name the column of the key", "[records]") {
  const auto problems = problems_of(R"({"model": "m", "gpu": "g", "tier": "t", "rows": [1], "width": 8, "step_s": 0})");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find(".jsonl:1:66: step_s = 0") != std::string::npos);
}

TEST_CASE("several bad lines give several problems", "[records]") {
  const auto problems = problems_of("{\n" + std::string(kGood) + "\n{\"model\": 1}\n");
  CHECK(problems.size() >= 3);  // line 1 syntax; line 3: model type, gpu/tier/rows/width/step_s missing
  CHECK(problems[0].find(":1:") != std::string::npos);
  CHECK(problems.back().find(":3") != std::string::npos);
}

TEST_CASE("a missing file is an InputError", "[records]") {
  CHECK_THROWS_AS(read_records("/nonexistent/stepcast.jsonl"), stepcast::InputError);
}

TEST_CASE("append_record writes one line that reads back", "[records]") {
  const auto path = std::filesystem::temp_directory_path() / ("stepcast_append_" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  Record r;
  r.model = "gemma-4-26b-a4b";
  r.gpu = "NVIDIA H200";
  r.tier = "sdpa-auto/grouped";
  r.rows = {100, 50};
  r.width = 128;
  r.step_s = 0.5;
  r.peak_gib = 60.0;
  r.extra["probe"] = "scaling";
  append_record(path.string(), r);
  append_record(path.string(), r);
  const auto back = read_records(path.string());
  std::filesystem::remove(path);
  REQUIRE(back.size() == 2);
  CHECK(back[1].line == 2);
  CHECK(back[1].rows == r.rows);
  CHECK(back[1].extra.at("probe") == "scaling");
}

TEST_CASE("rank and world_size are optional, together, and rank < world_size", "[records][rank]") {
  const std::string base = std::string(kGood).substr(0, std::string(kGood).size() - 1);
  {
    TempFile f(base + R"(, "rank": 1, "world_size": 2})" + "\n", ".jsonl");
    const auto records = read_records(f.path());
    REQUIRE(records.size() == 1);
    CHECK(records[0].rank == 1);
    CHECK(records[0].world_size == 2);
    CHECK(stepcast::calibrate::to_json(records[0])["rank"] == 1);  // written back as a contract field
  }
  TempFile plain(std::string(kGood) + "\n", ".jsonl");
  CHECK_FALSE(read_records(plain.path())[0].rank.has_value());
  const auto problems = [&](const std::string& fields) {
    const auto p = problems_of(base + ", " + fields + "}\n");
    return p.empty() ? std::string() : p.front();
  };
  CHECK_THAT(problems(R"("rank": 2, "world_size": 2)"), Catch::Matchers::Contains("rank < world_size"));
  CHECK_THAT(problems(R"("rank": 0)"), Catch::Matchers::Contains("both or neither"));
  CHECK_THAT(problems(R"("world_size": 2)"), Catch::Matchers::Contains("rank"));
  CHECK_THAT(problems(R"("rank": -1, "world_size": 2)"), Catch::Matchers::Contains("rank = -1"));
}

TEST_CASE("a record's own LoRA reads into Record::lora and stays in the written record", "[records][lora]") {
  const std::string line =
      R"({"model": "m", "gpu": "g", "tier": "t", "rows": [4], "width": 8, "step_s": 1, "lora": {"alpha": 32.0, "dropout": 0.05, "dtype": "float32", "modules": 192, "rank": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"]}})";
  TempFile f(line + "\n", ".jsonl");
  const auto records = read_records(f.path());
  REQUIRE(records.size() == 1);
  REQUIRE(records[0].lora.has_value());
  CHECK(records[0].lora->rank == 16);
  CHECK(records[0].lora->alpha == Approx(32.0));
  CHECK(records[0].lora->targets == std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj"});
  CHECK(*records[0].lora->modules == 192);
  CHECK(records[0].lora->dtype == "float32");
  CHECK(stepcast::calibrate::to_json(records[0])["lora"]["dropout"] == 0.05);  // written back unchanged
  const auto lora = stepcast::calibrate::lora_choice(records[0], 8);
  CHECK(lora.rank == 16);
  CHECK(lora.targets.size() == 4);
  CHECK_FALSE(lora.autocast);  // a record without the key trained without autocast
  std::string mixed = line;
  mixed.replace(mixed.find("\"dtype\""), 0, "\"autocast\": true, ");
  TempFile g(mixed + "\n", ".jsonl");
  CHECK(stepcast::calibrate::lora_choice(read_records(g.path())[0], 8).autocast);
  CHECK(lora.adapter_dtype == stepcast::model::AdapterDtype::float32);  // peft's default, as the record says
  std::string bf16 = line;
  bf16.replace(bf16.find("\"float32\""), 9, "\"bfloat16\"");
  TempFile b(bf16 + "\n", ".jsonl");
  CHECK(stepcast::calibrate::lora_choice(read_records(b.path())[0], 8).adapter_dtype ==
        stepcast::model::AdapterDtype::bfloat16);
  CHECK(stepcast::calibrate::lora_key(stepcast::calibrate::lora_choice(read_records(b.path())[0], 8)) !=
        stepcast::calibrate::lora_key(lora));
  std::string bad = line;
  bad.replace(bad.find("\"dtype\""), 0, "\"autocast\": \"yes\", ");
  TempFile h(bad + "\n", ".jsonl");
  CHECK_THROWS_WITH(read_records(h.path()), Catch::Matchers::Contains("autocast"));
  Record plain;
  CHECK(stepcast::calibrate::lora_choice(plain, 8).rank == 8);
  CHECK(stepcast::calibrate::lora_choice(plain, 8).targets.empty());
}

TEST_CASE("a bad lora object is refused at the column of its key", "[records][lora]") {
  const std::string head = R"({"model": "m", "gpu": "g", "tier": "t", "rows": [4], "width": 8, "step_s": 1, )";
  struct Case { std::string lora; std::string expect; };
  auto c = GENERATE(values<Case>({
      {R"("lora": {"rank": -1, "targets": ["q_proj"]}})", ".jsonl:1:88: lora.rank = -1"},
      {R"("lora": {"rank": 16, "targets": []}})", ".jsonl:1:100: lora.targets = []"},
      {R"("lora": {"rank": 16, "targets": ["q_proj", 3]}})", "lora.targets"},
      {R"("lora": {"rank": 16}})", "lora.targets = null"},
      {R"("lora": 16})", ".jsonl:1:79: lora = 16"},
      {R"("lora": {"rank": 16, "targets": ["q_proj"], "modules": -2}})", "lora.modules = -2"},
  }));
  const auto problems = problems_of(head + c.lora + "\n");
  INFO(c.lora);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find(c.expect) != std::string::npos);
}

TEST_CASE("a LoRA target the model lacks is refused at its record's file:line:col", "[records][lora]") {
  const std::string good =
      R"({"model": "m", "gpu": "g", "tier": "t", "rows": [4], "width": 8, "step_s": 1, "lora": {"rank": 16, "targets": ["q_proj"]}})";
  const std::string bad =
      R"({"model": "m", "gpu": "g", "tier": "t", "rows": [4], "width": 8, "step_s": 1, "lora": {"rank": 16, "targets": ["q_proj", "qkv_proj"]}})";
  TempFile f(good + "\n" + bad + "\n", ".jsonl");
  const auto records = read_records(f.path());
  const std::vector<std::string> names{"k_proj", "o_proj", "q_proj", "v_proj"};
  try {
    stepcast::calibrate::check_lora_targets(records, names, "llama-3-8b");
    FAIL("an unknown target was accepted");
  } catch (const stepcast::InputError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].find(".jsonl:2:100: lora target 'qkv_proj' is not an nn.Linear of llama-3-8b") !=
          std::string::npos);
    CHECK(e.problems()[0].find("k_proj, o_proj, q_proj, v_proj") != std::string::npos);
  }
  CHECK_NOTHROW(stepcast::calibrate::check_lora_targets({records[0]}, names, "llama-3-8b"));
}

TEST_CASE("a record without gradient checkpointing is priced as one: its own key, its own features", "[records]") {
  TempFile f(std::string(kGood) + "\n" +
                 R"({"model":"m","gpu":"g","tier":"t","rows":[4],"width":8,"step_s":0.1,"gradient_checkpointing":"off"})" + "\n" +
                 R"({"model":"m","gpu":"g","tier":"t","rows":[4],"width":8,"step_s":0.1,"gradient_checkpointing":"reentrant"})" + "\n",
             ".jsonl");
  const auto records = read_records(f.path());
  REQUIRE(records.size() == 3);
  using stepcast::calibrate::lora_choice;
  using stepcast::calibrate::lora_key;
  CHECK(lora_choice(records[0], 16).checkpointing);  // no key: the layer recomputed, as every older record
  CHECK_FALSE(lora_choice(records[1], 16).checkpointing);
  CHECK(lora_choice(records[2], 16).checkpointing);
  CHECK(lora_key(lora_choice(records[1], 16)) != lora_key(lora_choice(records[2], 16)));
}
