// The DDPJob controller: observe (informer caches) -> plan::PlanReconcile -> apply. No policy
// lives here; every decision is the planner's. Apply order: one status write first, so the
// decision is durable before acting (on Conflict the job is re-read and re-planned, no pod having
// been touched); then deletes (one batch); then patches (the PodGroup); then creates (the
// PodGroup, the NetworkPolicy and the Service first, then the pods as one batch in flight together; AlreadyExists /
// NotFound are success; no pod is created when a patch or a first create failed); then the
// plan's events (one batch); then requeue_after as a delayed add.
#ifndef DDP_OPERATOR_CONTROLLER_CONTROLLER_H_
#define DDP_OPERATOR_CONTROLLER_CONTROLLER_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"
#include "operator/kube/cache.h"
#include "operator/kube/client.h"
#include "operator/kube/expectations.h"
#include "operator/kube/informer.h"
#include "operator/kube/operator_metrics.h"
#include "operator/kube/progress_scraper.h"
#include "operator/kube/workqueue.h"
#include "operator/plan/lost_nodes.h"
#include "operator/plan/plan.h"
#include "operator/plan/stragglers.h"

namespace ddp::controller {

struct ControllerOptions {
  std::string ns;  // "" = every namespace
  int workers = 4;
  std::chrono::milliseconds resync_period{std::chrono::minutes(10)};
  std::chrono::milliseconds expectations_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds informer_backoff_max{std::chrono::seconds(30)};
  std::string instance = "ddp-operator";  // reportingInstance of events (hostname)
  // Reading rank 0's /metrics for status.progress and hangs; nullopt: off.
  std::optional<ProgressScraperOptions> progress;
  // Stragglers, from rank 0's per-rank busy series on the progress reads (needs `progress`).
  plan::StragglerOptions stragglers;
  // The planner's settings: the lost-pod margins and gang scheduling (--gang-scheduler-name:
  // the PodGroup kind is watched, by an informer that tolerates the CRD being absent, and every
  // job gets a PodGroup).
  plan::PlanOptions plan;
  // How often a PodGroup kind the server does not serve is looked for again.
  std::chrono::milliseconds pod_group_absent_retry{std::chrono::seconds(30)};
};

// Thread-safe. Lifecycle: Start() once, Stop() once (the destructor stops too).
// REQUIRES: client and metrics outlive the controller.
class Controller {
 public:
  Controller(KubeClient* client, OperatorMetrics* metrics, ControllerOptions options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the informers, waits up to `sync_timeout` for their first list (DeadlineExceeded
  // otherwise: the caller decides; informers keep trying), then starts the workers. Returns
  // Unavailable early when *cancel becomes true (may be null).
  Status Start(std::chrono::milliseconds sync_timeout, const std::atomic<bool>* cancel = nullptr);
  // Workers finish their current pass and exit; then the informers stop. Idempotent.
  void Stop();
  // One pass for "namespace/name". OK when the job is gone or the pass must wait for the cache.
  Status Reconcile(const std::string& key);
  bool Synced() const;
  // Refreshes the gauges derived from state (queue depth, jobs by phase); call before Render.
  void UpdateGauges();

 private:
  struct JobEntry {
    std::shared_ptr<const nlohmann::json> raw;  // the object minus managedFields
    std::string phase;
  };
  void Worker();
  // Reconcile(key), with any exception it throws turned into that key's Internal error: counted
  // (reconcile_panics_total), logged once per key and message, never the process's end.
  Status ReconcileIsolated(const std::string& key);
  void OnPodChange(const std::string& job, const plan::ObservedPod* old,
                   const plan::ObservedPod* now);
  plan::Observed Observe(const std::string& key) const;
  // Applies `p` for `job` (its objects are moved into the requests). Returns Conflict when the
  // status write lost a race; then no other write of `p` was issued.
  Status Apply(const std::string& key, const api::DDPJob& job, const nlohmann::json& raw,
               plan::Plan p);
  Status ApplyCreates(const std::string& key, const api::DDPJob& job,
                      std::vector<nlohmann::json> creates);
  Status ApplyDeletes(const std::string& key, const api::DDPJob& job,
                      const std::vector<plan::Delete>& deletes);
  // A failed NetworkPolicy patch goes to *policy_error, not the result: the pods do not wait
  // for it (they keep the policy they have); the pass fails after the creates and is retried.
  Status ApplyPatches(const std::string& key, const api::DDPJob& job,
                      const std::vector<plan::Patch>& patches, Status* policy_error);
  void EmitEvents(const api::DDPJob& job, const std::vector<plan::Event>& events);
  void CountRestarts(const api::DDPJob& job, const api::DDPJobStatus& next);
  // ddp_job_incidents_total and ddp_job_recovery_seconds from a status just written
  // (controller_incidents.cc): incidents opened, and incidents closed, since `job`'s status.
  void CountIncidents(const api::DDPJob& job, const api::DDPJobStatus& next);
  // ddp_job_goodput_ratio of every cached job, and no series of a job no longer cached.
  void UpdateJobGauges();
  // Points the scraper at the job's rank 0 pod while the job runs (else stops reading it) and
  // puts the latest snapshot into `seen` (controller_progress.cc).
  void ObserveProgress(const api::DDPJob& job, plan::Observed* seen);
  // Feeds the scraper's busy reads of `job` to its straggler detector (reset on a new round or
  // rank 0 pod; ranks at or past the job's world size are ignored) and records one Event per
  // newly flagged rank; never a status write or restart.
  void ObserveStragglers(const api::DDPJob& job, const plan::ObservedPod& rank0);
  // Stops reading `key` and drops its straggler state.
  void ForgetProgress(const std::string& key);
  // Strict field validation, warned instead of refused (controller_unknown_fields.cc): a job
  // carrying fields the CRD compiled into this operator does not declare (a CRD newer than the
  // operator, or an object stored with validation off) gets one log line and one Warning Event
  // per generation, and runs with those fields ignored.
  void WarnUnknownFields(const api::DDPJob& job, const nlohmann::json& raw);
  // Nodes (controller_nodes.cc). A node that becomes lost or comes back, or is deleted,
  // re-queues the jobs with pods on it; one log line when it hosts any.
  void OnNodeChange(const std::string& node, const plan::NodeHealth* old,
                    const plan::NodeHealth* now);
  // Sets node_lost on `seen`'s pods: their node is lost or gone; and node_lost_since: when this
  // operator first saw the node lost (its own clock; a node gone is not timed). Leaves every pod
  // not lost until the node informer has listed once (no permission: never), so a pod is never
  // force-deleted on a guess.
  void ObserveNodes(plan::Observed* seen) const;
  // The health of the nodes in job.status.suspectNodes (plan/suspect_nodes.h), once synced.
  void ObserveSuspectNodes(const api::DDPJob& job, plan::Observed* seen) const;

  KubeClient* client_;
  OperatorMetrics* metrics_;
  const ControllerOptions options_;
  WorkQueue queue_;
  Expectations expectations_;
  IndexedCache<JobEntry> jobs_;
  IndexedCache<plan::ObservedPod> pods_;
  IndexedCache<std::string> services_;
  IndexedCache<plan::ObservedNetworkPolicy> network_policies_;  // by job
  IndexedCache<plan::NodeHealth> nodes_;  // by node name; optional (see ObserveNodes)
  // When each node now lost was first seen lost (ObserveNodes); dropped when it comes back.
  mutable std::mutex node_lost_mu_;
  mutable std::map<std::string, std::chrono::system_clock::time_point> node_lost_seen_;
  IndexedCache<plan::ObservedPodGroup> pod_groups_;
  // The gang scheduler's PodGroups; both null without one.
  const Resource* pod_group_resource_ = nullptr;
  std::unique_ptr<Informer> job_informer_, pod_informer_, service_informer_, node_informer_,
      pod_group_informer_, network_policy_informer_;
  std::vector<std::thread> workers_;
  std::unique_ptr<ProgressScraper> scraper_;  // null when options_.progress is unset
  // One job's detector: fed under its own lock, so a job whose page claims many ranks delays
  // only its own reconcile, never another job's.
  struct JobStragglers {
    std::mutex mu;  // guards the fields below but `flagged`
    int round = -1;
    std::string rank0_uid;
    plan::StragglerDetector detector;
    std::atomic<size_t> flagged{0};  // detector.flagged() as of the last read (UpdateGauges)
  };
  mutable std::mutex stragglers_mu_;  // guards the map stragglers_ only, held for a lookup
  std::map<std::string, std::shared_ptr<JobStragglers>> stragglers_;  // jobs with busy reads
  std::mutex unknown_mu_;  // guards unknown_warned_
  std::map<std::string, std::string> unknown_warned_;  // key -> "uid/generation" warned about
  std::mutex panics_mu_;                       // guards panicked_
  std::map<std::string, std::string> panicked_;  // key -> last exception logged for it
  std::atomic<bool> stopped_{false};
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_CONTROLLER_CONTROLLER_H_
