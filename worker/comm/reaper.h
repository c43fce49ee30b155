// Destroys objects whose destructor may block, on background threads, so that the thread that
// lets them go never waits. Made for aborted c10d groups: ProcessGroupGloo's destructor joins
// Gloo worker threads, one of which may sit in a send until Gloo's own timeout.
#ifndef DDP_WORKER_COMM_REAPER_H_
#define DDP_WORKER_COMM_REAPER_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

namespace ddp::worker {

// Thread-safe. Each adopted destruction runs on a thread of its own (a slow one never delays the
// others), at most `max_pending` at a time.
class Reaper {
 public:
  explicit Reaper(size_t max_pending) : max_pending_(max_pending) {}
  // Waits for the destructions under way. (The process-wide one below is never destroyed: a
  // process exits with _exit, without waiting for them.)
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Runs `destroy` (a closure owning the object, which destroys it) on a new thread and returns
  // true. false, without running `destroy`, when `max_pending` destructions are already under
  // way: the caller decides what to do with the object (and says so in the log).
  bool Adopt(std::function<void()> destroy);

  // Destructions under way.
  size_t pending() const;

 private:
  const size_t max_pending_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  size_t pending_ = 0;  // guarded by mu_
};

// The process-wide reaper of aborted communicators' groups (gloo_communicator.cc).
inline constexpr size_t kMaxGroupsBeingDestroyed = 16;
Reaper& GroupReaper();

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_REAPER_H_
