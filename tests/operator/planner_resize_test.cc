// PlanReconcile for elastic in place (recovery InPlace with spec.elastic; operator/plan/
// resize.h): a change of spec.replicas keeps the round and its pods (the pods past the new size
// are deleted, the missing ones created) and patches the rendezvous pod's group-size annotation;
// a pod unschedulable past pendingTimeoutSeconds shrinks the group, not the round, and stays
// Pending; once it runs the group grows back. One row per decision, each also checked for
// idempotency (apply the plan, plan again: no writes, no events).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/group_contract.h"
#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using api::DDPJob;
using Strings = std::vector<std::string>;

struct Expect {
  Strings creates, deletes;
  int round = -1, replicas = -1, world_size = -1;
  int group_size = -1;         // the annotation patched; -1: no patch
  Strings events;              // exact, in order
  std::string below;           // "Status/Reason" of BelowSize; "" = not checked
  std::string phase;           // "" = not checked
};

struct Row {
  std::string name;
  DDPJob job;
  Observed seen;
  TimePoint now;
  Expect want;
};

// An elastic InPlace job of `size` pods in [1, 4], running in round 0 (timeout 60 s).
DDPJob Running(int size) {
  return Elastic(InPlace(InPhase(Job(size), "Running", 0, size)), 1, 4, 60);
}
// Round 0's pods (`pods` of them) and its rendezvous pod, whose annotation says `group`.
Observed Round0(int pods, int group, std::vector<ObservedPod> changed = {}) {
  Observed w = GroupWorld(pods, 0, 0, "Running");
  for (auto& p : w.pods) {
    if (p.role == group::kRoleRendezvous) p.group_size = group;
  }
  for (const ObservedPod& p : changed) w = With(w, p);
  return w;
}
Observed Reporting(Observed w, int world) {
  std::map<std::string, int> members;
  for (int n = 0; n < world; ++n) members["mingpt-worker-" + std::to_string(n)] = n;
  w.group = Report(0, members);
  w.group->report.world_size = world;
  return w;
}

// The group went on at 3 after pod 1 was lost with no spare: pod 3 holds node rank 1
// (worker/group/authority.h rule 10) and the page says one node rank is given up.
Observed ShrunkOnLoss(Observed w) {
  w.group = Report(0, {{"mingpt-worker-0", 0}, {"mingpt-worker-3", 1}, {"mingpt-worker-2", 2}});
  w.group->report.world_size = 3;
  w.group->report.shrunk_nodes = 1;
  return w;
}

// The group shrank 3 -> 2 on pod 1's loss with no spare (pod 2 moved to node rank 1) and trains
// on; the replacement of pod 1 was created under its name and has not registered yet.
Observed ShrunkTo2(Observed w) {
  w.group = Report(0, {{"mingpt-worker-0", 0}, {"mingpt-worker-2", 1}});
  w.group->report.world_size = 2;
  w.group->report.shrunk_nodes = 1;
  return w;
}
// Pod `index` of round 0 trained to the last step: exit 0, `ddp: Finished`.
ObservedPod FinishedPod(int index) {
  ObservedPod p = Exited(index, 0, 0);
  p.message = group::FormatFinished({1600, 1});
  return p;
}

