// Without libFuzzer (GCC, or a plain build) each fuzz target is a replay program: it runs its
// LLVMFuzzerTestOneInput once over every file named on the command line or found in a named folder,
// so the seed corpus and every crash ever found are re-checked by ctest (docs/reliability.md). Replays also
// run the whole stepcast commands on each input (fuzz/fuzz_support.hpp).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.hpp"

namespace {

void replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::printf("replay %s (%zu bytes)\n", file.c_str(), bytes.size());
  std::fflush(stdout);
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  stepcast::fuzz::set_whole_commands(true);
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (!arg.empty() && arg.string()[0] == '-') continue;  // libFuzzer flags (-runs=0) are ignored here
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) replay(f), ++count;
    } else {
      replay(arg);
      ++count;
    }
  }
  std::printf("%zu inputs replayed, every oracle held\n", count);
  return count > 0 ? 0 : 1;
}
