// The local executor: applies a planner's Plan to one machine, where every pod is a process group
// and the Service is a record. It is the kubelet and the API server of local mode, nothing more:
// it decides nothing (the planner does) and reports what happened as a kubelet would.
// Thread-compatible: one thread (the run loop) calls every method.
#ifndef DDP_OPERATOR_LOCAL_EXECUTOR_H_
#define DDP_OPERATOR_LOCAL_EXECUTOR_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/local/exit_status.h"
#include "operator/plan/plan.h"

namespace ddp::controller::local {

struct ExecutorOptions {
  // Each pod's output: <pod>.round<r>.log; a pod replaced alone in the same round (recovery
  // InPlace) writes <pod>.round<r>.<k>.log, k = 1, 2, ..., so no log is overwritten.
  std::string log_dir;
  std::vector<std::string> command_dirs;   // searched before $PATH (see ResolveCommand)
  std::optional<int> grace_seconds;        // overrides every pod's terminationGracePeriodSeconds
  // A cluster's pod start latency (scheduling, image pull, container start): a created pod's
  // process starts this long after the create, the pod Pending meanwhile. 0: at once.
  std::chrono::milliseconds pod_start_delay{0};
};

// One local pod. Lives from its create until it is deleted AND its process is reaped, so a name
// is never reused while its old process runs (the planner's rule: rounds never overlap).
struct LocalPod {
  nlohmann::json object;   // as the planner built it
  std::string name;
  std::string uid;
  std::string role = "worker";  // ddp.dev/role (recovery InPlace), else a worker
  int index = -1;
  int round = -1;
  pid_t pid = -1;          // also the process group id; -1 when it never started
  bool alive = false;      // not yet reaped
  bool deleting = false;   // a delete was applied
  bool signalled = false;  // we sent it a signal (so its death is not a disruption)
  std::chrono::steady_clock::time_point kill_at{};  // SIGKILL after this, when deleting
  // Set while the pod waits for ExecutorOptions::pod_start_delay: its process starts then.
  std::optional<std::chrono::steady_clock::time_point> start_at;
  int grace_seconds = 30;
  plan::TimePoint created{};
  std::optional<PodExit> exit;
  std::optional<plan::TimePoint> finished_at;  // when the exit was reaped (container finishedAt)
  int metrics_port = 0;
  std::string log_path;
  // Where its supervisor writes why it ended (DDP_TERMINATION_LOG), read back into the exit's
  // message as a kubelet reads terminationMessagePath.
  std::string termination_log;
  // Elastic in place, the rendezvous pod: the file its ddp.dev/group-size annotation is
  // projected into (the kubelet's downwardAPI volume); "" for other pods.
  std::string group_size_file;
};

class LocalExecutor {
 public:
  explicit LocalExecutor(ExecutorOptions options) : options_(std::move(options)) {}
  ~LocalExecutor();  // StopAll()
  LocalExecutor(const LocalExecutor&) = delete;
  LocalExecutor& operator=(const LocalExecutor&) = delete;

  // Creates first, then deletes, as the controller does. A create of an existing name and a
  // delete of a missing one are no-ops (idempotent apply). A delete with grace 0 (a force delete:
  // the planner's lost pods) SIGKILLs the pod's process group at once, also a stopped one. A pod
  // whose command cannot start becomes a Failed pod (exit 127, reason StartError), as a kubelet
  // would report it.
  // Returns one message per problem worth showing the user (start errors, env warnings).
  std::vector<std::string> Apply(const plan::Plan& plan, plan::TimePoint now);

  // Reaps every exited process without blocking; returns the names of pods that changed.
  std::vector<std::string> Reap();
  // SIGKILLs deleting pods whose grace period is over.
  void EnforceGracePeriods(std::chrono::steady_clock::time_point now);
  // The earliest pending SIGKILL or delayed start, for the run loop's timed wait.
  std::optional<std::chrono::steady_clock::time_point> NextKillDeadline() const;
  // Starts the pods whose start delay is over. Returns one message per problem (as Apply).
  std::vector<std::string> StartDue(std::chrono::steady_clock::time_point now);

  // What the planner sees: every pod record and whether the Service record exists.
  plan::Observed Observe() const;
  const std::map<std::string, LocalPod>& pods() const { return pods_; }
  // Worker pods of `round` whose process is alive (not spares, not the rendezvous pod).
  int AliveCount(int round) const;
  // Rank 0 of `round` while it is alive, else nullptr.
  const LocalPod* AliveRank0(int round) const;
  // The rendezvous pod of `round` (recovery InPlace) while it is alive, else nullptr.
  const LocalPod* AliveRendezvous(int round) const;
  // The rendezvous port given to `round` (0 when none yet).
  int MasterPort(int round) const;

  // Stops every live process group: SIGTERM, then SIGKILL after `grace`, and reaps them.
  // Blocks at most `grace` plus a moment. Afterwards no process this executor started runs.
  void StopAll(std::chrono::milliseconds grace);

 private:
  // Writes `pod`'s ddp.dev/group-size annotation to its group_size_file (when it has one).
  static void WriteGroupSize(const LocalPod& pod);

  Status Start(LocalPod* pod, std::vector<std::string>* messages);
  // SIGTERM now and SIGKILL after the grace (`grace_seconds`, else the pod's own); a grace of 0
  // is a force delete: SIGKILL now. On a pod already deleting it can only shorten the grace.
  void StartDelete(LocalPod* pod, std::chrono::steady_clock::time_point now,
                   std::optional<int64_t> grace_seconds);
  StatusOr<int> FreshPort();

  ExecutorOptions options_;
  std::map<std::string, LocalPod> pods_;
  bool service_exists_ = false;
  bool network_policy_exists_ = false;  // planned only when a job asks; enforced by nothing
  std::map<int, int> master_ports_;  // round -> rendezvous port
  std::map<std::string, int> starts_;  // "<pod>.round<r>" -> pods created under that name
  std::set<int> used_ports_;
  uint64_t next_uid_ = 1;
};

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_EXECUTOR_H_