std::vector<Row> Rows() {
  return {
      {"scale_down_deletes_the_highest_pod_and_resizes_the_group_in_the_same_round",
       Scaled(Running(4), 3), Round0(4, 4), At(10),
       {.deletes = {"Pod mingpt-worker-3"}, .round = 0, .replicas = 3, .group_size = 3,
        .events = {"ResizedInPlace", "DeletingPods", "GroupResized"}}},
      {"scale_down_by_two", Scaled(Running(4), 2), Round0(4, 4), At(10),
       {.deletes = {"Pod mingpt-worker-2", "Pod mingpt-worker-3"}, .round = 0, .replicas = 2,
        .group_size = 2, .events = {"ResizedInPlace", "DeletingPods", "GroupResized"}}},
      {"scale_up_creates_the_new_pods_in_the_same_round", Scaled(Running(2), 4), Round0(2, 2),
       At(10),
       {.creates = {"Pod mingpt-worker-2 r0", "Pod mingpt-worker-3 r0"}, .round = 0,
        .replicas = 4, .group_size = 4,
        .events = {"ResizedInPlace", "CreatingPods", "GroupResized"}}},
      {"scale_past_max_replicas_is_clamped", Scaled(Running(3), 9), Round0(3, 3), At(10),
       {.creates = {"Pod mingpt-worker-3 r0"}, .round = 0, .replicas = 4, .group_size = 4,
        .events = {"ResizedInPlace", "CreatingPods", "GroupResized"}}},
      {"a_group_at_its_size_needs_nothing", Running(3), Reporting(Round0(3, 3), 3), At(10),
       {.round = 0, .replicas = 3, .world_size = 3, .group_size = -1, .events = {}}},
      {"the_group_still_growing_is_below_its_size", Running(4), Reporting(Round0(4, 4), 2),
       At(10),
       {.round = 0, .replicas = 4, .world_size = 2, .events = {}, .below = "True/Growing"}},
      {"an_unschedulable_pod_inside_its_timeout_changes_nothing_yet", Running(4),
       Round0(4, 4, {Unschedulable(3, 0, At(0))}), At(30),
       {.round = 0, .replicas = 4, .group_size = -1, .events = {"Unschedulable"}}},
      {"an_unschedulable_pod_past_its_timeout_shrinks_the_group_not_the_round", Running(4),
       Round0(4, 4, {Unschedulable(3, 0, At(0))}), At(61),
       {.round = 0, .replicas = 4, .group_size = 3, .events = {"Unschedulable", "GroupResized"},
        .below = "True/PendingTimeout"}},
      {"never_below_min_replicas",
       Elastic(InPlace(InPhase(Job(2), "Running", 0, 2)), 2, 4, 60),
       Round0(2, 2, {Unschedulable(1, 0, At(0))}), At(61),
       {.round = 0, .replicas = 2, .group_size = -1, .events = {"Unschedulable"}}},
      {"the_pod_scheduled_at_last_grows_the_group_back", Running(4),
       Reporting(Round0(4, 3), 3), At(100),
       {.round = 0, .replicas = 4, .world_size = 3, .group_size = 4, .events = {"GroupResized"},
        .below = "True/Growing"}},
      {"a_group_that_went_on_without_a_lost_member_says_why", Running(4),
       ShrunkOnLoss(Round0(4, 4)), At(10),
       {.round = 0, .replicas = 4, .world_size = 3, .group_size = -1, .events = {},
        .below = "True/MemberLost"}},
      {"the_lost_members_replacement_unschedulable_past_its_timeout_is_no_new_round", Running(4),
       ShrunkOnLoss(Round0(4, 4, {Unschedulable(1, 0, At(0))})), At(61),
       {.round = 0, .replicas = 4, .world_size = 3, .group_size = -1, .events = {"Unschedulable"},
        .below = "True/MemberLost"}},
      // Rule 4's new round (planner_table_test's rule4_pending_timeout_shrinks_to_the_pods_that_run):
      // every pod of round 0 goes, the rendezvous pod too.
      {"without_the_group_going_on_that_replacement_is_a_new_round", Running(4),
       Round0(4, 4, {Unschedulable(1, 0, At(0))}), At(61),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2",
                    "Pod mingpt-worker-3", "Pod mingpt-rendezvous"},
        .round = 1, .replicas = 3, .group_size = -1, .events = {"PendingTimeout", "DeletingPods"}}},
      // Issue 51: a group that finished at a size within its bounds has finished. Both members
      // said Finished while the replacement still starts (it holds no rank): Succeeded in round
      // 0, the replacement stopped by cleanPodPolicy Running, never waited for.
      {"a_group_that_finished_while_shrunk_has_finished", Running(3),
       ShrunkTo2(Round0(3, 3, {FinishedPod(0), FinishedPod(2)})), At(50),
       {.deletes = {"Pod mingpt-worker-1", "Pod mingpt-rendezvous", "Service mingpt"}, .round = 0,
        .events = {"AllPodsSucceeded", "CleaningPods"}, .phase = "Succeeded"}},
      // The operator saw it late: the replacement had found no store (the rendezvous pod ended
      // with the group) and ended GroupAbandoned. Not a new round from the checkpoint.
      {"a_replacement_that_found_no_store_after_the_finish_starts_no_round", Running(3),
       ShrunkTo2(Round0(3, 3,
                        {FinishedPod(0), FinishedPod(2),
                         Ends(Pod(1, 0, "Running"), group::EndReason::kGroupAbandoned,
                              "the group's store stayed unreachable")})),
       At(170),
       {.deletes = {"Pod mingpt-rendezvous", "Service mingpt"}, .round = 0,
        .events = {"AllPodsSucceeded", "CleaningPods"}, .phase = "Succeeded"}},
      // A member still running (its last checkpoint) is waited for, as before.
      {"a_member_still_running_holds_the_finish_back", Running(3),
       ShrunkTo2(Round0(3, 3, {FinishedPod(0)})), At(50),
       {.round = 0, .events = {}, .phase = "Running"}},
      {"restart_recovery_still_resizes_with_a_new_round",
       [] {
         DDPJob j = Scaled(Running(4), 3);
         j.spec.failure_policy.recovery = api::Recovery::kRestart;
         return j;
       }(),
       World(Pods(4, 0, "Running")), At(10),
       {.deletes = {"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2",
                    "Pod mingpt-worker-3"},
        .round = 1, .replicas = 3, .events = {"Resized", "DeletingPods"}}},
  };
}

