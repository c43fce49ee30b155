// PlanReconcile with spec.failurePolicy.recovery InPlace: a failed or lost worker pod, pod 0
// included (the rendezvous pod hosts the store), is replaced alone in the same round;
// non-retryable failures and an exhausted budget take the round model's paths. One row per
// decision, each also checked for idempotency (apply the plan, plan again: no writes), then
// multi-pass scenarios that check the survivors' UIDs. The rendezvous pod, spares and the
// group's report have their own table (planner_group_test.cc).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using api::DDPJob;
using Strings = std::vector<std::string>;

struct Expect {
  Strings creates;  // DescribeCreates, exact and in order
  Strings deletes;  // DescribeDeletes, exact and in order
  std::string phase;
  int round = -1, restarts = -1, disruptions = -1, recoveries = -1;
  Strings events;        // event reasons, exact and in order
  std::string message;   // a substring of some event's message; "" = not checked
  std::string condition; // "Type=Status/Reason"; "" = not checked
  std::string failure_uid;  // status.lastFailure.podUID; "" = not checked
};

struct Row {
  std::string name;
  DDPJob job;
  Observed seen;
  Expect want;
};

DDPJob Running3() { return InPlace(InPhase(Job(3), "Running", 2, 3)); }
DDPJob Counts(DDPJob j, int restarts, int recoveries) {
  j.status.restarts = restarts;
  j.status.recoveries = recoveries;
  return j;
}
// The status the planner leaves while it replaces pod `index` (uid `uid`) of round 2.
DDPJob Replacing(int index, const std::string& uid) {
  DDPJob j = Counts(Running3(), 0, 1);
  j.status.phase = "Restarting";
  j.status.conditions.push_back({"Restarting", "True", "PodReplaced", "m", At(0), j.generation});
  j.status.last_failure =
      api::LastFailure{"mingpt-worker-" + std::to_string(index), index, 137, "Error", "", At(0),
                       uid};
  return j;
}
// Round 2's pods as listed: the three worker pods (or what is left of them) and the
// rendezvous pod, running.
Observed Round2(std::vector<ObservedPod> workers) {
  workers.push_back(Rendezvous(2, "Running"));
  return World(std::move(workers));
}
Observed Failing(ObservedPod bad) { return With(GroupWorld(3, 2, 0, "Running"), bad); }

