// The open-file limit (RLIMIT_NOFILE) at a process's start: every process the images start
// raises its soft limit to the hard limit, since container runtimes from containerd 2.0 on
// leave the soft limit at the systemd default of 1024 (a rendezvous pod holds 3 sockets a pod
// and 2 a trainer: 19 a pod of 8 GPUs; docs/in-place-recovery.md "Descriptors and
// connections"). Only main() calls it, never library code. The project's binaries wait with
// poll and epoll, never select(), so descriptors past 1024 are safe for them.
#ifndef DDP_COMMON_FD_LIMIT_H_
#define DDP_COMMON_FD_LIMIT_H_

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp {

// RLIM_INFINITY reads as kNoFileLimit.
inline constexpr uint64_t kNoFileLimit = UINT64_MAX;

struct FileLimit {
  uint64_t before = 0;  // the soft limit found
  uint64_t soft = 0;    // the soft limit now
  uint64_t hard = 0;    // the hard limit (kNoFileLimit: unlimited)
};

// Pure: the soft limit to ask for: the hard one; an unlimited hard limit is capped at the
// kernel's ceiling `nr_open` (/proc/sys/fs/nr_open: setrlimit refuses more). Never below `soft`.
uint64_t SoftFileLimitToAsk(uint64_t soft, uint64_t hard, uint64_t nr_open);

// Raises this process's soft RLIMIT_NOFILE as SoftFileLimitToAsk says (children inherit it).
// Returns the limits before and after; Internal naming errno when getrlimit or setrlimit
// fails (the limit is then unchanged). Thread-safe as setrlimit is; call it once, in main().
StatusOr<FileLimit> RaiseFileLimit();

// The log line: "open files: soft limit 1024 -> 524288 (the hard limit)", or "open files:
// soft limit 524288 (the hard limit)" when it was already there.
std::string DescribeFileLimit(const FileLimit& l);

// RaiseFileLimit, then one log line naming `who`: the description at INFO, or the error at
// WARNING (the process goes on with the limit it has).
void RaiseFileLimitAndLog(const std::string& who);

}  // namespace ddp

#endif  // DDP_COMMON_FD_LIMIT_H_
