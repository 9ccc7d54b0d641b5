#include "campaign/ready.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

extern char** environ;

namespace stepcast::campaign {
namespace fs = std::filesystem;

int run_git(const std::string& root, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"git", "-C", root};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "git", &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::vector<std::string> readiness_problems(const io::Campaign& c) {
  std::vector<std::string> problems;
  if (run_git(c.root, {"rev-parse", "--git-dir"}) != 0)
    return {c.root + " is not a git repository (or git is not installed): commit the campaign, its prediction and "
            "its plan in one before measuring"};
  for (const std::string& file : {c.file, c.prediction, c.plan_file()}) {
    std::error_code ec;
    const std::string why = !fs::is_regular_file(c.at_root(file), ec)
                                ? (file == c.file ? "missing" : "missing: stepcast campaign predict " + c.file)
                            : run_git(c.root, {"ls-files", "--error-unmatch", "--", file}) != 0
                                ? "not tracked by git"
                            : run_git(c.root, {"diff", "--quiet", "HEAD", "--", file}) != 0 ? "it differs from HEAD"
                                                                                             : "";
    if (!why.empty()) problems.push_back("commit " + file + " before measuring (" + why + ")");
  }
  return problems;
}

}  // namespace stepcast::campaign
