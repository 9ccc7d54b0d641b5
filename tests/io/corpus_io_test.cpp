// Corpus files: both formats, and every bad line reported by number with nothing dropped.
#include "catch.hpp"
#include "io/corpus_io.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"

using stepcast::InputError;
using stepcast::io::parse_corpus;
using Catch::Matchers::Contains;

namespace {

std::string problems_of(const std::string& text) {
  try {
    parse_corpus(text, "c.txt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a length-per-line file with comments and CRLF", "[planner][corpus_io]") {
  const auto c = parse_corpus("# lengths of the round-1 corpus\n12\r\n7\n# a comment\n40", "c.txt");
  CHECK(c.lengths == std::vector<int32_t>{12, 7, 40});
  CHECK_FALSE(c.has_kept());
  CHECK_FALSE(c.has_roots());
}

TEST_CASE("blank lines at the end and a byte order mark are not samples", "[planner][corpus_io]") {
  CHECK(parse_corpus("\xEF\xBB\xBF" "5\n6\n\n\n  \n", "c.txt").lengths == std::vector<int32_t>{5, 6});
  CHECK(parse_corpus("length\r\n5\r\n\r\n", "c.csv").lengths == std::vector<int32_t>{5});
}

TEST_CASE("a CSV with kept and root columns in any order", "[planner][corpus_io]") {
  const auto c = parse_corpus("root,length,kept\ndocA,100,60\ndocB,50,50\ndocA,30,0\n", "c.csv");
  CHECK(c.lengths == std::vector<int32_t>{100, 50, 30});
  CHECK(c.kept == std::vector<int32_t>{60, 50, 0});
  CHECK(c.roots == std::vector<int32_t>{0, 1, 0});
  CHECK(c.num_roots == 2);
}

TEST_CASE("every bad line is reported with its line number", "[planner][corpus_io]") {
  const std::string p = problems_of("12\nabc\n0\n\n5\n-3\n99999999999\n");
  CHECK_THAT(p, Contains("c.txt:2:1: length = 'abc'"));
  CHECK_THAT(p, Contains("c.txt:3:1: length = '0'"));
  CHECK_THAT(p, Contains("c.txt:4:1: empty line"));
  CHECK_THAT(p, Contains("c.txt:6:1: length = '-3'"));
  CHECK_THAT(p, Contains("c.txt:7:1: length = '99999999999'"));
  CHECK_THAT(p, !Contains("c.txt:1:") && !Contains("c.txt:5:"));
}

TEST_CASE("bad CSV rows and headers are reported", "[planner][corpus_io]") {
  CHECK_THAT(problems_of("length,kept\n10,4\n10\n10,11\n"),
             Contains("c.txt:3:1: a row of 1 fields") && Contains("c.txt:4:1: kept = '11'"));
  CHECK_THAT(problems_of("length,weight\n10,1\n"), Contains("c.txt:1:1: CSV header column 'weight'"));
  CHECK_THAT(problems_of("kept,root\n1,a\n"), Contains("no 'length' column"));
  CHECK_THAT(problems_of("length,root\n10,\n"), Contains("c.txt:2:1: root is empty"));
}

TEST_CASE("many bad lines: the first 20 spelled out, then a count", "[planner][corpus_io]") {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "1x\n";
  const std::string p = problems_of(text);
  CHECK_THAT(p, Contains("c.txt:20:1:") && !Contains("c.txt:21:1:"));
  CHECK_THAT(p, Contains("30 more bad lines not shown (50 in all)"));
}

TEST_CASE("an empty corpus and a missing file are input errors", "[planner][corpus_io]") {
  CHECK_THAT(problems_of(""), Contains("no samples"));
  CHECK_THAT(problems_of("# only a comment\n"), Contains("no samples"));
  CHECK_THROWS_AS(stepcast::io::load_corpus_file("/nonexistent/corpus.txt"), InputError);
}

TEST_CASE("a saved corpus reads back the same", "[planner][corpus_io]") {
  auto c = parse_corpus("length,kept,root\n100,60,a\n50,50,b\n", "c.csv");
  stepcast::testing::TempFile out("", ".csv");
  stepcast::io::save_corpus_csv(out.path(), c);
  const auto back = stepcast::io::load_corpus_file(out.path());
  CHECK(back.lengths == c.lengths);
  CHECK(back.kept == c.kept);
  CHECK(back.roots == c.roots);
}
