// stepcast measure → stepcast-measure. The harness links LibTorch (hundreds of MB of shared libraries);
// keeping it in its own executable keeps `stepcast plan` and friends starting in milliseconds.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli/measure_suggest.hpp"
#include "model/errors.hpp"

namespace stepcast::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMeasureExe = "stepcast-measure";

// $STEPCAST_MEASURE_EXE, else stepcast-measure in the folder of this executable.
fs::path measure_executable() {
  if (const char* env = std::getenv("STEPCAST_MEASURE_EXE")) return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(kMeasureExe) : self.parent_path() / kMeasureExe;
}

[[noreturn]] void exec_measure(const std::vector<std::string>& args) {
  const fs::path exe = measure_executable();
  if (!fs::exists(exe))
    throw InputError("measure: this build has no harness (" + exe.string() +
                     " does not exist). Violated constraint: LibTorch found at configure time "
                     "(cmake -DSTEPCAST_HARNESS=ON; see docs/harness.md)");
  std::vector<std::string> argv_strings{exe.string(), "measure"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(exe.c_str(), argv.data());
  throw Error("measure: cannot run " + exe.string() + ": " + std::strerror(errno));
}

}  // namespace

void add_measure_forwarder(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "measure", "Run probes on the real model on this machine's GPU and append measurement records "
                 "(runs stepcast-measure; `stepcast measure --help` for its options)");
  cmd->prefix_command();  // everything after `measure` goes to stepcast-measure untouched
  cmd->set_help_flag();   // so is --help
  cmd->callback([cmd]() {
    if (is_suggest(cmd->remaining())) return run_measure_suggest(cmd->remaining());  // no GPU: answered here
    exec_measure(cmd->remaining());
  });
}

}  // namespace stepcast::cli
