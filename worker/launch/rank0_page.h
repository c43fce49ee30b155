// Rank 0's /metrics page as the rendezvous pod serves it after the group's series: fetched on a
// thread of its own every second, served from the last copy. So the rendezvous pod's page never
// waits on rank 0: a frozen rank-0 pod (its node lost) makes its part of the page go stale and
// then empty, and never makes the healthy rendezvous pod itself look slow or silent to the
// operator (which replaces a silent rendezvous pod).
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
class Rank0PageCache {
 public:
  // "host:port" of rank 0's pod now ("" when no pod holds node rank 0), asked before each fetch.
  using Where = std::function<std::string()>;

  // A copy older than `fresh_for` is not served (rank 0 stopped answering: no page is better
  // than an old one taken for a live one). Fetches time out after `timeout`.
  explicit Rank0PageCache(Where where,
                          std::chrono::milliseconds every = std::chrono::milliseconds(1000),
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(1000),
                          std::chrono::milliseconds fresh_for = std::chrono::milliseconds(5000));
  ~Rank0PageCache();
  Rank0PageCache(const Rank0PageCache&) = delete;
  Rank0PageCache& operator=(const Rank0PageCache&) = delete;

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
