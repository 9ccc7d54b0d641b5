// The output policy (io/atomic_file.hpp): refusals, symbolic links, devices, permissions, and the
// temporary file removed when SIGTERM or SIGINT arrives mid-write.
#include "io/atomic_file.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "model/errors.hpp"

namespace fs = std::filesystem;
using stepcast::InputError;
using stepcast::io::check_output;
using stepcast::io::OutputPolicy;
using stepcast::io::write_file_atomically;
using Catch::Matchers::Contains;

namespace {

// A fresh folder per test case, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() / ("stepcast_atomic_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path_), fs::directory_iterator())); }

 private:
  fs::path path_;
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_plain(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string refusal(const std::string& path, const OutputPolicy& policy) {
  try {
    check_output(path, policy);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Runs `write_file_atomically` in a child whose before-rename hook raises `sig`; returns the child's status.
int status_of_write_killed_by(int sig, const std::string& target) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGINT, SIG_DFL);  // as in the stepcast program; Catch's own handlers would report, not end
    ::signal(SIGTERM, SIG_DFL);
    stepcast::io::set_before_rename_hook_for_tests([sig](const std::string&) { ::raise(sig); });
    write_file_atomically(target, "never in place\n", "report");
    ::_exit(0);  // reached only if the signal did not end the process
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("a new file is written whole, with no temporary file left beside it", "[io][output]") {
  TempDir dir;
  const std::string out = dir.file("plan.html");
  CHECK(check_output(out, {"--report", false, {}}) == out);
  write_file_atomically(out, "<html></html>\n", "report");
  CHECK(read(out) == "<html></html>\n");
  CHECK(dir.entries() == 1);
}

TEST_CASE("an existing file needs --force, an input is refused even with --force", "[io][output]") {
  TempDir dir;
  const std::string out = dir.file("c.yaml"), input = dir.file("m.jsonl");
  write_plain(out, "old\n");
  write_plain(input, "{}\n");
  CHECK_THAT(refusal(out, {"--out", false, {}}), Contains("--out " + out + ": the file exists") && Contains("--force"));
  CHECK(refusal(out, {"--out", true, {}}).empty());
  CHECK_THAT(refusal(input, {"--out", true, {input}}), Contains("also an input") && Contains("--force or not"));
  // The same file by another spelling, and through a symbolic link.
  CHECK_THAT(refusal(dir.file("./m.jsonl"), {"--out", true, {input}}), Contains("also an input"));
  fs::create_symlink(input, dir.file("link.jsonl"));
  CHECK_THAT(refusal(dir.file("link.jsonl"), {"--out", true, {input}}), Contains("also an input"));
  // Two outputs of one command that name one new file: the second is refused before either is written.
  CHECK_THAT(refusal(dir.file("new.csv"), {"--report", false, {dir.file("new.csv")}}), Contains("also an input"));
  CHECK(read(input) == "{}\n");
}

TEST_CASE("folders, devices and dangling links are refused, --force or not", "[io][output]") {
  TempDir dir;
  CHECK_THAT(refusal(dir.file(""), {"--out", true, {}}), Contains("not a regular file (a folder)"));
  CHECK_THAT(refusal("/dev/null", {"--out", true, {}}), Contains("not a regular file (a device, pipe or socket)"));
  CHECK_THROWS_AS(write_file_atomically("/dev/null", "x", "coefficients"), InputError);
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));  // still the device node
  fs::create_symlink(dir.file("missing.yaml"), dir.file("dangling.yaml"));
  CHECK_THAT(refusal(dir.file("dangling.yaml"), {"--out", true, {}}), Contains("a symbolic link to a missing file"));
  CHECK_THROWS_AS(write_file_atomically(dir.file("dangling.yaml"), "x", "coefficients"), InputError);
  CHECK_THAT(refusal("", {"--out", true, {}}), Contains("--out: an empty path"));
  CHECK_THROWS_AS(write_file_atomically(dir.file("no-such-folder/c.yaml"), "x", "coefficients"), InputError);
  CHECK_THAT(refusal(dir.file("no-such-folder/c.yaml"), {"--out", false, {}}), Contains("no-such-folder does not exist"));
}

TEST_CASE("a symbolic link is followed: the file it names is replaced and the link stays a link", "[io][output]") {
  TempDir dir;
  const std::string real = dir.file("real.yaml"), link = dir.file("link.yaml");
  write_plain(real, "old\n");
  fs::create_symlink(real, link);
  CHECK(check_output(link, {"--out", true, {}}) == fs::canonical(real).string());
  write_file_atomically(link, "new\n", "coefficients");
  CHECK(fs::is_symlink(link));
  CHECK(read(real) == "new\n");
  CHECK(dir.entries() == 2);
}

TEST_CASE("a replaced file keeps its permissions", "[io][output]") {
  TempDir dir;
  const std::string out = dir.file("corpus.csv");
  write_plain(out, "length\n1\n");
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_file_atomically(out, "length\n2\n", "corpus");
  CHECK(read(out) == "length\n2\n");
  CHECK(fs::status(out).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
}

TEST_CASE("SIGTERM or SIGINT mid-write removes the temporary file and leaves the old file", "[io][output][signal]") {
  for (int sig : {SIGTERM, SIGINT}) {
    TempDir dir;
    const std::string out = dir.file("plan.html");
    write_plain(out, "old\n");
    const int status = status_of_write_killed_by(sig, out);
    REQUIRE(WIFSIGNALED(status));  // the process still ends by the signal, so its exit status says why
    CHECK(WTERMSIG(status) == sig);
    CHECK(read(out) == "old\n");
    CHECK(dir.entries() == 1);  // no .plan.html.tmp-* left
  }
}
