// Raising the soft open-file limit at start (fd_limit.h).
#include "common/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/logging.h"

namespace ddp {
namespace {

uint64_t FromRlim(rlim_t v) { return v == RLIM_INFINITY ? kNoFileLimit : static_cast<uint64_t>(v); }

// The kernel's ceiling on a process's descriptors; 1,048,576 (the kernel's default) when
// /proc does not say.
uint64_t NrOpen() {
  std::ifstream in("/proc/sys/fs/nr_open");
  uint64_t v = 0;
  if (in >> v && v > 0) return v;
  return 1u << 20;
}

std::string Count(uint64_t v) { return v == kNoFileLimit ? "unlimited" : std::to_string(v); }

}  // namespace

uint64_t SoftFileLimitToAsk(uint64_t soft, uint64_t hard, uint64_t nr_open) {
  const uint64_t want = hard == kNoFileLimit ? nr_open : hard;
  return want > soft ? want : soft;
}

StatusOr<FileLimit> RaiseFileLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    return Status::Internal(std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  FileLimit l;
  l.before = FromRlim(lim.rlim_cur);
  l.hard = FromRlim(lim.rlim_max);
  l.soft = l.before;
  const uint64_t want = SoftFileLimitToAsk(l.before, l.hard, l.hard == kNoFileLimit ? NrOpen() : 0);
  if (want == l.before) return l;
  lim.rlim_cur = static_cast<rlim_t>(want);
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) {
    return Status::Internal("setrlimit(RLIMIT_NOFILE) from " + Count(l.before) + " to " +
                            Count(want) + ": " + std::strerror(errno));
  }
  l.soft = want;
  return l;
}

std::string DescribeFileLimit(const FileLimit& l) {
  std::string s = "open files: soft limit ";
  if (l.before != l.soft) s += Count(l.before) + " -> ";
  s += Count(l.soft);
  s += l.soft == l.hard ? " (the hard limit)" : " (hard limit " + Count(l.hard) + ")";
  return s;
}

void RaiseFileLimitAndLog(const std::string& who) {
  const StatusOr<FileLimit> l = RaiseFileLimit();
  if (l.ok()) {
    DDP_LOG(INFO) << who << ": " << DescribeFileLimit(*l);
  } else {
    DDP_LOG(WARNING) << who << ": open files: " << l.status().ToString()
                     << "; going on with the limit as it is";
  }
}

}  // namespace ddp
