// PlanReconcile: DESIGN.md's lifecycle rules as named steps that return early. Each decision sets
// the status, records an Event and leaves the object writes to the shared steps in pass.cc.
// The order of the steps:
//   1. a job being deleted: nothing (owner references garbage-collect the pods and Service);
//   2. a finished job: cleanPodPolicy and the TTL only;
//   3. an invalid spec: Failed/InvalidSpec;
//   4. suspend: delete every pod; resume: a new round;
//   5. activeDeadlineSeconds: Failed/DeadlineExceeded, else a timer;
//   6. one decision for the current round: disruption, failure (restart or fail), success,
//      resize, or shrink on pending timeout; with recovery InPlace a failed or lost pod other
//      than pod 0 is replaced alone in the same round instead (replace.h);
//   7. always: delete pods of other rounds, create or patch the PodGroup (gang scheduling),
//      create or delete the NetworkPolicy (network_policy.h), replace a silent rendezvous pod
//      (silent_rendezvous.h), keep new pods off suspect nodes (suspect_nodes.h), create missing
//      names (after the restart backoff), force-delete pods lost with their node or fenced by
//      the group (lost_nodes.h), summarize the status.
// Before 5, the gang: a round waiting for admission or for its PodGroup is Pending with
// condition Queued, and the deadline and the pending timeout do not run (gang_pass.h).
#include "operator/plan/plan.h"

#include <algorithm>
#include <tuple>

#include "common/group_contract.h"
#include "operator/api/time_format.h"
#include "operator/api/validate.h"
#include "operator/plan/classify.h"
#include "operator/plan/inplace.h"
#include "operator/plan/conditions.h"
#include "operator/plan/lost_nodes.h"
#include "operator/plan/gang_pass.h"
#include "operator/plan/incidents.h"
#include "operator/plan/names.h"
#include "operator/plan/network_policy.h"
#include "operator/plan/pass.h"
#include "operator/plan/replace.h"
#include "operator/plan/resize.h"
#include "operator/plan/round.h"
#include "operator/plan/silent_rendezvous.h"
#include "operator/plan/suspect_nodes.h"
#include "operator/plan/progress.h"

