// Waiting in tests: poll a condition until a deadline, never a fixed sleep. Header-only.
#ifndef DDP_TESTS_COMMON_POLL_H_
#define DDP_TESTS_COMMON_POLL_H_

#include <chrono>
#include <functional>
#include <thread>

namespace ddp::testing {

// Calls `cond` every `interval` until it returns true (-> true) or `timeout` has passed; then
// calls it one last time, so a condition that became true at the deadline still counts.
inline bool PollUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds interval = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(interval);  // poll interval, bounded by the deadline
  }
  return cond();
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_COMMON_POLL_H_
