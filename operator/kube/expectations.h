// Creations and deletions the controller has issued but its cache has not yet seen. A pass that
// ran before the cache caught up would create the same pod again, or count a pod it already
// deleted; while a job has outstanding expectations its pass waits (as ReplicaSet controllers do).
// Expectations expire so a lost watch event delays a job, never wedges it.
#ifndef DDP_OPERATOR_KUBE_EXPECTATIONS_H_
#define DDP_OPERATOR_KUBE_EXPECTATIONS_H_

#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

namespace ddp::controller {

// Thread-safe. Keys are job keys "namespace/name"; creations are pod names, deletions pod uids.
class Expectations {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Expectations(std::chrono::milliseconds timeout = std::chrono::minutes(5))
      : timeout_(timeout) {}

  // Before issuing the writes. `now` stamps the expectation for expiry.
  void ExpectCreate(const std::string& job, const std::string& pod_name, Clock::time_point now);
  void ExpectDelete(const std::string& job, const std::string& pod_uid, Clock::time_point now);
  // From the informer (a pod appeared), or after a create that failed (it will never appear).
  void CreationObserved(const std::string& job, const std::string& pod_name);
  // From the informer (deletionTimestamp set or the pod vanished), or after a failed delete.
  void DeletionObserved(const std::string& job, const std::string& pod_uid);
  // True when nothing is outstanding or the outstanding set is older than the timeout.
  // Sets *wait to how long until expiry when false (may be null).
  bool Satisfied(const std::string& job, Clock::time_point now,
                 Clock::duration* wait = nullptr) const;
  // The job is gone: forget everything about it.
  void Forget(const std::string& job);
  size_t PendingJobs() const;

 private:
  struct Pending {
    std::set<std::string> creates, deletes;
    Clock::time_point since{};  // last time something was added
  };
  void DropIfEmptyLocked(const std::string& job);

  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Pending> pending_;
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_EXPECTATIONS_H_
