// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: a candidate takes the
// lease when it is free or when its holder has not renewed it for leaseDuration (measured on the
// candidate's own clock, from when it last saw the record change, so clocks need not agree); the
// leader renews every retry period and gives up when a renewal has not succeeded for the renew
// deadline. LeaseDecider holds the decisions (pure, time injected); LeaderElector does the I/O.
#ifndef DDP_OPERATOR_KUBE_LEADER_ELECTION_H_
#define DDP_OPERATOR_KUBE_LEADER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/client.h"

namespace ddp::controller {

using LeaseClock = std::chrono::steady_clock;
using WallTime = std::chrono::system_clock::time_point;

// spec of a Lease. Times are wall-clock (they are written to the API for humans and other tools).
struct LeaseRecord {
  std::string holder;  // holderIdentity; "" = released
  int lease_duration_seconds = 0;
  std::optional<WallTime> acquire_time;
  std::optional<WallTime> renew_time;
  int transitions = 0;  // leaseTransitions
  bool operator==(const LeaseRecord& o) const;
};

// Lease spec <-> record. MicroTime format "2006-01-02T15:04:05.000000Z".
LeaseRecord ParseLeaseSpec(const nlohmann::json& spec);
nlohmann::json LeaseSpecToJson(const LeaseRecord& record);

struct LeaderConfig {
  std::string identity;  // unique per replica: hostname_pid
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// The election's decisions for one candidate. Not thread-safe.
class LeaseDecider {
 public:
  explicit LeaseDecider(LeaderConfig config) : config_(std::move(config)) {}
  // Records what the API server holds now. The expiry clock restarts only when the record changed.
  void Observe(const LeaseRecord& record, LeaseClock::time_point now);
  // May this candidate write itself as holder? (free, already ours, or expired)
  bool CanAcquire(LeaseClock::time_point now) const;
  // The record to write to take or keep the lease.
  LeaseRecord Claim(WallTime wall_now) const;
  // The record that hands the lease back (holder "" and a 1 s duration, as client-go writes).
  LeaseRecord Release(WallTime wall_now) const;
  // A leader whose last successful renewal is older than the renew deadline has lost.
  bool RenewExpired(LeaseClock::time_point last_renew, LeaseClock::time_point now) const {
    return now - last_renew >= config_.renew_deadline;
  }
  const LeaseRecord& observed() const { return observed_; }
  const LeaderConfig& config() const { return config_; }

 private:
  LeaderConfig config_;
  LeaseRecord observed_;
  bool has_observed_ = false;
  LeaseClock::time_point observed_at_{};
};

// Runs the election against the API. Thread-safe: Stop() and Release() may be called from any
// thread (a signal-watching thread typically).
class LeaderElector {
 public:
  LeaderElector(KubeClient* client, std::string ns, std::string name, LeaderConfig config);

  // Blocks until this candidate holds the lease (returns OK) or Stop() (returns Unavailable).
  Status Acquire();
  // Renews every retry period until Stop() (returns OK) or until renewals fail for the renew
  // deadline (returns FailedPrecondition "lost the lease"). REQUIRES: Acquire() returned OK.
  Status KeepRenewing();
  // Ends Acquire/KeepRenewing promptly.
  void Stop();
  // Writes an empty holder if we still hold the lease, so a successor need not wait for expiry.
  Status Release();
  bool IsLeader() const { return leader_.load(); }

 private:
  // One get-or-create-then-update attempt. OK when we hold the lease afterwards.
  Status TryAcquireOrRenew();
  // Sleeps up to `d`; returns false when stopped.
  bool SleepFor(std::chrono::milliseconds d);

  KubeClient* client_;
  const std::string ns_, name_;
  std::mutex mu_;  // guards decider_, stopped_; serializes TryAcquireOrRenew against Release
  std::condition_variable cv_;
  LeaseDecider decider_;
  nlohmann::json last_lease_;  // the object as last read or written (for Update)
  bool stopped_ = false;
  std::atomic<bool> leader_{false};
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_LEADER_ELECTION_H_
