// PlanReconcile under recovery InPlace with the group's own pods and report (DESIGN.md "Drains,
// silent nodes and the budget", "Hot spares"): the rendezvous pod and spares of every round, pods
// replaced alone (spares holding a rank, idle spares, the rendezvous pod), what a supervised pod's
// termination message decides, fencing by name and UID, and the report's members and idle spares.
// One row per decision; every row is also checked for idempotency (apply the plan, plan again: no
// writes). Expected values come from the contract, each row's comment says which part.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include <algorithm>

#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using api::DDPJob;
using group::EndReason;
using Strings = std::vector<std::string>;

struct Expect {
  Strings creates;  // DescribeCreates, exact and in order
  Strings deletes;  // DescribeDeletes, exact and in order
  std::string phase;
  int round = -1, restarts = -1, disruptions = -1, recoveries = -1;
  int ready = -1, spares = -1, ready_spares = -1;  // readyReplicas, spares, readySpares
  int silent_held = -1;                             // silentPodsHeld
  Strings events;         // event reasons, exact and in order
  std::string message;    // a substring of some event's message; "" = not checked
  std::string condition;  // "Type=Status/Reason"; "" = not checked
  int failure_rank = -2;  // status.lastFailure.rank; -2 = not checked
  int requeue_ms = -1;    // -1: not checked
  bool no_requeue = false;
  bool no_status = false; // the status must not be written at all
};

struct Row {
  std::string name;
  DDPJob job;
  Observed seen;
  Expect want;
};

// Round 1 of a 2-pod job with `spares` spares, Running, its status as the last pass left it.
DDPJob Running2(int spares = 1) {
  DDPJob j = InPlace(InPhase(Job(2), "Running", 1, 2), spares);
  j.status.ready_replicas = 2;
  j.status.spares = spares;
  j.status.ready_spares = spares;
  return j;
}
DDPJob Counts(DDPJob j, int restarts, int recoveries) {
  j.status.restarts = restarts;
  j.status.recoveries = recoveries;
  return j;
}
// The rendezvous pod's page had reported `n` recoveries of this round (already in the status).
DDPJob Mirrored(DDPJob j, int n) {
  j.status.progress = api::Progress{};
  j.status.progress->recoveries = n;
  return j;
}
// The steps the jobs of these tables train.
constexpr int64_t kSteps = 6000;
// Worker `index` of round 1 finished; its supervisor read `n` recoveries from the store.
ObservedPod Finished(int index, int n) {
  ObservedPod p = Exited(index, 1, 0);
  p.message = group::FormatFinished({kSteps, n});
  return p;
}
// Pod `index`'s disruption was counted in an earlier pass (it was killed and replaced).
DDPJob LastFailed(DDPJob j, int index) {
  j.status.disruptions = 1;
  j.status.last_failure = api::LastFailure{};
  j.status.last_failure->pod = "mingpt-worker-" + std::to_string(index);
  j.status.last_failure->rank = index;
  j.status.last_failure->reason = "Killed";
  j.status.last_failure->pod_uid = "uid-of-the-killed-pod";
  return j;
}
// `g` with the group's word that `pod` (its name and UID) ended holding `node` (-1: none).
ObservedGroup Ended(ObservedGroup g, const ObservedPod& pod, int node) {
  g.report.ended.push_back({pod.name, pod.uid, node});
  return g;
}
ObservedPod WithMessage(ObservedPod p, const std::string& message) {
  p.message = message;
  return p;
}
DDPJob Queue(DDPJob j) {
  j.labels["kueue.x-k8s.io/queue-name"] = "team-a";
  return j;
}
DDPJob Never(DDPJob j) {
  j.spec.failure_policy.restart_policy = api::RestartPolicy::kNever;
  return j;
}
// The group as it starts: each worker holds its own rank, the spare is idle.
ObservedGroup Fresh() {
  return Report(1, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {"mingpt-spare-0"});
}
// After spare-0 took rank `rank`: its old holder came back as an idle spare.
ObservedGroup SpareTook(int rank) {
  const std::string other = "mingpt-worker-" + std::to_string(1 - rank);
  return Report(1, {{"mingpt-spare-0", rank}, {other, 1 - rank}},
                {"mingpt-worker-" + std::to_string(rank)});
}
Observed Round1(ObservedGroup g, std::vector<ObservedPod> changed = {}) {
  Observed w = GroupWorld(2, 1, 1, "Running");
  for (const ObservedPod& p : changed) w = With(w, p);
  w.group = std::move(g);
  return w;
}
Observed Without(Observed w, const std::string& name) {
  w.pods.erase(std::remove_if(w.pods.begin(), w.pods.end(),
                              [&](const ObservedPod& p) { return p.name == name; }),
               w.pods.end());
  return w;
}
// `p` ended as its container would: Failed with exit `code` (reason Error).
ObservedPod Failed(ObservedPod p, int code) {
  p.phase = "Failed";
  p.ready = false;
  p.exit_code = code;
  p.reason = "Error";
  return p;
}
ObservedPod Done(ObservedPod p) {
  p.phase = "Succeeded";
  p.ready = false;
  p.exit_code = 0;
  p.reason = "Completed";
  return p;
}
ObservedPod EvictedAs(ObservedPod p) {
  p.phase = "Failed";
  p.ready = false;
  p.reason = "Evicted";
  return p;
}