std::vector<Row> Rows() {
  return {
      {"pod1_failure_replaces_pod1_alone_in_the_same_round", Running3(),
       Failing(Exited(1, 2, 137)),
       {.deletes = {"Pod mingpt-worker-1"}, .phase = "Restarting", .round = 2, .restarts = 0,
        .disruptions = 0, .recoveries = 1, .events = {"PodReplaced"},
        .message = "round 2: replacing pod mingpt-worker-1 (rank 1 killed by signal 9 (exit 137);"
                   " recovery 1 of 3)",
        .condition = "Restarting=True/PodReplaced", .failure_uid = "mingpt-worker-1-r2"}},
      {"recoveries_and_restarts_share_the_budget", Counts(Running3(), 1, 0),
       Failing(Exited(2, 2, 75)),
       {.deletes = {"Pod mingpt-worker-2"}, .restarts = 1, .recoveries = 1,
        .message = "recovery 2 of 3"}},
      // Pod 0 is no longer special: the store lives in the rendezvous pod.
      {"pod0_failure_is_replaced_alone_like_any_other", Running3(), Failing(Exited(0, 2, 75)),
       {.deletes = {"Pod mingpt-worker-0"}, .phase = "Restarting", .round = 2, .restarts = 0,
        .disruptions = 0, .recoveries = 1, .events = {"PodReplaced"},
        .message = "round 2: replacing pod mingpt-worker-0 (rank 0 exited 75; recovery 1 of 3)",
        .condition = "Restarting=True/PodReplaced", .failure_uid = "mingpt-worker-0-r2"}},
      {"budget_exhausted_fails_the_job", Counts(Running3(), 1, 2), Failing(Exited(1, 2, 75)),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-2", "Pod mingpt-rendezvous",
                    "Service mingpt"},
        .phase = "Failed", .restarts = 1, .recoveries = 2,
        .events = {"MaxRestartsExceeded", "CleaningPods"},
        .message = "rank 1 exited 75: 1 restarts and 2 recoveries reached "
                   "spec.failurePolicy.maxRestarts (3)",
        .condition = "Failed=True/MaxRestartsExceeded"}},
      {"budget_counts_recoveries_in_restart_mode_too",
       [] {
         DDPJob j = Counts(Running3(), 0, 3);
         j.spec.failure_policy.recovery = api::Recovery::kRestart;
         return j;
       }(),
       With(World(Pods(3, 2, "Running")), Exited(0, 2, 75)),
       {.deletes = {"Pod mingpt-worker-1", "Pod mingpt-worker-2", "Service mingpt"},
        .phase = "Failed", .restarts = 0, .recoveries = 3,
        .message = "0 restarts and 3 recoveries reached"}},
      {"non_retryable_failure_fails_the_job",
       Policy(Running3(), api::RestartPolicy::kExitCode, 3), Failing(Exited(1, 2, 2)),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-2", "Pod mingpt-rendezvous",
                    "Service mingpt"},
        .phase = "Failed", .recoveries = 0,
        .message = "rank 1 exited 2: not retryable under restartPolicy ExitCode"}},
      {"eviction_of_pod2_replaces_pod2_as_a_disruption", Running3(), Failing(Evicted(2, 2)),
       {.deletes = {"Pod mingpt-worker-2"}, .phase = "Restarting", .round = 2, .restarts = 0,
        .disruptions = 1, .recoveries = 0, .events = {"PodReplaced"},
        .message = "round 2: replacing pod mingpt-worker-2 (rank 2 disrupted: Evicted; "
                   "disruption 1, not limited)",
        .condition = "Restarting=True/PodReplaced"}},
      {"pod2_deleted_by_someone_else_is_not_deleted_again", Running3(),
       Failing(Deleting(Pod(2, 2, "Running"))),
       {.phase = "Restarting", .round = 2, .disruptions = 1, .recoveries = 0,
        .events = {"PodReplaced"}, .message = "rank 2 disrupted: deleted"}},
      {"pod2_vanished_is_recreated_at_once", Running3(),
       Round2({Pod(0, 2, "Running"), Pod(1, 2, "Running")}),
       {.creates = {"Pod mingpt-worker-2 r2"}, .phase = "Restarting", .round = 2,
        .disruptions = 1, .events = {"PodReplaced", "CreatingPods"},
        .message = "round 2: creating 1 pod of 3"}},
      {"pod0_eviction_is_replaced_alone_like_any_other", Running3(), Failing(Evicted(0, 2)),
       {.deletes = {"Pod mingpt-worker-0"}, .phase = "Restarting", .round = 2, .restarts = 0,
        .disruptions = 1, .recoveries = 0, .events = {"PodReplaced"},
        .message = "round 2: replacing pod mingpt-worker-0 (rank 0 disrupted: Evicted; "
                   "disruption 1, not limited)"}},
      {"counted_pod_not_yet_going_is_deleted_again_not_counted",
       Replacing(1, "mingpt-worker-1-r2"), Failing(Exited(1, 2, 137)),
       {.deletes = {"Pod mingpt-worker-1"}, .phase = "Restarting", .recoveries = 1,
        .events = {}}},
      {"lost_delete_and_a_new_failure_in_one_pass_count_only_the_new_one",
       Replacing(2, "mingpt-worker-2-r2"),
       Round2({Pod(0, 2, "Running"), Exited(1, 2, 75), Exited(2, 2, 137)}),
       {.deletes = {"Pod mingpt-worker-2", "Pod mingpt-worker-1"}, .recoveries = 2,
        .events = {"PodReplaced"}, .message = "replacing pod mingpt-worker-1 (rank 1 exited 75",
        .failure_uid = "mingpt-worker-1-r2"}},
      {"old_pod_still_going_waits_for_its_name", Replacing(1, "mingpt-worker-1-r2"),
       Failing(Deleting(Exited(1, 2, 137))),
       {.phase = "Restarting", .round = 2, .recoveries = 1, .events = {}}},
      {"name_recreated_in_the_same_round_once_the_old_pod_is_gone",
       Replacing(1, "mingpt-worker-1-r2"), Round2({Pod(0, 2, "Running"), Pod(2, 2, "Running")}),
       {.creates = {"Pod mingpt-worker-1 r2"}, .phase = "Restarting", .round = 2,
        .recoveries = 1, .events = {"CreatingPods"}, .message = "round 2: creating 1 pod of 3"}},
      {"replacement_running_makes_the_job_running_again", Replacing(1, "mingpt-worker-1-old"),
       GroupWorld(3, 2, 0, "Running"),
       {.phase = "Running", .round = 2, .recoveries = 1, .events = {"Running"},
        .condition = "Restarting=False/AllPodsRunning"}},
      {"second_failure_during_a_replacement_is_counted", Replacing(1, "mingpt-worker-1-r2"),
       Round2({Pod(0, 2, "Running"), Exited(2, 2, 75)}),
       {.creates = {"Pod mingpt-worker-1 r2"}, .deletes = {"Pod mingpt-worker-2"},
        .recoveries = 2, .events = {"PodReplaced", "CreatingPods"},
        .message = "replacing pod mingpt-worker-2 (rank 2 exited 75; recovery 2 of 3)",
        .failure_uid = "mingpt-worker-2-r2"}},
      {"replacement_that_fails_again_is_a_new_failure", Replacing(1, "mingpt-worker-1-r2"),
       [] {
         ObservedPod again = Exited(1, 2, 75);
         again.uid = "mingpt-worker-1-new";
         return Failing(again);
       }(),
       {.deletes = {"Pod mingpt-worker-1"}, .recoveries = 2, .events = {"PodReplaced"},
        .failure_uid = "mingpt-worker-1-new"}},
      // A resize is a new round for every pod, the rendezvous pod included (a new store); each
      // name comes back once its old pod is gone, so only the new name is created now.
      {"resize_during_inplace_is_still_a_new_round", Scaled(Running3(), 4),
       GroupWorld(3, 2, 0, "Running"),
       {.creates = {"Pod mingpt-worker-3 r3"},
        .deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2",
                    "Pod mingpt-rendezvous"},
        .phase = "Scaling", .round = 3, .recoveries = 0,
        .events = {"Resized", "DeletingPods", "CreatingPods"},
        .message = "round 3: creating 1 pod of 4 (world size 4); 4 wait for their old pod to go"}},
  };
}

