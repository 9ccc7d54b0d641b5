#pragma once
// Runs the real stepcast executable (as a user would) and captures exit code, stdout and stderr.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stepcast::testing {

struct CliResult {
  int exit_code = -1;     // -1: killed by a signal (a crash is always a test failure)
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` is appended to the executable's path and run through /bin/sh.
inline CliResult run_cli(const std::string& args) {
  const auto err_file = std::filesystem::temp_directory_path() /
                        ("stepcast_cli_err_" + std::to_string(::getpid()) + ".txt");
  const std::string command = std::string(STEPCAST_EXE) + " " + args + " 2>" + err_file.string();
  CliResult r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err_file);
  std::filesystem::remove(err_file);
  return r;
}

}  // namespace stepcast::testing