const char kW0[] = "Pod mingpt-worker-0";
const char kW1[] = "Pod mingpt-worker-1";
const char kSpare[] = "Pod mingpt-spare-0";
const char kRdzv[] = "Pod mingpt-rendezvous";

std::vector<Row> Rows() {
  const ObservedGroup fresh = Fresh();
  const ObservedPod spare = Spare(0, 1, "Running");
  const ObservedPod rdzv = Rendezvous(1, "Running");
  return {
      // 1. Every InPlace round: the rendezvous pod first, then the workers, then the spares.
      {"new_job_creates_rendezvous_then_workers_then_spares", InPlace(Job(2), 2), World({}, false),
       {.creates = {"Service mingpt", "Pod mingpt-rendezvous r0", "Pod mingpt-worker-0 r0",
                    "Pod mingpt-worker-1 r0", "Pod mingpt-spare-0 r0", "Pod mingpt-spare-1 r0"},
        .phase = "Pending", .round = 0, .restarts = 0, .recoveries = 0, .spares = 2,
        .ready_spares = 0, .events = {"JobCreated"},
        .message = "creating Service mingpt and rendezvous pod mingpt-rendezvous and 2 pods of 2 "
                   "and 2 spare pods"}},
      {"running_waits_for_the_rendezvous_pod", InPlace(InPhase(Job(2), "Pending", 0, 2), 1),
       With(GroupWorld(2, 0, 1, "Running"), Rendezvous(0, "Pending")),
       {.phase = "Pending", .events = {}}},
      {"spares_do_not_hold_up_running", InPlace(InPhase(Job(2), "Pending", 0, 2), 1),
       With(GroupWorld(2, 0, 1, "Running"), Spare(0, 0, "Pending")),
       {.phase = "Running", .spares = 1, .ready_spares = 0, .events = {"Running"},
        .condition = "Running=True/AllPodsRunning"}},
      {"a_missing_spare_is_created_in_the_same_round", Running2(),
       Without(Round1(fresh), "mingpt-spare-0"),
       {.creates = {"Pod mingpt-spare-0 r1"}, .phase = "Running", .round = 1, .recoveries = 0,
        .spares = 1, .events = {"CreatingPods"},
        .message = "round 1: creating 1 spare pod (world size 2)", .no_status = true}},

      // 2. Replaced alone in the same round: any worker pod (pod 0 too, planner_inplace_test.cc),
      // and a spare pod the report says holds a rank, charged as a member's failure.
      {"spare_holding_rank_0_fails_is_replaced_and_charged", Running2(),
       Round1(SpareTook(0), {Failed(spare, 137)}),
       {.deletes = {kSpare}, .phase = "Restarting", .round = 1, .restarts = 0, .disruptions = 0,
        .recoveries = 1, .events = {"PodReplaced"},
        .message = "round 1: replacing pod mingpt-spare-0 (rank 0 killed by signal 9 (exit 137); "
                   "recovery 1 of 3)",
        .condition = "Restarting=True/PodReplaced", .failure_rank = 0}},
      {"spare_holding_a_rank_evicted_is_a_disruption", Running2(),
       Round1(SpareTook(1), {EvictedAs(spare)}),
       {.deletes = {kSpare}, .phase = "Restarting", .disruptions = 1, .recoveries = 0,
        .events = {"PodReplaced"},
        .message = "replacing pod mingpt-spare-0 (rank 1 disrupted: Evicted; disruption 1, not "
                   "limited)",
        .failure_rank = 1}},
      {"spare_holding_a_rank_past_the_budget_fails_the_job", Counts(Running2(), 1, 2),
       Round1(SpareTook(1), {Failed(spare, 75)}),
       {.deletes = {kW0, kW1, kRdzv, "Service mingpt"}, .phase = "Failed", .restarts = 1,
        .recoveries = 2, .events = {"MaxRestartsExceeded", "CleaningPods"},
        .message = "rank 1 exited 75: 1 restarts and 2 recoveries reached "
                   "spec.failurePolicy.maxRestarts (3)"}},
      // A worker pod gone before the operator saw it go: lost with a rank only if the report
      // says it held one (a fenced pod force-deleted after the spare took its rank did not).
      {"vanished_pod_holding_a_rank_is_a_disruption", Running2(),
       Without(Round1(fresh), "mingpt-worker-1"),
       {.creates = {"Pod mingpt-worker-1 r1"}, .phase = "Restarting", .disruptions = 1,
        .recoveries = 0, .events = {"PodReplaced", "CreatingPods"},
        .message = "replacing pod mingpt-worker-1 (rank 1 disrupted: PodDeleted; disruption 1",
        .failure_rank = 1}},
      // Seen in the spares benchmark: pod 0 killed and replaced (counted), the round Running
      // again on the spare, then its old pod gone before the next scrape: not a second loss.
      {"vanished_pod_replaced_last_is_recreated_not_counted_again", LastFailed(Running2(), 0),
       Without(Round1(Report(1, {{"mingpt-worker-0", 0}, {"mingpt-spare-0", 1}})),
               "mingpt-worker-0"),
       {.creates = {"Pod mingpt-worker-0 r1"}, .phase = "Running", .disruptions = 1,
        .recoveries = 0, .events = {"CreatingPods"}}},
      {"vanished_pod_whose_rank_a_spare_took_is_recreated_uncounted", Running2(),
       Without(Round1(Report(1, {{"mingpt-worker-0", 0}, {"mingpt-spare-0", 1}})),
               "mingpt-worker-1"),
       {.creates = {"Pod mingpt-worker-1 r1"}, .phase = "Running", .disruptions = 0,
        .recoveries = 0, .ready_spares = 0, .events = {"CreatingPods"}}},
      // An idle spare (a spare pod, or a worker pod whose rank a spare took) held no rank: it is
      // replaced without a count, and the round goes on Running.
      {"idle_spare_pod_failed_is_replaced_uncounted", Running2(), Round1(fresh, {Failed(spare, 1)}),
       {.deletes = {kSpare}, .phase = "Running", .restarts = 0, .disruptions = 0,
        .recoveries = 0, .events = {"SpareReplaced"},
        .message = "round 1: replacing idle spare mingpt-spare-0 (exited 1; not counted: it held "
                   "no rank)"}},
      {"idle_spare_evicted_is_replaced_uncounted", Running2(), Round1(fresh, {EvictedAs(spare)}),
       {.deletes = {kSpare}, .disruptions = 0, .events = {"SpareReplaced"},
        .message = "replacing idle spare mingpt-spare-0 (disrupted: Evicted; not counted"}},
      {"idle_spare_without_a_report_is_the_spare_pod", Running2(),
       With(GroupWorld(2, 1, 1, "Running"), Failed(spare, 137)),
       {.deletes = {kSpare}, .recoveries = 0, .events = {"SpareReplaced"}}},
      {"worker_whose_rank_a_spare_took_is_an_idle_spare", Running2(),
       Round1(SpareTook(1), {Exited(1, 1, 137)}),
       {.deletes = {kW1}, .phase = "Running", .restarts = 0, .disruptions = 0,
        .recoveries = 0, .events = {"SpareReplaced"},
        .message = "replacing idle spare mingpt-worker-1 (killed by signal 9 (exit 137); not "
                   "counted: it held no rank)"}},
      {"idle_spare_deleted_by_someone_else_is_recreated_uncounted", Running2(),
       Round1(fresh, {Deleting(spare)}),
       {.deletes = {}, .phase = "Running", .disruptions = 0, .recoveries = 0, .spares = 0,
        .ready_spares = 1}},
      // The rendezvous pod is replaced alone, counted nowhere; the members re-register with the
      // new one. A rendezvous pod that cannot run ddp-worker fails the job.
      {"rendezvous_pod_failed_is_replaced_uncounted", Running2(),
       Round1(fresh, {Failed(rdzv, 137)}),
       {.deletes = {kRdzv}, .phase = "Running", .round = 1, .restarts = 0, .disruptions = 0,
        .recoveries = 0, .events = {"RendezvousReplaced"},
        .message = "round 1: replacing rendezvous pod mingpt-rendezvous (killed by signal 9 "
                   "(exit 137)); training goes on, the group re-registers with the new one"}},
      {"rendezvous_pod_evicted_is_replaced_uncounted", Running2(),
       Round1(fresh, {EvictedAs(rdzv)}),
       {.deletes = {kRdzv}, .disruptions = 0, .recoveries = 0, .events = {"RendezvousReplaced"},
        .message = "replacing rendezvous pod mingpt-rendezvous (disrupted: Evicted)"}},
      // Not deleted again, not counted; its loss is an incident (status.incidents) only.
      {"rendezvous_pod_deleted_by_someone_else_is_not_deleted_again", Running2(),
       Round1(fresh, {Deleting(rdzv)}),
       {.deletes = {}, .phase = "Running", .disruptions = 0, .recoveries = 0}},
      {"rendezvous_pod_gone_is_recreated_in_the_same_round", Running2(),
       Without(Round1(fresh), "mingpt-rendezvous"),
       {.creates = {"Pod mingpt-rendezvous r1"}, .phase = "Running", .round = 1,
        .disruptions = 0, .recoveries = 0, .events = {"CreatingPods"},
        .message = "round 1: creating rendezvous pod mingpt-rendezvous (world size 2)"}},
      {"rendezvous_pod_exit_127_fails_the_job", Running2(), Round1(fresh, {Failed(rdzv, 127)}),
       {.deletes = {kW0, kW1, kSpare, "Service mingpt"}, .phase = "Failed", .recoveries = 0,
        .events = {"RendezvousFailed", "CleaningPods"},
        .message = "rendezvous pod mingpt-rendezvous exited 127: recovery InPlace runs "
                   "`ddp-worker rendezvous` from the worker container's image; use a ddp-worker "
                   "image, or recovery Restart",
        .condition = "Failed=True/RendezvousFailed"}},
      {"rendezvous_pod_exit_2_fails_the_job", Running2(), Round1(fresh, {Failed(rdzv, 2)}),
       {.deletes = {kW0, kW1, kSpare, "Service mingpt"}, .phase = "Failed",
        .events = {"RendezvousFailed", "CleaningPods"}, .condition = "Failed=True/RendezvousFailed"}},
      {"rendezvous_pod_exit_126_fails_the_job", Running2(), Round1(fresh, {Failed(rdzv, 126)}),
       {.deletes = {kW0, kW1, kSpare, "Service mingpt"}, .phase = "Failed",
        .events = {"RendezvousFailed", "CleaningPods"}, .condition = "Failed=True/RendezvousFailed"}},
      {"workers_done_end_the_job_and_clean_the_rendezvous_pod_and_spares", Running2(),
       Round1(fresh, {Finished(0, 0), Finished(1, 0)}),
       {.deletes = {kRdzv, kSpare, "Service mingpt"}, .phase = "Succeeded",
        .events = {"AllPodsSucceeded", "CleaningPods"}}},
      // A failure healed in a run's last second: no scrape saw it, the finished pods did.
      {"a_recovery_no_scrape_saw_reaches_the_status_from_the_finished_pods",
       Mirrored(Counts(Running2(), 0, 2), 2),
       Round1(Report(1, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {"mingpt-spare-0"}, 2),
              {Finished(0, 3), Finished(1, 2)}),
       {.deletes = {kRdzv, kSpare, "Service mingpt"}, .phase = "Succeeded", .restarts = 0,
        .recoveries = 3, .events = {"AllPodsSucceeded", "CleaningPods"}}},
      {"a_finished_pods_count_never_lowers_the_status", Mirrored(Counts(Running2(), 0, 2), 2),
       Round1(Report(1, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {"mingpt-spare-0"}, 2),
              {Finished(0, 1), Finished(1, 1)}),
       {.deletes = {kRdzv, kSpare, "Service mingpt"}, .phase = "Succeeded", .recoveries = 2,
        .events = {"AllPodsSucceeded", "CleaningPods"}}},
      // The rendezvous pod already gone: the finished pods' count alone.
      {"a_finished_pods_count_counts_without_the_rendezvous_pod",
       Mirrored(Counts(Running2(), 1, 1), 1),
       Without(Round1(ObservedGroup{}, {Finished(0, 2), Finished(1, 2)}), "mingpt-rendezvous"),
       {.deletes = {kSpare, "Service mingpt"}, .phase = "Succeeded", .restarts = 1,
        .recoveries = 2, .events = {"AllPodsSucceeded", "CleaningPods"}}},
      // The spare holding rank 1 and pod 0 finished training while the pod created for rank 1
      // is still Pending (no room after a node loss): the job is done, not waiting for it.
      {"ranks_finished_on_a_spare_end_the_job_without_the_pending_pod", Running2(),
       Round1(SpareTook(1), {Finished(0, 1), WithMessage(Done(spare), group::FormatFinished({kSteps, 1})),
                             Pod(1, 1, "Pending")}),
       {.deletes = {kW1, kRdzv, "Service mingpt"}, .phase = "Succeeded",
        .events = {"AllPodsSucceeded", "CleaningPods"}}},
      // A pod whose process ended is listed nowhere in the report after its end: what it held
      // then decides. An idle spare (here the worker pod whose rank the spare took) is replaced
      // uncounted; a spare holding a rank (rank 1 passed on to the idle worker pod) is charged.
      {"an_idle_worker_pod_that_crashed_is_replaced_uncounted", Running2(),
       Round1(Ended(Report(1, {{"mingpt-worker-0", 0}, {"mingpt-spare-0", 1}}),
                    Pod(1, 1, "Running"), -1),
              {Failed(Pod(1, 1, "Running"), 134)}),
       {.deletes = {kW1}, .phase = "Running", .restarts = 0, .disruptions = 0,
        .recoveries = 0, .events = {"SpareReplaced"}}},
      {"a_spare_holding_a_rank_that_crashed_is_charged", Running2(),
       Round1(Ended(Report(1, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}), spare, 1),
              {Failed(spare, 134)}),
       // Both ranks are held by running pods again: Running in the same pass.
       {.deletes = {kSpare}, .phase = "Running", .restarts = 0, .disruptions = 0,
        .recoveries = 1, .events = {"PodReplaced", "Running"}, .failure_rank = 1}},
      // It ends 0 once every rank finished (or 30 s after): not a loss, nothing to replace.
      {"rendezvous_pod_done_is_not_replaced", Running2(), Round1(fresh, {Done(rdzv)}),
       {.no_status = true}},
      // Under Kueue a round is one pod group: a lost member starts a new round instead.
      {"kueue_failure_is_a_new_round_for_every_pod", Queue(Running2()),
       Round1(fresh, {Exited(1, 1, 137)}),
       {.deletes = {kW0, kW1, kRdzv, kSpare}, .phase = "Restarting", .round = 2, .restarts = 1,
        .recoveries = 0, .events = {"PodFailed", "DeletingPods"},
        .message = "round 1 -> 2 (rank 1 killed by signal 9 (exit 137); restart 1 of 3)"}},
      {"kueue_disruption_is_a_new_round_for_every_pod", Queue(Running2()),
       Round1(fresh, {Evicted(0, 1)}),
       {.deletes = {kW0, kW1, kRdzv, kSpare}, .round = 2, .restarts = 0, .disruptions = 1,
        .events = {"PodDisrupted", "DeletingPods"}}},

      // 3. What a supervised pod wrote when it ended.
      {"budget_spent_fails_the_job_with_the_whole_budget_charged", Counts(Running2(), 1, 1),
       Round1(fresh, {Ends(Pod(1, 1, "Running"), EndReason::kBudgetSpent,
                           "rank 1 exited 137; 2 of 2 recoveries used", 137)}),
       {.deletes = {kW0, kRdzv, kSpare, "Service mingpt"}, .phase = "Failed", .restarts = 1,
        .recoveries = 2, .events = {"MaxRestartsExceeded", "CleaningPods"},
        .message = "pod mingpt-worker-1: BudgetSpent: rank 1 exited 137; 2 of 2 recoveries used "
                   "(1 restarts and 2 recoveries reached spec.failurePolicy.maxRestarts)",
        .condition = "Failed=True/MaxRestartsExceeded", .failure_rank = 1}},
      {"group_abandoned_is_a_new_round_at_once_uncharged", Counts(Running2(), 0, 1),
       Round1(fresh, {Ends(Pod(0, 1, "Running"), EndReason::kGroupAbandoned,
                           "rank 1 was lost during a heal")}),
       {.deletes = {kW0, kW1, kRdzv, kSpare}, .phase = "Restarting", .round = 2, .restarts = 0,
        .disruptions = 0, .recoveries = 1, .events = {"GroupAbandoned", "DeletingPods"},
        .message = "round 1 -> 2 (the group could not re-form in place (pod mingpt-worker-0); "
                   "the failure that caused it was counted already)",
        .condition = "Restarting=True/GroupAbandoned", .no_requeue = true}},
      // Succeeded means trained. The group stopped together with a checkpoint though nobody
      // asked the job to stop (every member got SIGTERM: all pods deleted or drained at once);
      // a pod that found the group stopped says so: a new round resumes from the checkpoint, one
      // disruption, uncharged.
      {"a_pod_that_found_the_group_stopped_starts_a_new_round_uncharged", Running2(),
       Round1(fresh, {Ends(Pod(0, 1, "Running"), EndReason::kStopped,
                           "the group had stopped before pod mingpt-worker-0 held a rank")}),
       {.deletes = {kW0, kW1, kRdzv, kSpare}, .phase = "Restarting", .round = 2, .restarts = 0,
        .disruptions = 1, .recoveries = 0, .events = {"GroupStopped", "DeletingPods"},
        .message = "round 1 -> 2 (the group stopped together with a checkpoint (pod "
                   "mingpt-worker-0: every member got SIGTERM at once) but the job was not "
                   "stopped: the new round resumes from that checkpoint",
        .condition = "Restarting=True/GroupStopped", .no_requeue = true}},
      // Every member pod deleted at once: nobody is left to heal a replacement in place.
      {"every_member_pod_deleted_at_once_is_a_new_round", Running2(),
       Round1(fresh, {Deleting(Pod(0, 1, "Running")), Deleting(Pod(1, 1, "Running"))}),
       {.deletes = {kRdzv, kSpare}, .phase = "Restarting", .round = 2, .restarts = 0,
        .disruptions = 2, .recoveries = 0, .events = {"PodDisrupted", "DeletingPods"},
        .message = "no pod of the round is left to heal a replacement in place: the new round "
                   "resumes from the checkpoint"}},
      // One survivor is enough: the deleted pod is replaced alone and healed from it.
      {"a_pod_deleted_beside_a_survivor_is_replaced_alone", Running2(),
       Round1(fresh, {Deleting(Pod(0, 1, "Running"))}),
       {.phase = "Restarting", .round = 1, .disruptions = 1, .events = {"PodReplaced"}}},
      // A pod that exits 0 without `ddp: Finished` never finishes a job: a failure, healed
      // under OnFailure like any other.
      {"exit_0_without_finishing_is_a_failure_not_a_success", Running2(),
       Round1(fresh, {Exited(0, 1, 0), Finished(1, 0)}),
       {.deletes = {kW0}, .phase = "Restarting", .round = 1, .restarts = 0, .recoveries = 1,
        .events = {"PodReplaced"},
        .message = "rank 0 exited 0 without saying it trained to the end",
        .failure_rank = 0}},
      {"a_stopped_pod_that_exited_0_is_not_a_finish", Running2(),
       Round1(fresh, {Done(WithMessage(Pod(0, 1, "Running"), "ddp: Stopped: the job stopped")),
                      Finished(1, 0)}),
       {.deletes = {kW0}, .phase = "Restarting", .recoveries = 1, .events = {"PodReplaced"},
        .message = "rank 0 exited 0 but its pod said Stopped, not Finished"}},
      // An idle spare released by a finished group finished nothing: the pod that lost its rank
      // to it is not a finish either, so one Finished pod of two is not the end.
      {"a_released_pod_is_not_a_finish", Running2(),
       Round1(fresh, {Finished(0, 0), Done(WithMessage(Pod(1, 1, "Running"),
                                                        "ddp: Released: held no rank"))}),
       {.phase = "Running", .round = 1, .recoveries = 0, .events = {}}},
      {"group_that_never_formed_is_a_charged_restart_with_backoff", Running2(),
       Round1(fresh, {Ends(Pod(1, 1, "Running"), EndReason::kGroupAbandoned,
                           "the group never formed within 600s")}),
       {.deletes = {kW0, kW1, kRdzv, kSpare}, .phase = "Restarting", .round = 2, .restarts = 1,
        .recoveries = 0, .events = {"PodFailed", "DeletingPods"},
        .message = "round 1 -> 2 (the group never formed within spec.rendezvous.timeoutSeconds; "
                   "restart 1 of 3)",
        .condition = "Restarting=True/PodFailed", .requeue_ms = 1000}},
      {"group_that_never_formed_past_the_budget_fails_the_job", Counts(Running2(), 2, 1),
       Round1(fresh, {Ends(Pod(1, 1, "Running"), EndReason::kGroupAbandoned,
                           "the group never formed within 600s")}),
       {.deletes = {kW0, kRdzv, kSpare, "Service mingpt"}, .phase = "Failed", .restarts = 2,
        .recoveries = 1, .events = {"MaxRestartsExceeded", "CleaningPods"},
        .message = "the group never formed within spec.rendezvous.timeoutSeconds; 2 restarts and "
                   "1 recoveries reached spec.failurePolicy.maxRestarts",
        .condition = "Failed=True/MaxRestartsExceeded"}},
      {"departed_is_a_disruption_never_charged", Running2(),
       Round1(fresh, {Ends(Pod(1, 1, "Running"), EndReason::kDeparted, "SIGTERM to this pod")}),
       {.deletes = {kW1}, .phase = "Restarting", .round = 1, .restarts = 0, .disruptions = 1,
        .recoveries = 0, .events = {"PodReplaced"},
        .message = "replacing pod mingpt-worker-1 (rank 1 disrupted: departed; disruption 1, "
                   "not limited)"}},
      {"fenced_end_is_a_disruption_never_charged", Counts(Running2(), 0, 3),
       Round1(fresh, {Ends(Pod(0, 1, "Running"), EndReason::kFenced, "declared lost")}),
       {.deletes = {kW0}, .phase = "Restarting", .disruptions = 1, .recoveries = 3,
        .events = {"PodReplaced"},
        .message = "replacing pod mingpt-worker-0 (rank 0 disrupted: declared lost by its group; "
                   "disruption 1, not limited)"}},
      {"not_retryable_end_fails_the_job_with_the_trainers_code", Never(Running2()),
       Round1(fresh, {Ends(Pod(1, 1, "Running"), EndReason::kNotRetryable, "rank 1 exited 1", 1)}),
       {.deletes = {kW0, kRdzv, kSpare, "Service mingpt"}, .phase = "Failed", .recoveries = 0,
        .message = "rank 1 exited 1: not retryable under restartPolicy Never",
        .condition = "Failed=True/PodFailed"}},

      // 3-4. Fenced by the report: by name AND uid, this round only; always a disruption, forced.
      {"report_fences_a_member_it_is_forced_and_replaced", Running2(),
       [&] {
         ObservedGroup g = fresh;
         g.report.fenced = {{"mingpt-worker-1", "mingpt-worker-1-r1"}};
         return Round1(g);
       }(),
       {.deletes = {"Pod mingpt-worker-1 (grace 0s)"}, .phase = "Restarting", .disruptions = 1,
        .recoveries = 0, .events = {"PodReplaced", "ForceDeletingPod"},
        .message = "round 1: pod mingpt-worker-1 declared lost and fenced by its group: "
                   "force-deleted"}},
      {"report_fencing_an_older_uid_leaves_the_successor_alone", Running2(),
       [&] {
         ObservedGroup g = fresh;
         g.report.fenced = {{"mingpt-worker-1", "mingpt-worker-1-r0"}};
         return Round1(g);
       }(),
       {.no_status = true}},
      {"report_of_another_round_fences_nothing", Running2(),
       [&] {
         ObservedGroup g = fresh;
         g.round = 0;
         g.report.fenced = {{"mingpt-worker-1", "mingpt-worker-1-r1"}};
         return Round1(g);
       }(),
       {.no_status = true}},
      {"report_fences_an_idle_spare_it_is_forced_uncounted", Running2(),
       [&] {
         ObservedGroup g = fresh;
         g.report.fenced = {{"mingpt-spare-0", "mingpt-spare-0-r1"}};
         return Round1(g);
       }(),
       {.deletes = {"Pod mingpt-spare-0 (grace 0s)"}, .disruptions = 0, .recoveries = 0,
        .events = {"SpareReplaced", "ForceDeletingPod"}}},

      // 4. The report's idle spares are status.readySpares; without a report, ready spare pods.
      {"ready_spares_are_the_reports_idle_spares", Running2(), Round1(SpareTook(1)),
       {.spares = 1, .ready_spares = 1, .no_status = true}},
      {"a_spare_pod_not_yet_registered_is_not_ready", Running2(), Round1(Report(1, {}, {})),
       {.spares = 1, .ready_spares = 0}},
      // Ready replicas are the ranks' pods: the spare that took rank 1 counts, and a pod the
      // report does not list yet (pod 1's replacement, about to register as a spare) adds none.
      {"ready_replicas_are_the_ranks_pods", Running2(),
       Round1(Report(1, {{"mingpt-worker-0", 0}, {"mingpt-spare-0", 1}})),
       {.phase = "Running", .ready = 2, .spares = 1, .ready_spares = 0}},
      {"a_rank_held_by_a_pending_spare_is_not_ready", Running2(),
       Round1(SpareTook(1), {Spare(0, 1, "Pending")}),
       {.phase = "Running", .ready = 1}},
      {"without_a_report_ready_spare_pods_count", Running2(2),
       With(GroupWorld(2, 1, 2, "Running"), Spare(1, 1, "Pending")),
       {.spares = 2, .ready_spares = 1}},
      // 5. The silent pods the group holds back (a mass silence) are status.silentPodsHeld, and
      // none once the silence cleared.
      {"silent_pods_held_are_the_reports", Running2(),
       Round1([] {
         ObservedGroup g = Fresh();
         g.report.silent_held = 3;
         return g;
       }()),
       {.silent_held = 3}},
      {"a_silence_that_cleared_holds_none",
       [] {
         DDPJob j = Running2();
         j.status.silent_pods_held = 3;
         return j;
       }(),
       Round1(Fresh()), {.silent_held = 0}},
  };
}

