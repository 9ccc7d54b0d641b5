#pragma once
// A file under the temp directory that removes itself; for table-driven bad-input cases.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace stepcast::testing {

class TempFile {
 public:
  TempFile(const std::string& text, const std::string& suffix) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("stepcast_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + suffix);
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace stepcast::testing
