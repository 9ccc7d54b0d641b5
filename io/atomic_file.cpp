#include "io/atomic_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "model/errors.hpp"

namespace stepcast::io {

void write_file_atomically(const std::string& path, const std::string& text, const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // A hidden name with our pid: two processes writing the same target never share a temporary.
  std::string temp_name = target.filename().string();
  temp_name.insert(0, 1, '.');  // insert/append, not "." + ...: GCC 12 warns falsely (-Wrestrict) on that
  temp_name.append(".tmp").append(std::to_string(::getpid()));
  const fs::path temp = dir / temp_name;
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write the " + what + " (is the folder there and writable?)");
    out << text;
    out.flush();
    if (!out) {
      fs::remove(temp);
      throw Error(path + ": writing the " + what + " failed");
    }
  }
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp);
    throw Error(path + ": cannot move the new " + what + " into place: " + ec.message());
  }
}

}  // namespace stepcast::io
