#pragma once
// The one way stepcast writes a file (coefficients, reports, corpora); docs/user-guide.md "Output files".
//   - check_output, before the command does its work: an existing target needs --force; a target that is
//     one of the command's inputs, a folder, a device or any other non-regular file is refused, --force or
//     not; a symbolic link is followed (the file it names is written, the link stays a link); a dangling
//     link is refused.
//   - write_file_atomically: the text goes to an exclusively created temporary file in the target's own
//     folder, which is fsynced, renamed over the target (atomic within a folder) and the folder fsynced, so
//     the file appears whole or not at all, also after a crash. SIGINT and SIGTERM during the write remove
//     the temporary file before the process ends.
#include <functional>
#include <string>
#include <vector>

namespace stepcast::io {

struct OutputPolicy {
  std::string flag = "output";        // names the target in messages: "--out", "--report"
  bool force = false;                 // an existing regular file may be replaced
  std::vector<std::string> inputs;    // files the command reads: never written over (empty entries ignored)
  bool append = false;                // records appended (measure --out): an existing file is the point
};

// The path write_file_atomically will replace (or, with `append`, the file records go to): `path` with a symbolic link resolved. Throws InputError
// (exit 2) naming the flag and the path for every refusal above.
std::string check_output(const std::string& path, const OutputPolicy& policy);

// Writes `text` to `path` atomically. `what` names the file in messages ("coefficients", "report").
// Refuses a non-regular or dangling-link target even when the caller skipped check_output. Throws
// InputError when the folder cannot be written, Error when the write, the fsync or the rename fails.
void write_file_atomically(const std::string& path, const std::string& text, const std::string& what);

// Tests only: called with the temporary file's path once its text is written and synced, before the rename
// (a test raises SIGTERM here to check the clean-up). Empty: nothing.
void set_before_rename_hook_for_tests(std::function<void(const std::string& temp)> hook);

}  // namespace stepcast::io
