// A member's /metrics page as the rendezvous pod serves it after the group's series (rank 0's
// whole page; node rank 1's stall records): fetched on a thread of its own every second, served
// from the last copy. So the rendezvous pod's page never waits on another pod: a frozen member
// (its node lost) makes its part of the page go stale and then empty, and never makes the
// healthy rendezvous pod itself look slow or silent to the operator (which replaces a silent
// rendezvous pod).
#ifndef DDP_WORKER_LAUNCH_RANK0_PAGE_H_
#define DDP_WORKER_LAUNCH_RANK0_PAGE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ddp::worker {

// Thread-safe: its own thread fetches; page() from any.
class MemberPageCache {
 public:
  // "host:port" of the member's pod now ("" when none), asked before each fetch.
  using Where = std::function<std::string()>;

  // A copy older than `fresh_for` is not served (rank 0 stopped answering: no page is better
  // than an old one taken for a live one). Fetches time out after `timeout`.
  explicit MemberPageCache(Where where,
                          std::chrono::milliseconds every = std::chrono::milliseconds(1000),
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(1000),
                          std::chrono::milliseconds fresh_for = std::chrono::milliseconds(5000));
  ~MemberPageCache();
  MemberPageCache(const MemberPageCache&) = delete;
  MemberPageCache& operator=(const MemberPageCache&) = delete;

  // The last page fetched, or "" when none is fresh. Never blocks on the network.
  std::string page() const;

 private:
  void Run();

  Where where_;
  std::chrono::milliseconds every_, timeout_, fresh_for_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::string page_;
  std::chrono::steady_clock::time_point fetched_{};
  std::thread thread_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_RANK0_PAGE_H_
