// PlanReconcile, one row per decision, each named after the DESIGN.md lifecycle rule it checks.
// Every row also checks idempotency: apply the plan to the world, plan again, expect no writes.
// Rows use designated initializers (C++20, see CMakeLists.txt); unnamed fields keep defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include <algorithm>

#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using api::DDPJob;
using api::RestartPolicy;
using Strings = std::vector<std::string>;

struct Expect {
  Strings creates;           // DescribeCreates, exact and in order
  Strings deletes;           // DescribeDeletes, exact and in order
  std::string phase;         // the resulting status.phase; "" = not checked
  int round = -1, replicas = -1, world_size = -1, restarts = -1, disruptions = -1;
  Strings events;            // event reasons, exact and in order
  std::string message;       // a substring of some event's message; "" = not checked
  std::string condition;     // "Type=Status/Reason" present in the result; "" = not checked
  int requeue_s = -1;        // -1: no requeue expected
  bool delete_job = false;
  bool no_status = false;    // the status must not be written at all
};

struct Row {
  std::string name;
  DDPJob job;
  Observed seen;
  TimePoint now;
  Expect want;
};

DDPJob Running3() { return InPhase(Job(3), "Running", 0, 3); }
DDPJob Ready(DDPJob j, int n) {
  j.status.ready_replicas = n;
  return j;
}
ObservedPod Reason(ObservedPod p, const std::string& reason) {
  p.reason = reason;
  return p;
}
DDPJob Nproc(DDPJob j, int n) {
  j.spec.nproc_per_node = n;
  return j;
}
DDPJob Clean(DDPJob j, api::CleanPodPolicy c) {
  j.spec.run_policy.clean_pod_policy = c;
  return j;
}
DDPJob Finished(DDPJob j, const std::string& phase) {
  j = InPhase(j, phase, 0, 3);
  j.status.completion_time = At(0);
  return j;
}
DDPJob Ttl(DDPJob j, int s) {
  j.spec.run_policy.ttl_seconds_after_finished = s;
  return j;
}
DDPJob Deadline(DDPJob j, int s) {
  j.spec.run_policy.active_deadline_seconds = s;
  return j;
}
DDPJob Suspend(DDPJob j, bool on = true) {
  j.spec.run_policy.suspend = on;
  return j;
}
DDPJob WithCondition(DDPJob j, const std::string& type, const std::string& reason) {
  j.status.conditions.push_back({type, "True", reason, "m", At(0), j.generation});
  return j;
}
// Round 3 after the 3rd failure restart at `at`: its pods wait 4 s (1 s doubled twice).
DDPJob Backoff(int restarts, TimePoint at) {
  DDPJob j = InPhase(Job(3), "Restarting", 3, 3, restarts);
  j.status.conditions.push_back({"Restarting", "True", "PodFailed", "m", at, j.generation});
  j.status.last_failure = api::LastFailure{"mingpt-worker-1", 1, 75, "Error", "", at};
  j.status.ready_replicas = 0;
  return j;
}
ObservedPod Disrupted(ObservedPod p, const std::string& reason) {
  p.disruption_condition = true;
  p.reason = reason;
  return p;
}

const Strings kDeleteAll3 = {"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2"};
const Strings kRound0 = {"Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0",
                         "Pod mingpt-worker-2 r0"};
// What cleanPodPolicy Running deletes when rank 1 failed and ranks 0 and 2 still run.
const Strings kCleanAfterRank1 = {"Pod mingpt-worker-0", "Pod mingpt-worker-2", "Service mingpt"};
Observed Failing(ObservedPod bad) { return With(World(Pods(3, 0, "Running")), bad); }

