// Process plumbing for local mode: finding a command, starting it as its own process group with
// its output in a file, signalling the group, picking free ports. Thin adapters over POSIX.
// Thread-compatible; call from one thread (the executor's loop).
#ifndef DDP_OPERATOR_LOCAL_PROCESS_H_
#define DDP_OPERATOR_LOCAL_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ddp::controller::local {

// The directory of the running executable (/proc/self/exe), "" when unknown.
std::string SelfExeDir();

// Where a relative command (no '/') is looked for, in order: each of `dirs`, then $PATH.
// A command with a '/' is returned unchanged. NotFound names every place searched.
StatusOr<std::string> ResolveCommand(const std::string& command,
                                     const std::vector<std::string>& dirs);

// Directories local mode searches before PATH: the ddp-operator binary's own directory (an
// installed bin/), then its sibling ../worker (the build tree, where ddp-worker is built).
std::vector<std::string> DefaultCommandDirs();

struct SpawnRequest {
  std::string path;                // resolved executable
  std::vector<std::string> argv;   // argv[0] included
  // Added on top of this process's environment (a name here replaces the inherited one).
  std::vector<std::pair<std::string, std::string>> env;
  std::string log_path;            // stdout+stderr, appended; created if missing
};

// Forks and execs `req` as the leader of a new process group (pgid == pid), stdin /dev/null,
// signals unblocked and at their defaults. The child dies with the parent (PR_SET_PDEATHSIG) as a
// last resort should ddp-operator itself be killed. Returns the pid; an exec failure shows up as
// exit status 127 with the reason in the log.
StatusOr<pid_t> SpawnProcessGroup(const SpawnRequest& req);

// kill(-pgid, sig). ESRCH (already gone) is OK.
Status SignalGroup(pid_t pgid, int sig);
// True while any process of the group exists.
bool GroupExists(pid_t pgid);

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_PROCESS_H_
