// Test helpers: run ranks as forked child processes with a hard timeout, and pick free ports.
// Fork happens before the parent touches LibTorch threads (each TEST runs in its own process
// under ctest), so children start clean.
#ifndef DDP_TESTS_WORKER_COMM_MULTIPROCESS_H_
#define DDP_TESTS_WORKER_COMM_MULTIPROCESS_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tests/common/free_port.h"  // FreePort()

namespace ddp::testing {

struct RunOptions {
  std::chrono::seconds timeout{60};  // every child still running then is killed (exit code -9)
  bool stop_when_rank0_exits = false;  // kill the others once rank 0 is done (stuck-peer tests)
};

// Runs fn(rank) for rank 0..n-1, each in its own process; returns each child's exit code
// (fn's return value; 100 for an uncaught exception; -signal when killed).
std::vector<int> RunRanks(int n, const std::function<int(int rank)>& fn, RunOptions options = {});


// In rank 0's fn, within RunRanks: true once every other rank's process has exited, false if one
// is still running at the timeout. Rank 0 hosts the rendezvous store and must outlive its peers'
// last calls: a key a peer set is visible to the host's in-process store before the server's
// thread has sent that peer its reply, so a host that exits as soon as it reads the key can take
// the reply with it (the peer's set then fails with "the peer closed the connection").
bool OtherRanksExited(std::chrono::seconds timeout);

// Formats codes as "[0, 1, -9]" for failure messages.
std::string CodesToString(const std::vector<int>& codes);

}  // namespace ddp::testing

// Inside a child: print the failure and return 1 from fn.
#define CHILD_CHECK(cond)                                                              \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

#define CHILD_CHECK_OK(expr)                                                             \
  do {                                                                                   \
    auto child_status_ = (expr);                                                         \
    if (!child_status_.ok()) {                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,                 \
                   child_status_.ToString().c_str());                                    \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

#endif  // DDP_TESTS_WORKER_COMM_MULTIPROCESS_H_