std::vector<Row> Rows() {
  const auto kExitCode = RestartPolicy::kExitCode;
  const auto kNever = RestartPolicy::kNever;
  Strings service_and_round0 = {"Service mingpt"};
  service_and_round0.insert(service_and_round0.end(), kRound0.begin(), kRound0.end());
  DDPJob deleted = Running3();
  deleted.deletion_timestamp = At(5);
  DDPJob adopted = Running3();
  ObservedPod unlabeled = Pod(0, 0, "Running");
  unlabeled.name = "mingpt-worker-x";
  unlabeled.index = -1;
  unlabeled.round = -1;
  return {
      // Rule 1: a new job gets the Service and round 0; Pending until every pod runs.
      {"rule1_new_job_creates_service_and_round0_pods", Job(3), World({}, false), At(0),
       {.creates = service_and_round0, .phase = "Pending", .round = 0, .replicas = 3,
        .world_size = 3, .events = {"JobCreated"},
        .message = "round 0 with 3 pods (world size 3); creating Service mingpt and 3 pods of 3",
        .condition = "Created=True/JobCreated"}},
      {"rule1_world_size_is_replicas_times_nproc", Nproc(Job(2), 8), World({}), At(0),
       {.creates = {"Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0"}, .replicas = 2,
        .world_size = 16, .message = "world size 16"}},
      {"rule1_pending_until_every_pod_runs", InPhase(Job(3), "Pending", 0, 3),
       World({Pod(0, 0, "Running"), Pod(1, 0, "Running"), Pod(2, 0, "Pending")}), At(10),
       {.phase = "Pending", .round = 0}},
      {"rule1_all_pods_running_makes_job_running", InPhase(Job(3), "Pending", 0, 3),
       World(Pods(3, 0, "Running")), At(10),
       {.phase = "Running", .events = {"Running"},
        .message = "round 0: all 3 pods running (world size 3)",
        .condition = "Running=True/AllPodsRunning"}},
      {"rule1_missing_pod_created_while_pending", InPhase(Job(3), "Pending", 0, 3),
       World({Pod(0, 0, "Pending"), Pod(1, 0, "Pending")}), At(10),
       {.creates = {"Pod mingpt-worker-2 r0"}, .phase = "Pending", .events = {"CreatingPods"}}},
      {"rule1_missing_service_recreated", Ready(Running3(), 3), World(Pods(3, 0, "Running"), false),
       At(10), {.creates = {"Service mingpt"}, .events = {"CreatingService"},
                .message = "creating headless Service mingpt", .no_status = true}},
      {"rule1_missing_service_and_pod_are_one_event", InPhase(Job(3), "Pending", 0, 3),
       World({Pod(0, 0, "Pending"), Pod(1, 0, "Pending")}, false), At(10),
       {.creates = {"Service mingpt", "Pod mingpt-worker-2 r0"}, .phase = "Pending",
        .events = {"CreatingPods"},
        .message = "round 0: creating Service mingpt and 1 pod of 3 (world size 3)"}},
      {"rule1_steady_running_job_writes_nothing", Ready(Running3(), 3),
       World(Pods(3, 0, "Running")), At(10), {.phase = "Running", .no_status = true}},
      {"rule1_job_being_deleted_plans_nothing", deleted, World(Pods(3, 0, "Running")), At(10),
       {.no_status = true}},
      {"rule1_invalid_spec_fails_naming_the_field", Nproc(Job(3), 0), World({}, false), At(0),
       {.phase = "Failed", .events = {"InvalidSpec"},
        .message = "spec.nprocPerNode (0) must be >= 1", .condition = "Failed=True/InvalidSpec"}},

      // Ownership: only pods whose controller ownerReference is this job's uid count.
      {"rule1_a_recreated_job_does_not_inherit_the_old_jobs_succeeded_pods",
       Job(3), World({OwnedBy(Exited(0, 0, 0), "uid-old"), OwnedBy(Exited(1, 0, 0), "uid-old"),
                      OwnedBy(Exited(2, 0, 0), "uid-old")}), At(0),
       {.creates = {}, .deletes = {}, .phase = "Pending", .round = 0}},
      {"rule1_a_name_held_by_a_foreign_pod_is_created_once_it_is_gone",
       InPhase(Job(3), "Pending", 0, 3),
       World({Pod(0, 0, "Pending"), Pod(1, 0, "Pending"), OwnedBy(Pod(2, 0, "Running"), "")}),
       At(10), {.creates = {}, .deletes = {}, .phase = "Pending"}},
      {"rule2_a_hand_labelled_failed_pod_is_neither_counted_nor_deleted", Ready(Running3(), 3),
       With(World(Pods(3, 0, "Running")), [] {
         ObservedPod p = OwnedBy(Exited(1, 0, 3), "");
         p.name = "debug-shell";
         return p;
       }()), At(10), {.deletes = {}, .phase = "Running", .no_status = true}},

      // Rule 2: failure vs disruption, the three restart policies, maxRestarts.
      {"rule2_onfailure_policy_any_exit_code_restarts", Running3(), Failing(Exited(1, 0, 1)),
       At(10),
       {.deletes = kDeleteAll3, .phase = "Restarting", .round = 1, .restarts = 1,
        .disruptions = 0, .events = {"PodFailed", "DeletingPods"},
        .message = "round 0 -> 1 (rank 1 exited 1; restart 1 of 3)",
        .condition = "Restarting=True/PodFailed", .requeue_s = 1}},
      {"rule2_exitcode_policy_retryable_75_restarts", Policy(Running3(), kExitCode, 3),
       Failing(Exited(1, 0, 75)), At(10),
       {.deletes = kDeleteAll3, .phase = "Restarting", .round = 1, .restarts = 1,
        .message = "round 0 -> 1 (rank 1 exited 75; restart 1 of 3)", .requeue_s = 1}},
      {"rule2_exitcode_policy_signal_always_restarts", Policy(Running3(), kExitCode, 3),
       Failing(Exited(2, 0, 137)), At(10),
       {.deletes = kDeleteAll3, .round = 1, .restarts = 1,
        .message = "rank 2 killed by signal 9 (exit 137)", .requeue_s = 1}},
      {"rule2_exitcode_policy_nonretryable_config_error_fails", Policy(Running3(), kExitCode, 3),
       Failing(Exited(1, 0, 2)), At(10),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-2", "Service mingpt"},
        .phase = "Failed", .round = 0, .restarts = 0, .events = {"PodFailed", "CleaningPods"},
        .message = "rank 1 exited 2: not retryable under restartPolicy ExitCode",
        .condition = "Failed=True/PodFailed"}},
      {"rule2_exitcode_policy_nonretryable_data_error_fails", Policy(Running3(), kExitCode, 3),
       Failing(Exited(0, 0, 3)), At(10),
       {.deletes = {"Pod mingpt-worker-1", "Pod mingpt-worker-2", "Service mingpt"},
        .phase = "Failed", .message = "rank 0 exited 3"}},
      // Root cause: the first to terminate, not the lowest rank; on a tie the permanent code.
      {"rule2_root_cause_is_the_first_to_finish_not_the_lowest_rank",
       Policy(Running3(), kExitCode, 3),
       With(Failing(ExitedAt(1, 0, 3, At(5))), ExitedAt(0, 0, 75, At(6))), At(10),
       {.deletes = {"Pod mingpt-worker-2", "Service mingpt"}, .phase = "Failed", .round = 0,
        .restarts = 0, .message = "rank 1 exited 3: not retryable under restartPolicy ExitCode",
        .condition = "Failed=True/PodFailed"}},
      {"rule2_root_cause_earlier_retryable_restarts_although_a_later_rank_failed_hard",
       Policy(Running3(), kExitCode, 3),
       With(Failing(ExitedAt(2, 0, 75, At(4))), ExitedAt(0, 0, 3, At(8))), At(10),
       {.deletes = kDeleteAll3, .phase = "Restarting", .round = 1, .restarts = 1,
        .message = "round 0 -> 1 (rank 2 exited 75; restart 1 of 3)", .requeue_s = 1}},
      {"rule2_root_cause_tie_in_finish_time_nonretryable_wins", Policy(Running3(), kExitCode, 3),
       With(Failing(ExitedAt(0, 0, 75, At(5))), ExitedAt(2, 0, 3, At(5))), At(10),
       {.deletes = {"Pod mingpt-worker-1", "Service mingpt"}, .phase = "Failed",
        .message = "rank 2 exited 3: not retryable"}},
      {"rule2_never_policy_fails_even_on_retryable_75", Policy(Running3(), kNever, 3),
       Failing(Exited(1, 0, 75)), At(10),
       {.deletes = kCleanAfterRank1, .phase = "Failed", .restarts = 0,
        .message = "rank 1 exited 75: not retryable under restartPolicy Never"}},
      {"rule2_restart_past_max_restarts_fails", InPhase(Job(3), "Running", 3, 3, 3),
       World({Pod(0, 3, "Running"), Exited(1, 3, 75), Pod(2, 3, "Running")}), At(10),
       {.deletes = kCleanAfterRank1, .phase = "Failed", .round = 3, .restarts = 3,
        .events = {"MaxRestartsExceeded",
        "CleaningPods"}, .message = "3 restarts reached spec.failurePolicy.maxRestarts (3)",
        .condition = "Failed=True/MaxRestartsExceeded"}},
      {"rule2_max_restarts_zero_fails_on_first_failure", Policy(Running3(), kExitCode, 0),
       Failing(Exited(1, 0, 75)), At(10),
       {.deletes = kCleanAfterRank1, .phase = "Failed", .restarts = 0}},
      {"rule2_eviction_is_a_disruption_not_a_restart", Running3(), Failing(Evicted(1, 0)), At(10),
       {.deletes = kDeleteAll3, .phase = "Restarting", .round = 1, .restarts = 0,
        .disruptions = 1, .events = {"PodDisrupted", "DeletingPods"},
        .message = "round 0 -> 1 (rank 1 disrupted: Evicted)",
        .condition = "Restarting=True/PodDisrupted"}},
      {"rule2_disruption_target_condition_is_a_disruption", Running3(),
       Failing(Disrupted(Pod(2, 0, "Running"), "PreemptionByScheduler")), At(10),
       {.deletes = kDeleteAll3, .round = 1, .restarts = 0, .disruptions = 1,
        .message = "rank 2 disrupted: PreemptionByScheduler"}},
      {"rule2_pod_deleted_by_someone_else_is_a_disruption", Running3(),
       Failing(Deleting(Pod(1, 0, "Running"))), At(10),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-2"}, .round = 1, .restarts = 0,
        .disruptions = 1, .message = "rank 1 disrupted: deleted"}},
      {"rule2_pod_vanished_from_running_round_is_a_disruption", Running3(),
       World({Pod(0, 0, "Running"), Pod(2, 0, "Running")}), At(10),
       {.creates = {"Pod mingpt-worker-1 r1"},
        .deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-2"}, .round = 1, .disruptions = 1,
        .events = {"PodDisrupted", "DeletingPods", "CreatingPods"},
        .message = "round 0 -> 1 (rank 1 disrupted: PodDeleted)"}},
      {"rule2_disruptions_are_not_limited_by_max_restarts", InPhase(Job(3), "Running", 3, 3, 3),
       World({Pod(0, 3, "Running"), Evicted(1, 3), Pod(2, 3, "Running")}), At(10),
       {.deletes = kDeleteAll3, .phase = "Restarting", .round = 4, .restarts = 3,
        .disruptions = 1}},
      {"rule2_disruption_outranks_failure_in_the_same_pass", Running3(),
       With(Failing(Exited(0, 0, 75)), Evicted(1, 0)), At(10),
       {.deletes = kDeleteAll3, .round = 1, .restarts = 0, .disruptions = 1,
        .message = "rank 1 disrupted: Evicted"}},
      {"rule2_failed_pod_without_exit_code_is_a_disruption", Running3(),
       Failing(Pod(2, 0, "Failed")), At(10),
       {.deletes = kDeleteAll3, .round = 1, .restarts = 0, .disruptions = 1,
        .message = "(rank 2 disrupted)"}},
      {"rule2_oomkilled_exit_137_is_a_retryable_failure", Policy(Running3(), kExitCode, 3),
       Failing(Reason(Exited(1, 0, 137), "OOMKilled")), At(10),
       {.deletes = kDeleteAll3, .round = 1, .restarts = 1, .disruptions = 0,
        .message = "rank 1 killed by signal 9 (exit 137), OOMKilled", .requeue_s = 1}},

      // Rule 3: a restart is a new round; old pods go first, names come back after.
      {"rule3_old_round_pods_deleted_before_names_reused", InPhase(Job(3), "Restarting", 1, 3, 1),
       World(Pods(3, 0, "Running")), At(10),
       {.deletes = kDeleteAll3, .phase = "Restarting", .round = 1, .events = {"DeletingPods"},
        .message = "round 1: deleting 3 pods of other rounds"}},
      {"rule3_name_recreated_once_its_old_pod_is_gone", InPhase(Job(3), "Restarting", 1, 3, 1),
       World({Deleting(Pod(1, 0, "Running"))}), At(10),
       {.creates = {"Pod mingpt-worker-0 r1", "Pod mingpt-worker-2 r1"}, .phase = "Restarting",
        .events = {"CreatingPods"},
        .message = "round 1: creating 2 pods of 3 (world size 3); 1 wait for their old pod to go"}},
      {"rule3_new_round_running_clears_restarting",
       WithCondition(InPhase(Job(3), "Restarting", 1, 3, 1), "Restarting", "PodFailed"),
       World(Pods(3, 1, "Running")), At(10),
       {.phase = "Running", .round = 1, .events = {"Running"},
        .condition = "Restarting=False/AllPodsRunning"}},
      {"rule3_pods_of_newer_round_kept_after_a_lost_status_write", Ready(adopted, 3),
       World(Pods(3, 1, "Running")), At(10),
       {.round = 1, .restarts = 0, .events = {"RoundAdopted"},
        .message = "round 0 -> 1 (found pods of round 1"}},
      {"rule3_pod_with_index_outside_the_round_deleted", Ready(Running3(), 3),
       With(World(Pods(3, 0, "Running")), Pod(3, 0, "Running")), At(10),
       {.deletes = {"Pod mingpt-worker-3"}, .round = 0, .events = {"DeletingPods"}}},
      {"rule3_pod_without_round_labels_deleted", Ready(Running3(), 3),
       With(World(Pods(3, 0, "Running")), unlabeled), At(10),
       {.deletes = {"Pod mingpt-worker-x"}, .events = {"DeletingPods"}}},

      // Rule 4: resize within elastic bounds, shrink on pending timeout.
      {"rule4_scale_up_is_a_new_round_not_a_failure", Scaled(Running3(), 5),
       World(Pods(3, 0, "Running")), At(10),
       {.creates = {"Pod mingpt-worker-3 r1", "Pod mingpt-worker-4 r1"}, .deletes = kDeleteAll3,
        .phase = "Scaling", .round = 1, .replicas = 5, .world_size = 5, .restarts = 0,
        .events = {"Resized", "DeletingPods", "CreatingPods"},
        .message = "round 0 -> 1 (resize 3 -> 5 pods)", .condition = "Restarting=True/Resized"}},
      {"rule4_scale_down_is_a_new_round", Scaled(Running3(), 2), World(Pods(3, 0, "Running")),
       At(10), {.deletes = kDeleteAll3, .phase = "Scaling", .round = 1, .replicas = 2,
                .world_size = 2, .message = "resize 3 -> 2 pods"}},
      {"rule4_scale_clamped_into_elastic_bounds", Scaled(Elastic(Running3(), 2, 4, 120), 6),
       World(Pods(3, 0, "Running")), At(10),
       {.creates = {"Pod mingpt-worker-3 r1"}, .deletes = kDeleteAll3, .round = 1, .replicas = 4,
        .message = "resize 3 -> 4 pods"}},
      {"rule4_new_generation_with_same_size_keeps_the_round", Scaled(Ready(Running3(), 3), 3),
       World(Pods(3, 0, "Running")), At(10), {.phase = "Running", .round = 0, .events = {}}},
      {"rule4_resize_during_a_restart_uses_the_new_size", Scaled(Running3(), 4),
       Failing(Exited(1, 0, 75)), At(10),
       {.deletes = kDeleteAll3, .round = 1, .replicas = 4, .restarts = 1, .requeue_s = 1}},
      {"rule4_pending_timeout_shrinks_to_the_pods_that_run",
       Elastic(InPhase(Job(4), "Pending", 0, 4), 2, 4, 120),
       World({Pod(0, 0, "Running"), Pod(1, 0, "Running"), Pod(2, 0, "Running"),
              Unschedulable(3, 0, At(0))}), At(130),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2",
                    "Pod mingpt-worker-3"},
        .phase = "Scaling", .round = 1, .replicas = 3, .restarts = 0,
        .events = {"PendingTimeout", "DeletingPods"},
        .message = "round 0 -> 1 (shrink 4 -> 3 pods: unschedulable for 120s)"}},
      {"rule4_pending_timeout_never_shrinks_below_min",
       Elastic(InPhase(Job(4), "Pending", 0, 4), 4, 4, 120),
       World({Pod(0, 0, "Running"), Pod(1, 0, "Running"), Pod(2, 0, "Running"),
              Unschedulable(3, 0, At(0))}), At(500), {.phase = "Pending", .round = 0, .replicas = 4}},
      {"rule4_pending_timeout_requeues_before_it_expires",
       Elastic(InPhase(Job(4), "Pending", 0, 4), 2, 4, 120),
       World({Pod(0, 0, "Running"), Pod(1, 0, "Running"), Pod(2, 0, "Running"),
              Unschedulable(3, 0, At(0))}), At(100), {.round = 0, .requeue_s = 20}},
      {"rule4_without_elastic_never_shrinks", InPhase(Job(4), "Pending", 0, 4),
       World({Pod(0, 0, "Running"), Pod(1, 0, "Running"), Pod(2, 0, "Running"),
              Unschedulable(3, 0, At(0))}), At(5000), {.round = 0, .replicas = 4}},
      {"rule4_shrunk_round_not_regrown_without_a_spec_change",
       Ready(Elastic(InPhase(Job(4), "Running", 1, 3), 2, 4, 120), 3),
       World(Pods(3, 1, "Running")), At(300), {.round = 1, .replicas = 3, .no_status = true}},

      // Rule 5: success, cleanPodPolicy, ttlSecondsAfterFinished.
      {"rule5_all_pods_exit_zero_job_succeeds", Running3(),
       World({Exited(0, 0, 0), Exited(1, 0, 0), Exited(2, 0, 0)}), At(10),
       {.deletes = {"Service mingpt"}, .phase = "Succeeded", .events = {"AllPodsSucceeded"},
        .message = "round 0: all 3 pods exited 0",
        .condition = "Succeeded=True/AllPodsSucceeded"}},
      {"rule5_some_pods_done_others_running_waits", Ready(Running3(), 1),
       World({Exited(0, 0, 0), Exited(1, 0, 0), Pod(2, 0, "Running")}), At(10),
       {.phase = "Running", .events = {}, .no_status = true}},
      {"rule5_clean_pod_policy_all_deletes_every_pod",
       Clean(Finished(Job(3), "Succeeded"), api::CleanPodPolicy::kAll),
       World({Exited(0, 0, 0), Exited(1, 0, 0), Exited(2, 0, 0)}), At(10),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2",
                    "Service mingpt"},
        .phase = "Succeeded", .events = {"CleaningPods"}, .message = "cleanPodPolicy All"}},
      {"rule5_clean_pod_policy_none_keeps_everything",
       Clean(Finished(Job(3), "Failed"), api::CleanPodPolicy::kNone),
       World(Pods(3, 0, "Running")), At(10), {.phase = "Failed", .no_status = true}},
      {"rule5_clean_pod_policy_running_deletes_only_active_pods", Finished(Job(3), "Failed"),
       World({Pod(0, 0, "Running"), Exited(1, 0, 2), Pod(2, 0, "Pending")}), At(10),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-2", "Service mingpt"},
        .events = {"CleaningPods"}, .message = "deleting 2 pods (cleanPodPolicy Running)"}},
      {"rule5_ttl_after_finished_deletes_the_job", Ttl(Finished(Job(3), "Succeeded"), 60),
       World({}, false), At(61),
       {.events = {"TTLExpired"}, .delete_job = true, .no_status = true}},
      {"rule5_ttl_not_yet_expired_requeues", Ttl(Finished(Job(3), "Succeeded"), 60),
       World({}, false), At(30), {.requeue_s = 30, .no_status = true}},

      // Rule 6: timers fire by requeueing: activeDeadlineSeconds.
      {"rule6_active_deadline_exceeded_fails", Deadline(Running3(), 100),
       World(Pods(3, 0, "Running")), At(100),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2",
                    "Service mingpt"},
        .phase = "Failed", .events = {"DeadlineExceeded", "CleaningPods"},
        .message = "activeDeadlineSeconds (100s)", .condition = "Failed=True/DeadlineExceeded"}},
      {"rule6_active_deadline_requeues_at_the_deadline", Deadline(Ready(Running3(), 3), 100),
       World(Pods(3, 0, "Running")), At(40), {.requeue_s = 60, .no_status = true}},
      {"rule6_earliest_timer_wins",
       Deadline(Elastic(InPhase(Job(4), "Pending", 0, 4), 2, 4, 120), 100),
       World({Pod(0, 0, "Running"), Pod(1, 0, "Running"), Pod(2, 0, "Running"),
              Unschedulable(3, 0, At(0))}), At(50), {.requeue_s = 50}},
      {"rule6_restart_backoff_holds_new_round_pods", Backoff(3, At(10)), World({}), At(12),
       {.phase = "Restarting", .round = 3, .requeue_s = 2, .no_status = true}},
      {"rule6_restart_backoff_over_creates_the_round", Backoff(3, At(10)), World({}), At(14),
       {.creates = {"Pod mingpt-worker-0 r3", "Pod mingpt-worker-1 r3", "Pod mingpt-worker-2 r3"},
        .round = 3, .events = {"CreatingPods"}}},
      {"rule6_disruption_restarts_without_backoff", Running3(),
       World({Pod(0, 0, "Running"), Pod(2, 0, "Running")}), At(10),
       {.creates = {"Pod mingpt-worker-1 r1"},
        .deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-2"}, .round = 1}},
      {"rule6_ttl_timer_armed_when_the_job_ends", Ttl(Running3(), 600),
       World({Exited(0, 0, 0), Exited(1, 0, 0), Exited(2, 0, 0)}), At(10),
       {.deletes = {"Service mingpt"}, .phase = "Succeeded", .requeue_s = 600}},

      // spec.runPolicy.suspend: pods go, the round resumes as a new one.
      {"suspend_deletes_every_pod", Suspend(InPhase(Job(3), "Running", 2, 3)),
       World(Pods(3, 2, "Running")), At(10),
       {.deletes = kDeleteAll3, .phase = "Suspended", .round = 2, .events = {"Suspended"},
        .condition = "Suspended=True/Suspended"}},
      {"suspend_a_new_job_creates_nothing", Suspend(Job(3)), World({}, false), At(0),
       {.phase = "Suspended", .events = {"Suspended"}}},
      {"suspend_resume_starts_a_new_round", InPhase(Job(3), "Suspended", 2, 3), World({}), At(500),
       {.creates = {"Pod mingpt-worker-0 r3", "Pod mingpt-worker-1 r3", "Pod mingpt-worker-2 r3"},
        .phase = "Pending", .round = 3, .restarts = 0, .events = {"Resumed", "CreatingPods"},
        .message = "round 2 -> 3 (resumed)", .condition = "Suspended=False/Resumed"}},

      // Rule 7: every decision is an event (also checked on every row: a round change without
      // an event saying so fails the row), and no decision means no event.
      {"rule7_restart_event_reads_like_the_design_example", InPhase(Job(3), "Running", 2, 3),
       World({Pod(0, 2, "Running"), Exited(1, 2, 75), Pod(2, 2, "Running")}), At(10),
       {.deletes = kDeleteAll3, .round = 3, .restarts = 1, .events = {"PodFailed", "DeletingPods"},
        .message = "round 2 -> 3 (rank 1 exited 75", .requeue_s = 1}},
      {"rule7_no_decision_no_event", Ready(InPhase(Job(3), "Running", 2, 3), 3),
       World(Pods(3, 2, "Running")), At(10), {.round = 2, .events = {}, .no_status = true}},
  };
}

