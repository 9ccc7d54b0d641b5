#pragma once
// `stepcast measure --nproc N`: the launcher (torchrun's part). It starts N copies of this very process with
// the same arguments plus `--rank R --rendezvous FILE`, waits for all of them and returns the worst exit code.
// Each copy joins the c10d group through the FileStore at FILE (harness/distributed.hpp).
#include <string>
#include <vector>

namespace stepcast::cli {

// This process's arguments (from /proc/self/cmdline), argv[0] included.
std::vector<std::string> own_arguments();

// Starts `nproc` ranks of /proc/self/exe with `arguments` (argv[0] first) + --rank R --rendezvous FILE; a
// fresh FILE in the temporary folder, removed afterwards. Returns 0 when every rank exits 0, else the first
// non-zero exit code (a rank killed by a signal counts as 1).
int launch_ranks(int nproc, const std::vector<std::string>& arguments);

}  // namespace stepcast::cli