namespace ddp::plan {
namespace {

using internal::EndJob;
using internal::Pass;
using internal::RecordFailure;
using internal::RestartSize;
using internal::StartNewRound;

// Whether the job's pods run ddp-worker, which says `ddp: Finished` whenever it exits 0 after
// the last step: always under InPlace (its supervisor); under Restart once its progress was read
// from ddp-worker's metrics or one of its pods wrote a ddp-worker termination message. A job of
// another image (torchrun) says nothing, and its exit 0 is taken at its word.
bool ExpectsFinishMessage(const api::DDPJob& job, const Observed& seen) {
  if (job.spec.failure_policy.recovery == api::Recovery::kInPlace) return true;
  if (job.status.progress && job.status.progress->total_steps) return true;
  for (const ObservedPod& pod : seen.pods) {
    if ((job.uid.empty() || pod.owner_uid == job.uid) && group::ParseEnd(pod.message)) return true;
  }
  return false;
}

bool IsFinished(const Pass& p) {
  return p.st.phase == api::kPhaseSucceeded || p.st.phase == api::kPhaseFailed;
}

// Step: a brand-new job (rule 1) gets round 0 at the requested size.
void StartJob(Pass* p) {
  p->size = internal::DesiredSize(p->job);
  p->st.phase = api::kPhasePending;
  p->st.start_time = p->now;
  const std::string msg = "round " + std::to_string(p->round) + " with " +
                          std::to_string(p->size) + " pods (world size " +
                          std::to_string(p->size * p->job.spec.nproc_per_node) + ")";
  SetCondition(&p->st, api::kCondCreated, "True", internal::kReasonJobCreated, msg, p->now,
               p->job.generation);
  internal::WarnGangIgnored(p);
  internal::AddEvent(p, "Normal", internal::kReasonJobCreated, msg);
}

// Step: spec.runPolicy.suspend deletes every pod; the round stays until resume.
Plan Suspend(Pass* p) {
  size_t n = 0;
  for (const auto& pod : p->seen->pods) {
    if (pod.deleting) continue;
    p->plan.deletes.push_back({"Pod", pod.name, pod.uid});
    ++n;
  }
  if (p->st.phase != api::kPhaseSuspended) {
    const std::string msg = "suspended in round " + std::to_string(p->round) + ": deleting " +
                            std::to_string(n) + " pods";
    p->st.phase = api::kPhaseSuspended;
    SetCondition(&p->st, api::kCondSuspended, "True", "Suspended", msg, p->now, p->job.generation);
    ClearCondition(&p->st, api::kCondRunning, "Suspended", msg, p->now, p->job.generation);
    ClearCondition(&p->st, api::kCondRestarting, "Suspended", msg, p->now, p->job.generation);
    ClearCondition(&p->st, api::kCondQueued, "Suspended", msg, p->now, p->job.generation);
    internal::AddEvent(p, "Normal", "Suspended", msg);
  }
  internal::DeletePodGroup(p);  // a suspended job holds no place in a queue
  p->st.ready_replicas = 0;
  return internal::FinishPass(p);
}

// Step: resume after suspend is a new round (workers resume from the checkpoint); like a Job,
// the active deadline counts from the resume.
void Resume(Pass* p) {
  if (!p->st.start_time) {  // created suspended: this is the first start
    StartJob(p);
  } else {
    const int size = RestartSize(*p);
    StartNewRound(p, size, api::kPhasePending, "Resumed", "resumed", false);
    p->st.start_time = p->now;
  }
  SetCondition(&p->st, api::kCondSuspended, "False", "Resumed", "spec.runPolicy.suspend is false",
               p->now, p->job.generation);
}

std::optional<TimePoint> Deadline(const Pass& p) {
  const auto& ads = p.job.spec.run_policy.active_deadline_seconds;
  if (!ads || !p.st.start_time) return std::nullopt;
  return *p.st.start_time + std::chrono::seconds(*ads);
}

// Rule 2, disruptions first: when a node dies its peers exit 75 too, and the root cause is the
// disruption, which does not count against maxRestarts.
// Pods already being replaced in place were counted when they failed: skip them.
const ObservedPod* FirstWith(const Pass& p, const std::vector<const ObservedPod*>& pods,
                             PodOutcome want) {
  for (const ObservedPod* pod : pods) {
    if (pod && ClassifyPod(*pod) == want && !internal::AlreadyReplacing(p, *pod)) return pod;
  }
  return nullptr;
}

// Rule 2's root cause among the round's failures: the first to terminate (container finishedAt;
// a failure without one counts as last), on a tie a non-retryable code (it decides the job's fate
// whatever the order), then the lowest rank. Peers of a crashed rank exit 75 a moment later;
// reporting the lowest rank would turn a permanent error into a restart.
// Pods already being replaced in place were counted when they failed: skipped.
const ObservedPod* RootFailure(const Pass& p, const std::vector<const ObservedPod*>& pods,
                               const api::FailurePolicy& policy) {
  const ObservedPod* best = nullptr;
  auto key = [&](const ObservedPod* pod) {
    return std::make_tuple(!pod->finished_at.has_value(), pod->finished_at.value_or(TimePoint{}),
                           IsRetryable(policy, pod->exit_code.value_or(1)), pod->index);
  };
  for (const ObservedPod* pod : pods) {
    if (!pod || ClassifyPod(*pod) != PodOutcome::kFailure) continue;
    if (internal::AlreadyReplacing(p, *pod)) continue;
    if (best == nullptr || key(pod) < key(best)) best = pod;
  }
  return best;
}

// A current-round pod that is being deleted was deleted by someone else: the planner never
// deletes current-round pods. Once every pod has run, a vanished one was taken away as well.
std::optional<ObservedPod> FindDisruption(const Pass& p) {
  for (const auto& pod : p.seen->pods) {
    if (pod.deleting && internal::IsMember(p, pod) && !internal::AlreadyReplacing(p, pod) &&
        !internal::ReplacedInThisPass(p, pod.name)) {
      return pod;
    }
  }
  if (const ObservedPod* d = FirstWith(p, internal::MemberPods(p), PodOutcome::kDisruption)) {
    return *d;
  }
  // The phase before this pass: a pod replaced alone earlier in it makes the phase Restarting.
  // A name no pod holds any more, whose pod held a rank (not one a spare took over).
  if (p.job.status.phase != api::kPhaseRunning) return std::nullopt;
  const auto& last = p.job.status.last_failure;
  for (int i = 0; i < p.size; ++i) {
    const std::string name = PodName(p.job, i);
    if (internal::PodNamed(p, name) != nullptr || internal::ReplacedInThisPass(p, name)) continue;
    // The pod replaced last, gone before its successor was created: counted when it failed. (A
    // spare holding its rank let the round run meanwhile, and a report from before the failure
    // still names it as a member.)
    if (internal::InPlace(p) && last && last->pod == name) continue;
    ObservedPod gone;
    gone.name = name;
    gone.index = i;
    gone.round = p.round;
    gone.deleting = true;
    gone.reason = "PodDeleted";
    if (internal::HeldARank(p, gone)) return gone;
  }
  return std::nullopt;
}

// Rule 6's backoff: after the k-th failure restart the new round's pods wait
// min(kBackoffBase * 2^(k-1), kBackoffCap), so a crash-looping job does not spin. Disruptions
// and resizes start at once: the program did nothing wrong.
constexpr std::chrono::seconds kBackoffBase{1};
constexpr std::chrono::seconds kBackoffCap{60};

std::optional<TimePoint> BackoffUntil(const Pass& p) {
  const api::Condition* c = p.st.FindCondition(api::kCondRestarting);
  if (p.st.phase != api::kPhaseRestarting || !c || c->status != "True" ||
      (c->reason != "PodFailed" && c->reason != internal::kReasonHung) || !p.st.last_failure || !p.st.last_failure->time ||
      p.st.restarts < 1) {
    return std::nullopt;
  }
  const int doublings = std::min(p.st.restarts - 1, 6);  // 2^6 s > kBackoffCap
  return *p.st.last_failure->time + std::min(kBackoffBase * (1 << doublings), kBackoffCap);
}

bool AllSucceeded(const Pass& p) {
  // InPlace: as many pods finished training as the round has ranks (`ddp: Finished`), spares
  // that took a rank among them; the pod created for such a rank may still be Pending, and is
  // not waited for (cleanPodPolicy removes it).
  if (internal::InPlace(p)) {
    std::vector<const ObservedPod*> pods = internal::CurrentPods(p);
    for (const ObservedPod* s : internal::CurrentSpares(p)) pods.push_back(s);
    int finished = 0, unfinished = 0;  // members that said Finished; members not (yet)
    for (const ObservedPod* pod : pods) {
      if (pod && pod->phase == "Succeeded" && group::ParseFinished(pod->message)) ++finished;
      // Only a pod that holds a rank is a member still finishing (its last checkpoint): a
      // replacement still starting, or a spare, holds none (the group's report says; without
      // one, every worker pod counts).
      if (pod && pod->phase == "Running" && internal::HeldARank(p, *pod)) ++unfinished;
      // A member that failed is decided as a failure (healed, or a new round), never a finish.
      if (pod && pod->phase == "Failed" && !pod->deleting && internal::HeldARank(p, *pod)) {
        ++unfinished;
      }
    }
    // Elastic in place: the group may have trained below the round's size (a pod unschedulable
    // all along, or the group shrank on a loss and finished before the replacement joined); a
    // finish is every rank's, so one finished member and no member still running is the end.
    if (internal::ResizesInPlace(p) && finished > 0 && unfinished == 0) return true;
    // Nothing else: a pod that exited 0 without finishing is a failure, one released from a
    // finished group (held no rank) finished nothing.
    return finished >= p.size;
  }
  for (const ObservedPod* pod : internal::CurrentPods(p)) {
    if (!pod || ClassifyPod(*pod) != PodOutcome::kSucceeded) return false;
  }
  return true;
}

Plan Succeed(Pass* p) {
  std::vector<const ObservedPod*> pods = internal::CurrentPods(*p);
  for (const ObservedPod* s : internal::CurrentSpares(*p)) pods.push_back(s);
  int finished = 0;
  for (const ObservedPod* pod : pods) {
    if (pod && pod->phase == "Succeeded") ++finished;
  }
  const std::string which = finished >= p->size || !internal::InPlace(*p)
                                ? "all " + std::to_string(p->size) + " pods exited 0"
                                : "the group finished training; " + std::to_string(finished) +
                                      " of " + std::to_string(p->size) +
                                      " pods exited 0, the others held no rank";
  return EndJob(p, true, "AllPodsSucceeded",
                "round " + std::to_string(p->round) + ": " + which + internal::FinishedSteps(*p));
}

// Rule 4: resize when the spec changed (a new generation) and asks for another size.
bool ResizeRequested(const Pass& p) {
  return p.job.generation != p.job.status.observed_generation &&
         internal::DesiredSize(p.job) != p.size;
}

// Rule 4, elastic: a pod unschedulable for pendingTimeoutSeconds shrinks the round to the pods
// that can run, never below minReplicas. Arms the timer for pods still inside their timeout.
std::optional<int> ShrinkTarget(Pass* p) {
  // A gang not placed yet is not a pod that cannot run: its pods wait for one another.
  if (!p->job.spec.elastic || p->gang_wait) return std::nullopt;
  const auto timeout = std::chrono::seconds(p->job.spec.elastic->pending_timeout_seconds);
  int can_run = 0;
  bool expired = false;
  for (const ObservedPod* pod : internal::CurrentPods(*p)) {
    if (!pod) continue;
    if (!pod->unschedulable_since || pod->phase != "Pending") {
      ++can_run;
    } else if (p->now >= *pod->unschedulable_since + timeout) {
      expired = true;
    } else {
      internal::Requeue(p, *pod->unschedulable_since + timeout);
    }
  }
  const int target = std::max(can_run, p->job.spec.elastic->min_replicas);
  if (!expired || target >= p->size) return std::nullopt;
  return target;
}

// Step 6: one decision for the current round. Returns the plan when the job ended. A pod replaced
// alone (recovery InPlace) is appended to p->replaced.
std::optional<Plan> DecideForRound(Pass* p) {
  const int round = p->round;
  // A group that finished at a size within its bounds has finished, whatever a pod that held no
  // rank did meanwhile (a replacement still starting found no store and ended GroupAbandoned):
  // decided before that pod's end could start a new round.
  if (internal::ResizesInPlace(*p) && AllSucceeded(*p)) return Succeed(p);
  if (std::optional<Plan> ended = internal::DecideGroup(p)) return ended;
  if (p->round != round) return std::nullopt;  // the group was abandoned: a new round
  const auto current = internal::MemberPods(*p);
  const auto& policy = p->job.spec.failure_policy;
  if (auto taken = internal::TakenWithoutSurvivor(*p); !taken.empty()) {
    // Every member pod taken at once, seen a pass apart: nobody can heal a replacement.
    for (const ObservedPod* d : taken) {
      RecordFailure(p, *d, PodOutcome::kDisruption, internal::GroupRank(*p, *d));
      p->st.disruptions += 1;
    }
    const ObservedPod& d = *taken.front();
    StartNewRound(p, RestartSize(*p), api::kPhaseRestarting, "PodDisrupted",
                  "rank " + std::to_string(internal::GroupRank(*p, d)) + " " +
                      DescribeOutcome(d, PodOutcome::kDisruption) +
                      "; no pod of the round is left to heal a replacement in place: the new "
                      "round resumes from the checkpoint",
                  true);
  } else if (auto d = FindDisruption(*p)) {
    const int rank = internal::GroupRank(*p, *d);
    RecordFailure(p, *d, PodOutcome::kDisruption, rank);
    p->st.disruptions += 1;
    const std::string what =
        "rank " + std::to_string(rank) + " " + DescribeOutcome(*d, PodOutcome::kDisruption);
    if (internal::CanReplaceAlone(*p, *d) && !internal::NoSurvivor(*p)) {
      // As in a new round, a disruption is not the program's fault: not limited by maxRestarts.
      internal::ReplacePod(p, *d, what,
                           "disruption " + std::to_string(p->st.disruptions) + ", not limited");
    } else {
      StartNewRound(p, RestartSize(*p), api::kPhaseRestarting, "PodDisrupted",
                    internal::CanReplaceAlone(*p, *d)
                        ? what + "; no pod of the round is left to heal a replacement in place: "
                                 "the new round resumes from the checkpoint"
                        : what,
                    true);
    }
  } else if (const ObservedPod* f = RootFailure(*p, current, policy)) {
    const int rank = internal::GroupRank(*p, *f);
    RecordFailure(p, *f, PodOutcome::kFailure, rank);
    const std::string what = "rank " + std::to_string(rank) + " " +
                             DescribeOutcome(*f, PodOutcome::kFailure);
    if (!IsRetryable(policy, f->exit_code.value_or(1))) {
      return EndJob(p, false, "PodFailed",
                    what + ": not retryable under restartPolicy " +
                        api::RestartPolicyName(policy.restart_policy));
    }
    // Restarts and in-place recoveries share one budget.
    if (p->st.restarts + p->st.recoveries >= policy.max_restarts) {
      const std::string recovered =
          p->st.recoveries > 0 ? " and " + std::to_string(p->st.recoveries) + " recoveries" : "";
      return EndJob(p, false, "MaxRestartsExceeded",
                    what + ": " + std::to_string(p->st.restarts) + " restarts" + recovered +
                        " reached spec.failurePolicy.maxRestarts (" +
                        std::to_string(policy.max_restarts) + ")");
    }
    const std::string of_max = " of " + std::to_string(policy.max_restarts);
    if (internal::CanReplaceAlone(*p, *f)) {
      p->st.recoveries += 1;
      const int used = p->st.restarts + p->st.recoveries;
      internal::ReplacePod(p, *f, what, "recovery " + std::to_string(used) + of_max);
    } else {
      p->st.restarts += 1;
      const int used = p->st.restarts + p->st.recoveries;
      StartNewRound(p, RestartSize(*p), api::kPhaseRestarting, "PodFailed",
                    what + "; restart " + std::to_string(used) + of_max, true);
    }
  } else if (auto hung = internal::HangMessage(p)) {
    // A hung step is the program's fault, like a failure: it counts against maxRestarts (with
    // in-place recoveries), and restartPolicy ExitCode restarts it as it would a worker the
    // operator killed. Only a new round can unstick it.
    api::LastFailure f;
    f.pod = PodName(p->job, 0);
    f.rank = 0;
    f.reason = internal::kReasonHung;
    f.message = *hung;
    f.time = p->now;
    p->st.last_failure = f;
    api::Incident hang;
    hang.kind = api::kIncidentHang;
    hang.pod = f.pod;
    hang.rank = 0;
    hang.message = *hung;
    internal::OpenIncident(p, hang);
    if (policy.restart_policy == api::RestartPolicy::kNever) {
      return EndJob(p, false, internal::kReasonHung, *hung + ": restartPolicy Never");
    }
    if (p->st.restarts + p->st.recoveries >= policy.max_restarts) {
      return EndJob(p, false, "MaxRestartsExceeded",
                    *hung + ": " + std::to_string(p->st.restarts + p->st.recoveries) +
                        " restarts and recoveries reached spec.failurePolicy.maxRestarts (" +
                        std::to_string(policy.max_restarts) + ")");
    }
    p->st.restarts += 1;
    StartNewRound(p, RestartSize(*p), api::kPhaseRestarting, internal::kReasonHung,
                  "hung, " + *hung + "; restart " +
                      std::to_string(p->st.restarts + p->st.recoveries) + " of " +
                      std::to_string(policy.max_restarts),
                  true);
  } else if (AllSucceeded(*p)) {
    return Succeed(p);
  } else if (ResizeRequested(*p) && internal::ResizesInPlace(*p)) {
    internal::ResizeInPlace(p, internal::DesiredSize(p->job), "spec.replicas changed");
  } else if (ResizeRequested(*p)) {
    const int to = internal::DesiredSize(p->job);
    StartNewRound(p, to, api::kPhaseScaling, "Resized",
                  "resize " + std::to_string(p->size) + " -> " + std::to_string(to) + " pods",
                  false);
  } else if (internal::ResizesInPlace(*p) && !internal::UnschedulableBelowTop(p)) {
    // An unschedulable pod shrinks the group, not the round (PlanGroupSize): it stays Pending.
  } else if (auto target = ShrinkTarget(p)) {
    StartNewRound(p, *target, api::kPhaseScaling, "PendingTimeout",
                  "shrink " + std::to_string(p->size) + " -> " + std::to_string(*target) +
                      " pods: unschedulable for " +
                      std::to_string(p->job.spec.elastic->pending_timeout_seconds) + "s",
                  true);
  }
  return std::nullopt;
}

}  // namespace

Plan PlanUnparsableJob(const api::DDPJob& identity, const Observed& seen,
                       const std::string& parse_error, TimePoint now, const GangConfig& gang) {
  if (identity.deletion_timestamp) return Plan{};
  Observed own;
  own.service_exists = seen.service_exists;
  own.pod_group = seen.pod_group;
  for (const ObservedPod& pod : seen.pods) {
    if (identity.uid.empty() || pod.owner_uid == identity.uid) own.pods.push_back(pod);
  }
  Pass p = internal::BeginPass(identity, own, now, gang);
  if (IsFinished(p)) {
    internal::CleanUpFinished(&p);
    return internal::FinishPass(&p);
  }
  return EndJob(&p, false, "InvalidSpec", "invalid spec: " + parse_error);
}

Plan PlanReconcile(const api::DDPJob& job, const Observed& seen, TimePoint now,
                   const PlanOptions& options) {
  // The garbage collector removes the pods, the Service and the PodGroup through their owner
  // references.
  if (job.deletion_timestamp) return Plan{};
  Observed own;
  own.service_exists = seen.service_exists;
  own.progress = seen.progress;
  own.group = seen.group;
  own.pod_group = seen.pod_group;
  own.pod_group_api_missing = seen.pod_group_api_missing;
  own.network_policy_exists = seen.network_policy_exists;
  own.network_policy = seen.network_policy;
  own.nodes = seen.nodes;  // suspect_nodes.h
  own.rendezvous_reads = seen.rendezvous_reads;  // silent_rendezvous.h
  std::vector<std::string> foreign;
  const bool expect_finish = ExpectsFinishMessage(job, seen);
  for (const ObservedPod& pod : seen.pods) {
    if (job.uid.empty() || pod.owner_uid == job.uid) {
      own.pods.push_back(pod);
      own.pods.back().exit0_unfinished = ExitedWithoutFinishing(pod, expect_finish);
      // The group fenced this very pod object (not a successor under its name).
      if (seen.group && seen.group->round == pod.round) {
        for (const auto& [name, uid] : seen.group->report.fenced) {
          if (name == pod.name && (uid == pod.uid || uid.empty())) own.pods.back().fenced = true;
        }
      }
      // Silent with its node's silent rendezvous pod: lost with the node (silent_rendezvous.h).
      if (internal::LostWithStore(job, seen, pod, now, options)) {
        own.pods.back().lost_with_store = true;
        own.pods.back().fenced = true;
      }
    } else {
      foreign.push_back(pod.name);
    }
  }
  Pass p = internal::BeginPass(job, own, now, options.gang);
  p.foreign_names = std::move(foreign);
  if (IsFinished(p)) {
    internal::CleanUpFinished(&p);
    return internal::FinishPass(&p);
  }
  // Validate the size the planner will use, so an out-of-bounds `kubectl scale` is clamped
  // rather than failing a running job.
  api::DDPJob checked = p.job;
  checked.spec.replicas = internal::DesiredSize(p.job);
  if (std::vector<std::string> errs = api::Validate(checked); !errs.empty()) {
    std::string msg = "invalid spec: ";
    for (size_t i = 0; i < errs.size(); ++i) msg += (i ? "; " : "") + errs[i];
    return EndJob(&p, false, "InvalidSpec", msg);
  }
  if (job.spec.run_policy.suspend) return Suspend(&p);
  if (p.st.phase == api::kPhaseSuspended) Resume(&p);
  if (p.st.phase.empty()) StartJob(&p);

  // A round waiting for its gang holds no resources yet: its deadline does not run.
  internal::RecordGangWait(&p, internal::FindGangWait(p));
  if (auto deadline = Deadline(p); deadline && !p.gang_wait) {
    if (p.now >= *deadline) {
      return EndJob(&p, false, "DeadlineExceeded",
                    "active for more than spec.runPolicy.activeDeadlineSeconds (" +
                        std::to_string(*job.spec.run_policy.active_deadline_seconds) + "s)");
    }
    internal::Requeue(&p, *deadline);
  }

  if (std::optional<Plan> ended = internal::MirrorGroup(&p)) return std::move(*ended);
  internal::KeepReplacing(&p);
  // A pod replaced alone leaves the round as it is: look again for another failure of this pass,
  // so pods lost together (one node) are each replaced and counted.
  for (;;) {
    const size_t replaced = p.replaced.size();
    if (std::optional<Plan> ended = DecideForRound(&p)) return std::move(*ended);
    if (p.replaced.size() == replaced) break;
  }
  internal::DeleteStalePods(&p);
  const std::optional<TimePoint> backoff = BackoffUntil(p);
  const bool backing_off = backoff && p.now < *backoff;
  if (backing_off) internal::Requeue(&p, *backoff);
  internal::PlanPodGroup(&p);
  internal::PlanNetworkPolicy(&p, options.network_policy);
  internal::ReplaceSilentRendezvous(&p, options);
  internal::TrackSuspectNodes(&p, options);
  internal::CreateMissing(&p, backing_off || (p.gang_wait && p.gang_wait->hold_pods));
  internal::ForceDeleteLostPods(&p, options);
  internal::TrackIncidents(&p);
  internal::Summarize(&p);
  internal::PlanGroupSize(&p);
  internal::UpdateProgress(&p);
  return internal::FinishPass(&p);
}

}  // namespace ddp::plan