void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class GroupTable : public ::testing::TestWithParam<Row> {};

std::string ConditionString(const api::DDPJobStatus& s, const std::string& type) {
  const api::Condition* c = s.FindCondition(type);
  return c ? type + "=" + c->status + "/" + c->reason : type + " absent";
}

TEST_P(GroupTable, Decides) {
  const Row& row = GetParam();
  const TimePoint now = At(10);
  const Plan plan = PlanReconcile(row.job, row.seen, now);
  SCOPED_TRACE(plan.ToString());
  const Expect& want = row.want;
  const api::DDPJobStatus result = plan.status ? *plan.status : row.job.status;

  EXPECT_EQ(DescribeCreates(plan), want.creates);
  EXPECT_EQ(DescribeDeletes(plan), want.deletes);
  if (!want.phase.empty()) { EXPECT_EQ(result.phase, want.phase); }
  if (want.round >= 0) { EXPECT_EQ(result.round, want.round); }
  if (want.restarts >= 0) { EXPECT_EQ(result.restarts, want.restarts); }
  if (want.disruptions >= 0) { EXPECT_EQ(result.disruptions, want.disruptions); }
  if (want.recoveries >= 0) { EXPECT_EQ(result.recoveries, want.recoveries); }
  if (want.ready >= 0) { EXPECT_EQ(result.ready_replicas, want.ready); }
  if (want.spares >= 0) { EXPECT_EQ(result.spares, want.spares); }
  if (want.ready_spares >= 0) { EXPECT_EQ(result.ready_spares, want.ready_spares); }
  if (want.silent_held >= 0) { EXPECT_EQ(result.silent_pods_held, want.silent_held); }
  if (!want.events.empty() || want.message.empty()) {
    EXPECT_EQ(EventReasons(plan), want.events);
  }
  if (!want.message.empty()) {
    EXPECT_TRUE(std::any_of(plan.events.begin(), plan.events.end(), [&](const Event& e) {
      return e.message.find(want.message) != std::string::npos;
    })) << "no event says \"" << want.message << "\"";
  }
  if (!want.condition.empty()) {
    const std::string type = want.condition.substr(0, want.condition.find('='));
    EXPECT_EQ(ConditionString(result, type), want.condition);
  }
  if (want.failure_rank > -2) {
    ASSERT_TRUE(result.last_failure.has_value());
    EXPECT_EQ(result.last_failure->rank, want.failure_rank);
  }
  if (want.requeue_ms >= 0) {
    ASSERT_TRUE(plan.requeue_after.has_value());
    EXPECT_EQ(plan.requeue_after->count(), want.requeue_ms);
  }
  if (want.no_requeue) { EXPECT_FALSE(plan.requeue_after.has_value()); }
  if (want.no_status) { EXPECT_FALSE(plan.status.has_value()); }
  // Nothing is ever charged twice: restarts + recoveries stay within maxRestarts.
  EXPECT_LE(result.restarts + result.recoveries, row.job.spec.failure_policy.max_restarts);

  // Idempotency: the world after the plan (deleted pods linger, as in a grace period; force
  // deleted ones are gone) asks for nothing more, and counts nothing twice.
  // A force delete frees its name at once: the next pass only recreates those names.
  DDPJob job = row.job;
  Observed world = row.seen;
  Apply(plan, &job, &world, now);
  Plan again = PlanReconcile(job, world, now);
  Strings forced;
  for (const Delete& d : plan.deletes) {
    if (d.kind == "Pod" && d.grace_period_seconds == 0) forced.push_back(d.name);
  }
  if (!forced.empty()) {
    Strings recreated;
    for (const std::string& c : DescribeCreates(again)) recreated.push_back(c.substr(4, c.rfind(' ') - 4));
    EXPECT_EQ(recreated, forced) << again.ToString();
    EXPECT_TRUE(again.deletes.empty()) << again.ToString();
    EXPECT_EQ(EventReasons(again), Strings{"CreatingPods"}) << again.ToString();
    Apply(again, &job, &world, now);
    again = PlanReconcile(job, world, now);
  }
  EXPECT_TRUE(again.creates.empty() && again.deletes.empty() && !again.status &&
              again.events.empty() && !again.delete_job)
      << "the pass after was not a no-op: " << again.ToString();
}

INSTANTIATE_TEST_SUITE_P(Group, GroupTable, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

}  // namespace
}  // namespace ddp::plan::testing
