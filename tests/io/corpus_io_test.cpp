// Corpus files: lengths, CSV, JSON Lines, gzip and stdin, and every bad line reported by number with
// nothing dropped.
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fcntl.h>

#include "catch.hpp"
#include "io/corpus_io.hpp"
#include "model/errors.hpp"
#include "temp_file.hpp"

using stepcast::InputError;
using stepcast::io::parse_corpus;
using Catch::Matchers::Contains;

namespace {

std::string problems_of(const std::string& text, const stepcast::io::CorpusOptions& o = {}) {
  try {
    parse_corpus(text, "c.txt", o);
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
  CHECK_THAT(problems_of("length,kept,kept\n10,1,1\n"), Contains("c.txt:1:1: CSV header column 'kept' twice"));
  CHECK_THAT(problems_of("kept,root\n1,a\n"), Contains("c.txt:1:1: the CSV header has no length column (length, num_tokens)"));
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

TEST_CASE("the sample past the cap is refused at its line in every format", "[corpus_io][bounds]") {
  CHECK(stepcast::io::CorpusOptions{}.max_samples == stepcast::planner::kMaxSamples);
  stepcast::io::CorpusOptions three;
  three.max_samples = 3;
  CHECK(parse_corpus("5\n6\n7\n", "c.txt", three).size() == 3);
  const std::string lengths = problems_of("5\n6\n# a comment\n7\n8\n9\n", three);
  CHECK_THAT(lengths, Contains("c.txt:5:1: sample 4. Violated constraint: at most 3 samples"));
  CHECK_THAT(problems_of("length\n5\n6\n7\n8\n", three), Contains("c.txt:5:1: sample 4."));
  CHECK_THAT(problems_of("{\"length\": 5}\n{\"length\": 6}\n{\"length\": 7}\n{\"length\": 8}\n", three),
             Contains("c.txt:4:1: sample 4."));
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

// ---- CSV by header name ------------------------------------------------------------------------------

TEST_CASE("a CSV with extra columns and quoted fields is read by header name", "[corpus_io][csv]") {
  const auto c = parse_corpus(
      "id,text,num_tokens,root,kept\n"
      "1,\"hello, world\",12,\"doc \"\"A\"\"\",5\n"
      "2,\"two\nlines\",7,docB,7\n"
      "3,plain,30,\"doc \"\"A\"\"\",0\n",
      "c.csv");
  CHECK(c.lengths == std::vector<int32_t>{12, 7, 30});
  CHECK(c.kept == std::vector<int32_t>{5, 7, 0});
  CHECK(c.roots == std::vector<int32_t>{0, 1, 0});
}

TEST_CASE("a record spanning lines keeps later line numbers right", "[corpus_io][csv]") {
  // Record 2 starts on line 2 and ends on line 3, so the bad length is on line 4.
  const std::string p = problems_of("length,note\n5,\"a\nb\"\nx,c\n");
  CHECK_THAT(p, Contains("c.txt:4:1: length = 'x'"));
  CHECK_THAT(p, !Contains("c.txt:2:") && !Contains("c.txt:3:"));
}

TEST_CASE("the length field picks the CSV column, and length wins over num_tokens by default", "[corpus_io][csv]") {
  stepcast::io::CorpusOptions o;
  o.length_field = "tokens";
  CHECK(parse_corpus("text,tokens\na,9\nb,4\n", "c.csv", o).lengths == std::vector<int32_t>{9, 4});
  CHECK(parse_corpus("num_tokens,length\n1,2\n", "c.csv").lengths == std::vector<int32_t>{2});
  CHECK_THAT(problems_of("text,n\na,9\n", o), Contains("no length column (tokens)"));
}

TEST_CASE("malformed CSV quoting is reported by line", "[corpus_io][csv]") {
  CHECK_THAT(problems_of("length,note\n5,\"a\"b\n6,c\n"), Contains("c.txt:2:1:") && Contains("RFC 4180"));
  CHECK_THAT(problems_of("length,note\n5,\"open\n6,c\n"), Contains("unterminated quoted field"));
}

TEST_CASE("a comment line between CSV records is skipped, a blank line is an error", "[corpus_io][csv]") {
  CHECK(parse_corpus("length\n# note\n5\n6\n", "c.csv").lengths == std::vector<int32_t>{5, 6});
  CHECK_THAT(problems_of("length\n5\n\n6\n"), Contains("c.txt:3:1: empty line"));
}

// ---- JSON Lines ------------------------------------------------------------------------------------

TEST_CASE("JSON Lines: length, num_tokens or the length of input_ids, in that order", "[corpus_io][jsonl]") {
  const auto c = parse_corpus(
      "{\"length\": 12, \"text\": \"hi\"}\n"
      "{\"num_tokens\": 7, \"meta\": {\"length\": 99}}\n"
      "{\"input_ids\": [1, 2, 3, [4, 5]], \"length\": 4}\n"
      "{\"input_ids\": [[1], [2], 3]}\n",
      "c.jsonl");
  CHECK(c.lengths == std::vector<int32_t>{12, 7, 4, 3});
  CHECK_FALSE(c.has_kept());
  CHECK_FALSE(c.has_roots());
}

TEST_CASE("JSON Lines: kept from kept or from labels that are not -100, root a string or an integer",
          "[corpus_io][jsonl]") {
  const auto c = parse_corpus(
      "{\"input_ids\": [1, 2, 3, 4], \"labels\": [-100, -100, 3, 4], \"root\": \"a\"}\n"
      "{\"length\": 10, \"kept\": 6, \"root\": 17}\n"
      "{\"length\": 3, \"kept\": 0, \"root\": \"a\"}\n",
      "c.jsonl");
  CHECK(c.lengths == std::vector<int32_t>{4, 10, 3});
  CHECK(c.kept == std::vector<int32_t>{2, 6, 0});
  CHECK(c.roots == std::vector<int32_t>{0, 1, 0});
  CHECK(c.num_roots == 2);
}

TEST_CASE("JSON Lines: --length-field names an integer or an array", "[corpus_io][jsonl]") {
  stepcast::io::CorpusOptions o;
  o.length_field = "n_tok";
  CHECK(parse_corpus("{\"n_tok\": 5, \"length\": 1}\n{\"n_tok\": [0, 0]}\n", "c.jsonl", o).lengths ==
        std::vector<int32_t>{5, 2});
  CHECK_THAT(problems_of("{\"length\": 5}\n", o), Contains("c.txt:1:1: no length field (keys: length)") &&
                                                        Contains("one of n_tok") && !Contains("--length-field names"));
}

TEST_CASE("JSON Lines: every bad line is reported with its line and column", "[corpus_io][jsonl]") {
  const std::string p = problems_of(
      "{\"length\": 5}\n"
      "{\"length\": 5,}\n"
      "[1, 2]\n"
      "{\"text\": \"no length\"}\n"
      "{\"length\": 0}\n"
      "{\"length\": \"12\"}\n"
      "{\"length\": 4, \"root\": [1]}\n"
      "\n"
      "{\"length\": 3}\n");
  CHECK_THAT(p, Contains("c.txt:2:14: invalid JSON near '5,}'"));  // column 14: the '}' where a key belongs
  CHECK_THAT(p, Contains("c.txt:3:1: not a JSON object"));
  CHECK_THAT(p, Contains("c.txt:4:1: no length field (keys: text). Violated constraint: one of length, num_tokens, input_ids"));
  CHECK_THAT(p, Contains("c.txt:5:1: length = 0"));
  CHECK_THAT(p, Contains("c.txt:6:1: 'length' has the wrong type"));
  CHECK_THAT(p, Contains("c.txt:7:1: 'root' has the wrong type. Violated constraint: a string or an integer"));
  CHECK_THAT(p, Contains("c.txt:8:1: empty line"));
  CHECK_THAT(p, !Contains("c.txt:1:") && !Contains("c.txt:9:"));
}

TEST_CASE("JSON Lines: kept or root on some samples only is a hole, not a default", "[corpus_io][jsonl]") {
  CHECK_THAT(problems_of("{\"length\": 4, \"kept\": 9}\n"), Contains("c.txt:1:1: kept = 9. Violated constraint: an integer in [0, length]"));
  CHECK_THAT(problems_of("{\"length\": 5, \"kept\": 2}\n{\"length\": 5}\n"), Contains("c.txt:2:1: no kept"));
  CHECK_THAT(problems_of("{\"length\": 5}\n{\"length\": 5, \"root\": \"a\"}\n"), Contains("c.txt:1:1: no root"));
}

TEST_CASE("a length field named for a file of bare lengths is an error, not ignored", "[corpus_io]") {
  stepcast::io::CorpusOptions o;
  o.length_field = "tokens";
  CHECK_THAT(problems_of("5\n6\n", o), Contains("c.txt:1:1: a length field 'tokens' was named"));
}

// ---- gzip, binary, stdin ---------------------------------------------------------------------------

namespace {

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  gzclose(f);
}

std::string load_problems(const std::string& path) {
  try {
    stepcast::io::load_corpus_file(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool printable(const std::string& s) {
  for (char ch : s)
    if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\n') || ch == 0x7f) return false;
  return true;
}

}  // namespace

TEST_CASE("a gzip corpus reads like its text, whatever its name", "[corpus_io][gzip]") {
  const std::string text = "{\"length\": 5}\n{\"length\": 8}\n";
  for (const char* suffix : {".jsonl.gz", ".jsonl"}) {
    stepcast::testing::TempFile f("", suffix);
    write_gzip(f.path(), text);
    CHECK(stepcast::io::load_corpus_file(f.path()).lengths == std::vector<int32_t>{5, 8});
  }
}

TEST_CASE("a truncated gzip file or a binary file is refused in words, never echoed", "[corpus_io][gzip]") {
  stepcast::testing::TempFile whole("", ".csv.gz");
  std::string lengths = "length\n";
  for (int i = 0; i < 5000; ++i) lengths += std::to_string(1000 + i * 7919 % 5000) + "\n";
  write_gzip(whole.path(), lengths);
  std::string bytes;
  {
    std::FILE* f = std::fopen(whole.path().c_str(), "rb");
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
    std::fclose(f);
  }
  stepcast::testing::TempFile cut(bytes.substr(0, bytes.size() / 2), ".csv.gz");
  const std::string p = load_problems(cut.path());
  CHECK_THAT(p, Contains(cut.path() + ": cannot decompress the corpus"));
  CHECK(printable(p));

  // The first bytes of an ELF header, sized from the literal (a hand count of 16 read past its 15 bytes: ASan).
  constexpr char kElf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\x03\0>\0";
  stepcast::testing::TempFile binary(std::string(kElf, sizeof kElf - 1), ".bin");
  const std::string b = load_problems(binary.path());
  CHECK_THAT(b, Contains(binary.path() + ":1:8: binary data (a NUL byte at offset 7)"));
  CHECK(printable(b));
}

namespace {

// Loads "-" with standard input redirected from `text`; the message of an InputError in `problems`.
stepcast::planner::Corpus load_stdin(const std::string& text, std::string& problems) {
  stepcast::testing::TempFile in(text, ".txt");
  const int saved = dup(STDIN_FILENO);
  const int fd = open(in.path().c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  dup2(fd, STDIN_FILENO);
  close(fd);
  stepcast::planner::Corpus c;
  try {
    c = stepcast::io::load_corpus_file("-");
  } catch (const InputError& e) {
    problems = e.what();
  }
  dup2(saved, STDIN_FILENO);
  close(saved);
  return c;
}

}  // namespace

TEST_CASE("'-' reads the corpus from standard input, and messages call it <stdin>", "[corpus_io][stdin]") {
  std::string problems;
  const auto c = load_stdin("length,kept\n10,4\n20,20\n", problems);
  CHECK(problems.empty());
  CHECK(c.lengths == std::vector<int32_t>{10, 20});
  CHECK(c.kept == std::vector<int32_t>{4, 20});
  load_stdin("5\nseven\n", problems);
  CHECK_THAT(problems, Contains("<stdin>:2:1: length = 'seven'"));
}