void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class ResizeTable : public ::testing::TestWithParam<Row> {};

TEST_P(ResizeTable, Decides) {
  const Row& row = GetParam();
  const Plan plan = PlanReconcile(row.job, row.seen, row.now);
  SCOPED_TRACE(plan.ToString());
  const Expect& want = row.want;
  const api::DDPJobStatus st = plan.status ? *plan.status : row.job.status;
  EXPECT_EQ(DescribeCreates(plan), want.creates);
  EXPECT_EQ(DescribeDeletes(plan), want.deletes);
  EXPECT_EQ(EventReasons(plan), want.events);
  if (want.round >= 0) { EXPECT_EQ(st.round, want.round); }
  if (want.replicas >= 0) { EXPECT_EQ(st.replicas, want.replicas); }
  if (want.world_size >= 0) { EXPECT_EQ(st.world_size, want.world_size); }
  if (!want.phase.empty()) { EXPECT_EQ(st.phase, want.phase); }
  if (want.group_size < 0) {
    EXPECT_TRUE(plan.patches.empty());
  } else {
    ASSERT_EQ(plan.patches.size(), 1u);
    EXPECT_EQ(plan.patches[0].kind, "Pod");
    EXPECT_EQ(plan.patches[0].name, "mingpt-rendezvous");
    EXPECT_EQ(plan.patches[0].merge_patch["metadata"]["annotations"][group::kGroupSizeAnnotation],
              std::to_string(want.group_size));
  }
  if (!want.below.empty()) {
    const api::Condition* c = st.FindCondition(api::kCondBelowSize);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->status + "/" + c->reason, want.below);
  }
  DDPJob job = row.job;
  Observed world = row.seen;
  Apply(plan, &job, &world, row.now);
  const Plan again = PlanReconcile(job, world, row.now);
  EXPECT_TRUE(again.creates.empty() && again.deletes.empty() && again.patches.empty() &&
              !again.status && again.events.empty())
      << "second pass was not a no-op: " << again.ToString();
}

INSTANTIATE_TEST_SUITE_P(Resize, ResizeTable, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// The rendezvous pod of an elastic InPlace job carries the size and reads it from a projected
// file; other jobs' rendezvous pods have neither.
TEST(ResizeBuilders, TheRendezvousPodProjectsItsGroupSizeAnnotation) {
  const Plan plan = PlanReconcile(Elastic(InPlace(Job(3)), 1, 5, 60), Observed{}, At(0));
  const nlohmann::json* rdzv = nullptr;
  for (const auto& c : plan.creates) {
    if (c["metadata"]["name"] == "mingpt-rendezvous") rdzv = &c;
  }
  ASSERT_NE(rdzv, nullptr) << plan.ToString();
  EXPECT_EQ((*rdzv)["metadata"]["annotations"][group::kGroupSizeAnnotation], "3");
  const auto& vol = (*rdzv)["spec"]["volumes"][0];
  EXPECT_EQ(vol["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
            "metadata.annotations['ddp.dev/group-size']");
  std::map<std::string, std::string> env;
  for (const auto& e : (*rdzv)["spec"]["containers"][0]["env"]) {
    if (e.contains("value")) env[e["name"].get<std::string>()] = e["value"].get<std::string>();
  }
  EXPECT_EQ(env[group::kEnvMaxNodes], "5");
  // minReplicas: the group may go on smaller by itself after a loss with no spare, down to it.
  EXPECT_EQ(env[group::kEnvMinNodes], "1");
  EXPECT_EQ(env[group::kEnvGroupSizeFile],
            std::string((*rdzv)["spec"]["containers"][0]["volumeMounts"][0]["mountPath"]) + "/size");
}

}  // namespace
}  // namespace ddp::plan::testing
