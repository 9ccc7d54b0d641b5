#pragma once
// Golden JSON helpers of the kernels tests: committed expected output compared number by number.
// To regenerate after an intended change: STEPCAST_UPDATE_GOLDEN=1 ./kernels_test "[golden]", then
// review the diff of the *.expected.json files.
#include <zlib.h>

#include "catch.hpp"
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

namespace stepcast::testing::golden_json {

using nlohmann::json;

inline std::string read_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // plain files read through too
  std::string out;
  char buf[65536];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// Paths differ between checkouts; everything else must match.
inline void drop_sources(json& j) {
  if (!j.is_object()) return;
  // Paths differ between checkouts, and so do the JSON envelope's version and commit (tests/cli/output_cli_test.cpp
  // checks the envelope); everything else must match.
  for (const char* key : {"source", "schema_version", "stepcast_version", "commit", "command"}) j.erase(key);
  if (j.contains("vs")) drop_sources(j["vs"]);
}

// Numbers within 1e-9 relative (printing and parsing doubles may differ in the last bit); all else equal.
inline void expect_same(const json& got, const json& want, const std::string& where) {
  INFO(where);
  if (want.is_number() && got.is_number()) {
    const double g = got.get<double>(), w = want.get<double>();
    CHECK(std::fabs(g - w) <= 1e-9 * std::max(1.0, std::fabs(w)));
    return;
  }
  REQUIRE(got.type() == want.type());
  if (want.is_object()) {
    REQUIRE(got.size() == want.size());
    for (const auto& [k, v] : want.items()) {
      REQUIRE(got.contains(k));
      expect_same(got[k], v, where + "." + k);
    }
  } else if (want.is_array()) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) expect_same(got[i], want[i], where + "[" + std::to_string(i) + "]");
  } else {
    CHECK(got == want);
  }
}

// `stepcast ARGS --format json` against the committed file `path` (rewritten under STEPCAST_UPDATE_GOLDEN).
inline void golden(const std::string& args, const std::string& path) {
  const auto r = run_cli(args + " --format json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  json got = json::parse(r.out);
  drop_sources(got);
  if (std::getenv("STEPCAST_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << got.dump(1) << "\n";
    WARN("rewrote " << path);
  }
  std::ifstream in(path);
  REQUIRE(in.good());
  const json want = json::parse(in);
  expect_same(got, want, path);
}

}  // namespace stepcast::testing::golden_json
