// Time, for the worker: seconds since a point, and the one loop that waits for a condition with a
// deadline by polling (rendezvous, membership). Waits that block in a backend call per slice
// (Gloo's work) or check a device between polls (NCCL) keep their own loops.
#ifndef DDP_WORKER_COMM_DEADLINE_H_
#define DDP_WORKER_COMM_DEADLINE_H_

#include <chrono>
#include <functional>

namespace ddp::worker {

// Seconds from `t0` to now, on the steady clock.
double Since(std::chrono::steady_clock::time_point t0);

enum class PollOutcome {
  kDone,      // `done` returned true
  kAborted,   // `abort` returned true before `done` did
  kDeadline,  // the deadline passed first
};

// Calls `done` until it returns true; between calls checks `abort` (when given), then the
// deadline, then sleeps `interval` (never past the deadline). `done` is called at least once,
// even with a deadline already past, and first in every round, so a condition met by the
// deadline counts. Exceptions thrown by `done` or `abort` propagate. Blocks the calling thread.
PollOutcome PollUntil(std::chrono::steady_clock::time_point deadline,
                      std::chrono::milliseconds interval, const std::function<bool()>& done,
                      const std::function<bool()>& abort = nullptr);

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_DEADLINE_H_
