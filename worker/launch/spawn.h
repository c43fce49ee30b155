// Starting a trainer process from the supervisor: fork and execute the worker's own binary with
// extra environment. The one place in the worker that forks.
#ifndef DDP_WORKER_LAUNCH_SPAWN_H_
#define DDP_WORKER_LAUNCH_SPAWN_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace ddp::worker {

// Executes `self args...` with the caller's environment overridden by `env`. The child dies with
// the caller (PR_SET_PDEATHSIG: it must not hold a GPU or a port after the supervisor is gone),
// gets the default SIGTERM/SIGINT dispositions, shares stdout and stderr, and keeps `keep_fd`
// (when >= 0) open across exec; other descriptors follow their close-on-exec flags. Returns the
// pid, or -1 with errno set when fork fails; an exec failure is exit code 127.
pid_t SpawnProcess(const std::string& self, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env, int keep_fd = -1);

// A waitpid status as an exit code: the code, or 128 + signal when killed.
int ExitCodeOfStatus(int status);

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_SPAWN_H_