void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class InPlaceTable : public ::testing::TestWithParam<Row> {};

std::string ConditionString(const api::DDPJobStatus& s, const std::string& type) {
  const api::Condition* c = s.FindCondition(type);
  return c ? type + "=" + c->status + "/" + c->reason : type + " absent";
}

TEST_P(InPlaceTable, Decides) {
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
  if (!want.failure_uid.empty()) {
    ASSERT_TRUE(result.last_failure.has_value());
    EXPECT_EQ(result.last_failure->pod_uid, want.failure_uid);
  }

  // Idempotency: the world after the plan (deleted pods linger, as in a grace period) asks for
  // nothing more, and in particular counts nothing twice.
  DDPJob job = row.job;
  Observed world = row.seen;
  Apply(plan, &job, &world, now);
  const Plan again = PlanReconcile(job, world, now);
  EXPECT_TRUE(again.creates.empty() && again.deletes.empty() && !again.status &&
              again.events.empty() && !again.delete_job)
      << "second pass was not a no-op: " << again.ToString();
}

INSTANTIATE_TEST_SUITE_P(InPlace, InPlaceTable, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// Multi-pass: plans and applies until nothing is written; deleted pods vanish between passes.
void Settle(DDPJob* job, Observed* world, TimePoint now) {
  for (int pass = 0; pass < 20; ++pass) {
    const Plan plan = PlanReconcile(*job, *world, now);
    if (plan.creates.empty() && plan.deletes.empty() && !plan.status) return;
    Apply(plan, job, world, now);
    ReapDeleting(world);
  }
  ADD_FAILURE() << "planner did not settle in 20 passes";
}

std::map<std::string, std::string> UidsByName(const Observed& w) {
  std::map<std::string, std::string> out;
  for (const auto& p : w.pods) out[p.name] = p.uid;
  return out;
}

void SetPhase(Observed* w, const std::string& name, const std::string& phase,
              std::optional<int> code) {
  for (auto& p : w->pods) {
    if (p.name != name) continue;
    p.phase = phase;
    p.ready = phase == "Running";
    p.exit_code = code;
  }
}

std::string EnvOf(const nlohmann::json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == name) return e["value"];
  }
  return "<unset>";
}

