#include "cli/measure_ranks.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "model/errors.hpp"

extern char** environ;

namespace stepcast::cli {

std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string current;
  for (char c : all) {
    if (c == '\0') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (args.empty()) throw Error("cannot read this process's arguments from /proc/self/cmdline");
  return args;
}

int launch_ranks(int nproc, const std::vector<std::string>& arguments) {
  const std::filesystem::path store = std::filesystem::temp_directory_path() /
                                      ("stepcast-rendezvous-" + std::to_string(::getpid()));
  std::filesystem::remove(store);
  std::vector<pid_t> ranks;
  for (int r = 0; r < nproc; ++r) {
    std::vector<std::string> args = arguments;
    for (const std::string& extra : {std::string("--rank"), std::to_string(r), std::string("--rendezvous"), store.string()})
      args.push_back(extra);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0)
      throw Error("cannot start rank " + std::to_string(r) + " of " + std::to_string(nproc));
    ranks.push_back(pid);
  }
  // A rank that fails leaves the others waiting in a collective: stop them (only the ranks started here).
  int worst = 0;
  std::set<pid_t> running(ranks.begin(), ranks.end());
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    if (running.erase(pid) == 0) continue;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0 && worst == 0) {
      worst = code;
      for (pid_t other : running) kill(other, SIGTERM);
    }
  }
  std::filesystem::remove(store);
  return worst;
}

}  // namespace stepcast::cli
