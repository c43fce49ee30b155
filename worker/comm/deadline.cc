// Polling with a deadline (see deadline.h).
#include "worker/comm/deadline.h"

#include <algorithm>
#include <thread>

namespace ddp::worker {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

PollOutcome PollUntil(Clock::time_point deadline, std::chrono::milliseconds interval,
                      const std::function<bool()>& done, const std::function<bool()>& abort) {
  while (true) {
    if (done()) return PollOutcome::kDone;
    if (abort && abort()) return PollOutcome::kAborted;
    const auto now = Clock::now();
    if (now >= deadline) return PollOutcome::kDeadline;
    std::this_thread::sleep_for(std::min<Clock::duration>(interval, deadline - now));
  }
}

}  // namespace ddp::worker