// A deterministic crash of rank 1: each failure is healed alone until the budget is gone, and
// pods 0 and 2 keep their UIDs throughout; the round never changes.
TEST(InPlaceScenario, RepeatedFailuresOfRank1HealAloneUntilTheBudgetEnds) {
  DDPJob job = Running3();
  job.status.ready_replicas = 3;
  Observed world = GroupWorld(3, 2, 0, "Running");
  const auto before = UidsByName(world);
  for (int k = 1; k <= 3; ++k) {
    SetPhase(&world, "mingpt-worker-1", "Failed", 137);
    const Plan failed = PlanReconcile(job, world, At(10 * k));
    ASSERT_TRUE(failed.status.has_value());
    EXPECT_EQ(failed.status->recoveries, k);
    Apply(failed, &job, &world, At(10 * k));
    ReapDeleting(&world);
    // The replacement is created under the new status: the budget left shrinks by one.
    const Plan recreate = PlanReconcile(job, world, At(10 * k + 1));
    ASSERT_EQ(recreate.creates.size(), 1u) << recreate.ToString();
    EXPECT_EQ(EnvOf(recreate.creates[0], "DDP_MAX_RECOVERIES"), std::to_string(3 - k));
    EXPECT_EQ(EnvOf(recreate.creates[0], "DDP_RECOVERY"), "InPlace");
    Apply(recreate, &job, &world, At(10 * k + 1));
    for (auto& p : world.pods) {
      if (p.name == "mingpt-worker-1") p.uid = "mingpt-worker-1-incarnation-" + std::to_string(k);
    }
    SetPhase(&world, "mingpt-worker-1", "Running", std::nullopt);
    Settle(&job, &world, At(10 * k + 2));
    EXPECT_EQ(job.status.phase, "Running");
    EXPECT_EQ(job.status.round, 2);
    const auto now = UidsByName(world);
    EXPECT_EQ(now.at("mingpt-worker-0"), before.at("mingpt-worker-0"));
    EXPECT_EQ(now.at("mingpt-worker-2"), before.at("mingpt-worker-2"));
    EXPECT_NE(now.at("mingpt-worker-1"), before.at("mingpt-worker-1"));
    EXPECT_EQ(now.at("mingpt-rendezvous"), before.at("mingpt-rendezvous"));
  }
  SetPhase(&world, "mingpt-worker-1", "Failed", 137);
  Settle(&job, &world, At(100));
  EXPECT_EQ(job.status.phase, "Failed");
  EXPECT_EQ(job.status.recoveries, 3);
  EXPECT_EQ(job.status.restarts, 0);
}

// Two pods of one node lost at once: both are replaced, and each counted once.
TEST(InPlaceScenario, TwoPodsLostTogetherAreBothReplacedAndCountedOnce) {
  DDPJob job = InPlace(InPhase(Job(4), "Running", 0, 4));
  Observed world = GroupWorld(4, 0, 0, "Running");
  const auto before = UidsByName(world);
  for (auto& p : world.pods) {  // the taint manager
    p.deleting = p.role == group::kRoleWorker && (p.index == 1 || p.index == 3);
  }
  Settle(&job, &world, At(10));
  EXPECT_EQ(job.status.disruptions, 2);
  EXPECT_EQ(job.status.recoveries, 0);
  EXPECT_EQ(job.status.round, 0);
  ASSERT_EQ(world.pods.size(), 5u);
  const auto now = UidsByName(world);
  EXPECT_EQ(now.at("mingpt-rendezvous"), before.at("mingpt-rendezvous"));
  EXPECT_EQ(now.at("mingpt-worker-0"), before.at("mingpt-worker-0"));
  EXPECT_EQ(now.at("mingpt-worker-2"), before.at("mingpt-worker-2"));
  EXPECT_EQ(now.at("mingpt-worker-1"), "mingpt-worker-1-new");
  EXPECT_EQ(now.at("mingpt-worker-3"), "mingpt-worker-3-new");
}

}  // namespace
}  // namespace ddp::plan::testing
