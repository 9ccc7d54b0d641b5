#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "model/errors.hpp"

namespace stepcast::io {
namespace fs = std::filesystem;

namespace {

std::function<void(const std::string&)>& before_rename_hook() {
  static std::function<void(const std::string&)> hook;
  return hook;
}

// --- The temporary file removed on SIGINT / SIGTERM ----------------------------------------------------
// One slot: writes are serialised by g_write_mutex. The handler only calls unlink, sigaction and raise
// (async-signal-safe, signal-safety(7)).
char g_temp_path[PATH_MAX];
volatile std::sig_atomic_t g_temp_live = 0;
struct sigaction g_previous_int, g_previous_term;
std::mutex g_write_mutex;

extern "C" void remove_temp_then_reraise(int sig) {
  if (g_temp_live) ::unlink(g_temp_path);
  g_temp_live = 0;
  // The previous disposition handles the signal as if we had not been there (default: the process ends
  // with that signal, so its exit status still says why).
  ::sigaction(sig, sig == SIGINT ? &g_previous_int : &g_previous_term, nullptr);
  ::raise(sig);
}

// Installs the handler for as long as a temporary file exists; a signal the process ignores stays ignored.
class TempFileGuard {
 public:
  explicit TempFileGuard(const std::string& temp) {
    std::memcpy(g_temp_path, temp.c_str(), temp.size() + 1);
    struct sigaction action {};
    action.sa_handler = remove_temp_then_reraise;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, nullptr, &g_previous_int);
    ::sigaction(SIGTERM, nullptr, &g_previous_term);
    g_temp_live = 1;
    if (g_previous_int.sa_handler != SIG_IGN) ::sigaction(SIGINT, &action, nullptr);
    if (g_previous_term.sa_handler != SIG_IGN) ::sigaction(SIGTERM, &action, nullptr);
  }
  ~TempFileGuard() {
    ::sigaction(SIGINT, &g_previous_int, nullptr);
    ::sigaction(SIGTERM, &g_previous_term, nullptr);
    if (g_temp_live) ::unlink(g_temp_path);  // no-op after a successful rename (ENOENT)
    g_temp_live = 0;
  }
  void renamed() { g_temp_live = 0; }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
};

// --- Target resolution --------------------------------------------------------------------------------

std::string errno_text(int e) { return std::strerror(e); }

fs::path folder_of(const fs::path& target) { return target.has_parent_path() ? target.parent_path() : fs::path("."); }

// `path` with a symbolic link (chain) followed to the file it names; refuses a dangling link and any
// existing target that is not a regular file.
fs::path resolve_target(const std::string& path, const std::string& flag) {
  const std::string who = flag + " " + path;
  if (path.empty()) throw InputError(flag + ": an empty path. Violated constraint: a file name");
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(path, ec);
  fs::path target = path;
  if (fs::is_symlink(link)) {
    target = fs::canonical(path, ec);
    if (ec)
      throw InputError(who + ": a symbolic link to a missing file (" + ec.message() +
                       "). Violated constraint: the link names an existing file, or write to a plain path");
  }
  const fs::file_status st = fs::status(target, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError(who + ": not a regular file (" + (fs::is_directory(st) ? "a folder" : "a device, pipe or socket") +
                     "). Violated constraint: stepcast writes regular files only, --force or not");
  return target;
}

bool same_file(const fs::path& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec) && !ec;
}

// --- The write ----------------------------------------------------------------------------------------

// An exclusively created (O_EXCL) hidden file beside the target: never an existing file, never another
// process's temporary. Returns its descriptor and sets `temp`.
int create_temp(const fs::path& target, const std::string& what, std::string& temp) {
  const fs::path dir = folder_of(target);
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = target.filename().string();
    name.insert(0, 1, '.');  // insert/append, not "." + ...: GCC 12 warns falsely (-Wrestrict) on that
    name.append(".tmp-").append(std::to_string(::getpid())).append("-").append(std::to_string(counter++));
    temp = (dir / name).string();
    if (temp.size() >= PATH_MAX)
      throw InputError(target.string() + ": the path is too long to write beside (" + std::to_string(temp.size()) +
                       " bytes). Violated constraint: < " + std::to_string(PATH_MAX));
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST)
      throw InputError(target.string() + ": cannot write the " + what + " in " + dir.string() + " (" +
                       errno_text(errno) + "; is the folder there and writable?)");
  }
  throw Error(target.string() + ": cannot create a temporary file beside it (100 names taken)");
}

void write_all(int fd, const std::string& text, const fs::path& target, const std::string& what) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(target.string() + ": writing the " + what + " failed: " + errno_text(errno));
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) throw Error(target.string() + ": fsync of the " + what + " failed: " + errno_text(errno));
}

// A replaced file keeps its permissions (a new one gets 0666 less the umask).
void keep_mode(int fd, const fs::path& target) {
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) ::fchmod(fd, st.st_mode & 07777);
}

// The rename is durable only once the folder's entry is on disk. Some file systems cannot fsync a folder
// (EINVAL): nothing more can be done there.
void sync_folder(const fs::path& target, const std::string& what) {
  const fs::path dir = folder_of(target);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0 && e != EINVAL && e != EROFS)
    throw Error(target.string() + ": the " + what + " is written but its folder could not be synced: " + errno_text(e));
}

}  // namespace

std::string check_output(const std::string& path, const OutputPolicy& policy) {
  const fs::path target = resolve_target(path, policy.flag);
  const std::string who = policy.flag + " " + path;
  for (const auto& input : policy.inputs)
    if (!input.empty() && same_file(target, input))
      throw InputError(who + ": this is also an input of the command (" + input +
                       "). Violated constraint: an output never replaces an input, --force or not");
  std::error_code ec;
  const fs::path dir = folder_of(target);
  if (!fs::is_directory(dir, ec))
    throw InputError(who + ": the folder " + dir.string() + " does not exist. Violated constraint: an existing folder");
  if (fs::exists(target, ec) && !policy.force && !policy.append)
    throw InputError(who + ": the file exists. Violated constraint: pass --force to overwrite it");
  return target.string();
}

void write_file_atomically(const std::string& path, const std::string& text, const std::string& what) {
  const fs::path target = resolve_target(path, what);
  std::lock_guard<std::mutex> lock(g_write_mutex);
  std::string temp;
  const int fd = create_temp(target, what, temp);
  TempFileGuard guard(temp);
  try {
    keep_mode(fd, target);
    write_all(fd, text, target, what);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw Error(target.string() + ": closing the " + what + " failed: " + errno_text(errno));
  if (before_rename_hook()) before_rename_hook()(temp);
  if (::rename(temp.c_str(), target.c_str()) != 0)
    throw Error(target.string() + ": cannot move the new " + what + " into place: " + errno_text(errno));
  guard.renamed();
  sync_folder(target, what);
}

void set_before_rename_hook_for_tests(std::function<void(const std::string& temp)> hook) {
  before_rename_hook() = std::move(hook);
}

}  // namespace stepcast::io
