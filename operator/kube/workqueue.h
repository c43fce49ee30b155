// The controller's work queue: deduplicated keys ("namespace/name"), at most one worker per key,
// delayed adds (AddAfter) and per-key exponential backoff on errors. The decisions live in
// QueueCore (pure, time is an argument) so they are unit-tested without threads or sleeps;
// WorkQueue wraps it with a mutex, a condition variable and the steady clock.
#ifndef DDP_OPERATOR_KUBE_WORKQUEUE_H_
#define DDP_OPERATOR_KUBE_WORKQUEUE_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace ddp::controller {

using QueueClock = std::chrono::steady_clock;
using QueueTime = QueueClock::time_point;
using QueueDuration = QueueClock::duration;

// Per-key exponential backoff: base * 2^(failures-1), capped. Not thread-safe.
class KeyBackoff {
 public:
  KeyBackoff(QueueDuration base = std::chrono::milliseconds(5),
             QueueDuration cap = std::chrono::seconds(1000))
      : base_(base), cap_(cap) {}
  // Records one more failure of `key` and returns how long to wait before retrying it.
  QueueDuration NextDelay(const std::string& key);
  // Clears the failure count (call after a successful pass).
  void Forget(const std::string& key) { failures_.erase(key); }
  int Failures(const std::string& key) const;

 private:
  QueueDuration base_, cap_;
  std::unordered_map<std::string, int> failures_;
};

// The queue's state machine. Not thread-safe; WorkQueue serializes calls.
// Rules (as client-go's workqueue):
//  - a key is in the ready queue at most once (Add while queued is a no-op);
//  - a key being processed is not handed out again; an Add meanwhile marks it dirty and Done
//    puts it back;
//  - a delayed key becomes ready at the earliest time it was asked for.
class QueueCore {
 public:
  void Add(const std::string& key);
  void AddAt(const std::string& key, QueueTime when);
  // Moves delayed keys whose time has come into the ready queue.
  void Promote(QueueTime now);
  // Next ready key, now marked processing; nullopt when none is ready.
  std::optional<std::string> Pop();
  // REQUIRES: `key` came from Pop() and Done was not called for it since.
  void Done(const std::string& key);
  // Earliest pending delayed time, if any.
  std::optional<QueueTime> NextDelayed() const;
  size_t ReadyLen() const { return queue_.size(); }
  size_t DelayedLen() const { return waiting_by_key_.size(); }
  bool IsProcessing(const std::string& key) const { return processing_.count(key) > 0; }

 private:
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;       // needs a pass (queued or waiting on Done)
  std::unordered_set<std::string> processing_;  // handed out, Done not yet called
  std::unordered_map<std::string, QueueTime> waiting_by_key_;
  std::set<std::pair<QueueTime, std::string>> waiting_;
};

// Thread-safe work queue for N workers.
class WorkQueue {
 public:
  WorkQueue() = default;
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, QueueDuration delay);
  // Add after the key's next backoff delay (5 ms, 10 ms, ... 1000 s).
  void AddRateLimited(const std::string& key);
  // Resets the key's backoff.
  void Forget(const std::string& key);
  // Blocks until a key is ready (returns true) or the queue is shut down (returns false).
  bool Get(std::string* key);
  void Done(const std::string& key);
  // Wakes every Get; later Gets return false. Keys being processed may still call Done.
  void ShutDown();
  // Keys ready to be handed out (the queue-depth metric).
  size_t Len() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  QueueCore core_;
  KeyBackoff backoff_;
  bool shutting_down_ = false;
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_WORKQUEUE_H_
