// Strict validation of our own YAML inputs: every problem at once, each with file:line:col.
#include "catch.hpp"
#include "io/document.hpp"
#include "temp_file.hpp"

using namespace stepcast;
using Catch::Matchers::Contains;

namespace {

struct Spec {
  int64_t schema_version = 0;
  int64_t micro_batch = 1;
  double window_hours = 0;
  std::string policy = "fixed";
};

// A tiny spec reader in the house style: read every field, then finish() to catch unknown keys.
Spec read_spec(const std::string& path) {
  YAML::Node root = io::load_yaml_file(path);
  Diagnostics d;
  Spec s;
  io::MapReader r(root, path, "", d);
  r.read("schema_version", s.schema_version, true, 1);
  io::MapReader batch = r.child("batch");
  batch.read("micro_batch", s.micro_batch, true, 1);
  batch.read_choice("policy", s.policy, {"fixed", "pad-to-longest"}, false);
  batch.finish();
  r.read("window_hours", s.window_hours, false, 0.0);
  r.finish();
  d.throw_if_any();
  return s;
}

std::vector<std::string> problems_of(const std::string& yaml) {
  testing::TempFile f(yaml, ".yaml");
  try {
    read_spec(f.path());
  } catch (const InputError& e) {
    std::vector<std::string> out;
    for (const auto& p : e.problems()) out.push_back(p.substr(f.path().size()));  // drop the temp path
    return out;
  }
  return {};
}

}  // namespace

TEST_CASE("a valid spec reads cleanly", "[validation]") {
  testing::TempFile f("schema_version: 1\nbatch:\n  micro_batch: 2\n  policy: pad-to-longest\nwindow_hours: 13.9\n", ".yaml");
  const Spec s = read_spec(f.path());
  CHECK(s.micro_batch == 2);
  CHECK(s.policy == "pad-to-longest");
  CHECK(s.window_hours == Approx(13.9));
}

TEST_CASE("each kind of bad input names its place and its rule", "[validation]") {
  struct Case {
    std::string yaml;
    std::string expected;
  };
  auto c = GENERATE(values<Case>({
      {"batch:\n  micro_batch: 2\n", ":1:1: schema_version is missing. Violated constraint: required"},
      {"schema_version: 1\nbatch:\n  micro_batch: 0\n", ":3:16: batch.micro_batch = 0. Violated constraint: > 0"},
      {"schema_version: 1\nbatch:\n  micro_batch: -3\n", ":3:16: batch.micro_batch = -3. Violated constraint: > 0"},
      {"schema_version: 1\nbatch:\n  micro_batch: two\n", ":3:16: batch.micro_batch = 'two'. Violated constraint: an integer"},
      {"schema_version: 1\nbatch:\n  micro_batch: 2\n  polcy: fixed\n", ":4:3: unknown key 'batch.polcy'"},
      {"schema_version: 1\nbatch:\n  micro_batch: 2\n  policy: packed\n", ":4:11: batch.policy = 'packed'. Violated constraint: one of fixed, pad-to-longest"},
      {"schema_version: 1\nbatch: 3\n", ":2:8: batch = '3'. Violated constraint: a mapping"},
      {"schema_version: 1\nbatch:\n  micro_batch: 2\nwindow_hours: -1\n", ":4:15: window_hours = -1. Violated constraint: > 0"},
  }));
  const auto problems = problems_of(c.yaml);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Contains(c.expected));
}

TEST_CASE("all problems are reported at once", "[validation]") {
  const auto problems = problems_of("schema_version: 0\nbatch:\n  micro_batch: 0\n  extra: 1\ntypo: 2\n");
  CHECK(problems.size() == 4);
}

TEST_CASE("malformed and empty YAML files are bad input with a position", "[validation]") {
  testing::TempFile empty("  \n", ".yaml");
  CHECK_THROWS_WITH(io::load_yaml_file(empty.path()), Contains(":1:1: the file is empty"));
  testing::TempFile broken("schema_version: 1\nbatch: [1, 2\n", ".yaml");
  CHECK_THROWS_WITH(io::load_yaml_file(broken.path()), Contains("malformed YAML"));
  CHECK_THROWS_AS(io::load_yaml_file("/nonexistent/stepcast.yaml"), InputError);
}