// gtest prints a failing row by its name instead of its bytes.
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class PlannerTable : public ::testing::TestWithParam<Row> {};

std::string ConditionString(const api::DDPJobStatus& s, const std::string& type) {
  const api::Condition* c = s.FindCondition(type);
  return c ? type + "=" + c->status + "/" + c->reason : type + " absent";
}

TEST_P(PlannerTable, Decides) {
  const Row& row = GetParam();
  const Plan plan = PlanReconcile(row.job, row.seen, row.now);
  SCOPED_TRACE(plan.ToString());
  const Expect& want = row.want;
  const api::DDPJobStatus result = plan.status ? *plan.status : row.job.status;

  EXPECT_EQ(DescribeCreates(plan), want.creates);
  EXPECT_EQ(DescribeDeletes(plan), want.deletes);
  if (!want.phase.empty()) { EXPECT_EQ(result.phase, want.phase); }
  if (want.round >= 0) { EXPECT_EQ(result.round, want.round); }
  if (want.replicas >= 0) { EXPECT_EQ(result.replicas, want.replicas); }
  if (want.world_size >= 0) { EXPECT_EQ(result.world_size, want.world_size); }
  if (want.restarts >= 0) { EXPECT_EQ(result.restarts, want.restarts); }
  if (want.disruptions >= 0) { EXPECT_EQ(result.disruptions, want.disruptions); }
  if (!want.events.empty() || want.no_status) { EXPECT_EQ(EventReasons(plan), want.events); }
  if (!want.message.empty()) {
    EXPECT_TRUE(std::any_of(plan.events.begin(), plan.events.end(), [&](const Event& e) {
      return e.message.find(want.message) != std::string::npos;
    })) << "no event says \"" << want.message << "\"";
  }
  if (!want.condition.empty()) {
    const std::string type = want.condition.substr(0, want.condition.find('='));
    EXPECT_EQ(ConditionString(result, type), want.condition);
  }
  if (want.requeue_s < 0) {
    EXPECT_FALSE(plan.requeue_after.has_value());
  } else {
    ASSERT_TRUE(plan.requeue_after.has_value());
    EXPECT_EQ(*plan.requeue_after, std::chrono::seconds(want.requeue_s));
  }
  EXPECT_EQ(plan.delete_job, want.delete_job);
  if (want.no_status) { EXPECT_FALSE(plan.status.has_value()); }

  // Rule 7: a round change is a decision, and every decision is an event.
  if (result.round != row.job.status.round && !row.job.status.phase.empty()) {
    const std::string change = "round " + std::to_string(row.job.status.round) + " -> " +
                               std::to_string(result.round);
    EXPECT_TRUE(std::any_of(plan.events.begin(), plan.events.end(), [&](const Event& e) {
      return e.message.find(change) != std::string::npos;
    })) << "no event for " << change;
  }
  // Every status time has whole seconds, so a write read back compares equal.
  if (plan.status && plan.status->completion_time) {
    EXPECT_EQ(*plan.status->completion_time, api::TruncateToSeconds(row.now));
  }

  // Idempotency: the world after the plan asks for nothing more at the same instant.
  DDPJob job = row.job;
  Observed world = row.seen;
  Apply(plan, &job, &world, row.now);
  const Plan again = PlanReconcile(job, world, row.now);
  EXPECT_TRUE(again.creates.empty() && again.deletes.empty() && !again.status &&
              again.events.empty() && !again.delete_job)
      << "second pass was not a no-op: " << again.ToString();
}

INSTANTIATE_TEST_SUITE_P(Rules, PlannerTable, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

TEST(PlannerTableSize, HasAtLeastFortyRowsCoveringEveryRule) {
  const auto rows = Rows();
  EXPECT_GE(rows.size(), 40u);
  for (const char* rule : {"rule1_", "rule2_", "rule3_", "rule4_", "rule5_", "rule6_", "rule7_"}) {
    EXPECT_TRUE(std::any_of(rows.begin(), rows.end(),
                            [&](const Row& r) { return r.name.rfind(rule, 0) == 0; }))
        << rule;
  }
}

}  // namespace
}  // namespace ddp::plan::testing
