// Silent nodes and fenced members (operator/plan/lost_nodes.h): which Node objects are lost, when
// a pod is force-deleted, and multi-pass scenarios through PlanReconcile for recovery Restart and
// InPlace, each checked for a single count per failure and for recreating the name.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include <algorithm>

#include "operator/plan/lost_nodes.h"
#include "operator/plan/plan.h"
#include "operator/plan/suspect_nodes.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using Strings = std::vector<std::string>;

// The margins every row derives its times from.
const PlanOptions kOptions{seconds(30), seconds(300)};

ObservedPod OnLostNode(ObservedPod p) {
  p.node_name = "n3";
  p.node_lost = true;
  return p;
}
ObservedPod OnReadyNode(ObservedPod p) {
  p.node_name = "n1";
  return p;
}
// Deleted at At(at) with a grace of `grace` seconds: deletionTimestamp = At(at + grace).
ObservedPod DeletedAt(ObservedPod p, int at, int grace) {
  p.deleting = true;
  p.deletion_timestamp = At(at + grace);
  p.deletion_grace_seconds = grace;
  return p;
}
ObservedPod Fenced(ObservedPod p) {
  p.fenced = true;
  return p;
}

// ---- ObserveNode.

struct NodeRow {
  std::string name;
  json node;
  NodeHealth want;
};

json Node(const std::string& ready, const std::string& reason, json taints = json::array()) {
  json n = {{"metadata", {{"name", "n3"}}}, {"spec", {{"taints", taints}}}};
  if (!ready.empty()) {
    n["status"]["conditions"] = json::array(
        {{{"type", "MemoryPressure"}, {"status", "False"}},
         {{"type", "Ready"}, {"status", ready}, {"reason", reason}}});
  }
  return n;
}
json Taint(const std::string& key, const std::string& effect) {
  return {{"key", key}, {"effect", effect}};
}

std::vector<NodeRow> NodeRows() {
  return {
      {"ready", Node("True", "KubeletReady"), {false, ""}},
      {"not_ready", Node("False", "KubeletNotReady"), {true, "Ready=False (KubeletNotReady)"}},
      {"unknown_and_tainted_unreachable",
       Node("Unknown", "NodeStatusUnknown",
            {Taint(kTaintUnreachable, "NoSchedule"), Taint(kTaintUnreachable, "NoExecute")}),
       {true, "Ready=Unknown (NodeStatusUnknown), tainted node.kubernetes.io/unreachable"}},
      {"out_of_service_though_ready",
       Node("True", "KubeletReady", {Taint(kTaintOutOfService, "NoExecute")}),
       {true, "tainted node.kubernetes.io/out-of-service"}},
      {"not_ready_taint_alone", Node("", "", {Taint(kTaintNotReady, "NoExecute")}),
       {true, "tainted node.kubernetes.io/not-ready"}},
      {"other_taints_do_not_count",
       Node("True", "KubeletReady", {Taint("nvidia.com/gpu", "NoSchedule")}), {false, ""}},
      {"just_registered_without_conditions", Node("", ""), {false, ""}},
      {"junk_is_not_lost", json::array({1, 2}), {false, ""}},
      {"junk_fields_are_not_lost",
       {{"spec", {{"taints", "x"}}}, {"status", {{"conditions", {{"type", 3}}}}}}, {false, ""}},
  };
}

class ObserveNodeTable : public ::testing::TestWithParam<NodeRow> {};

TEST_P(ObserveNodeTable, Reads) {
  const NodeHealth got = ObserveNode(GetParam().node);
  EXPECT_EQ(got.lost, GetParam().want.lost);
  EXPECT_EQ(got.why, GetParam().want.why);
}

INSTANTIATE_TEST_SUITE_P(LostNodes, ObserveNodeTable, ::testing::ValuesIn(NodeRows()),
                         [](const auto& info) { return info.param.name; });

// ---- DecideLostPod. Pods deleted at At(70) with a 30 s grace: deletionTimestamp At(100).

struct DecideRow {
  std::string name;
  ObservedPod pod;
  bool may_rejoin;
  int now;
  LostPodDecision::Verdict verdict;
  int due = -1;     // kWait only
  std::string why;  // kForceDelete only
};

std::vector<DecideRow> DecideRows() {
  const ObservedPod stuck = OnLostNode(DeletedAt(Pod(1, 2, "Running"), 70, 30));
  ObservedPod grace_unknown = stuck;
  grace_unknown.deletion_grace_seconds.reset();
  ObservedPod no_timestamp = stuck;
  no_timestamp.deletion_timestamp.reset();
  return {
      {"running_on_a_lost_node_is_kept", OnLostNode(Pod(1, 2, "Running")), false, 1000,
       LostPodDecision::kKeep},
      {"terminating_on_a_ready_node_is_kept", OnReadyNode(DeletedAt(Pod(1, 2, "Running"), 70, 30)),
       false, 1000, LostPodDecision::kKeep},
      {"terminating_on_a_lost_node_waits_grace_plus_margin", stuck, false, 110,
       LostPodDecision::kWait, 130},
      {"forced_at_grace_plus_margin", stuck, false, 130, LostPodDecision::kForceDelete, -1,
       "Terminating on lost node n3 for 60s"},
      {"one_that_may_rejoin_waits_the_unfenced_margin", stuck, true, 130, LostPodDecision::kWait,
       400},
      {"one_that_may_rejoin_is_forced_after_it", stuck, true, 400,
       LostPodDecision::kForceDelete, -1, "Terminating on lost node n3 for 330s"},
      {"unknown_grace_counts_from_the_timestamp", grace_unknown, false, 130,
       LostPodDecision::kForceDelete, -1, "Terminating on lost node n3 for 30s"},
      {"no_timestamp_cannot_be_timed", no_timestamp, false, 1000, LostPodDecision::kKeep},
      {"fenced_is_forced_at_once", Fenced(OnReadyNode(Pod(1, 2, "Running"))), true, 10,
       LostPodDecision::kForceDelete, -1, "declared lost and fenced by its group"},
      {"fenced_and_terminating_is_forced_at_once", Fenced(stuck), true, 71,
       LostPodDecision::kForceDelete, -1, "declared lost and fenced by its group"},
      {"fenced_and_exited_is_forced_at_once_too", Fenced(OnReadyNode(Exited(1, 2, 137))), true,
       10, LostPodDecision::kForceDelete, -1, "declared lost and fenced by its group"},
  };
}

class DecideLostPodTable : public ::testing::TestWithParam<DecideRow> {};

TEST_P(DecideLostPodTable, Decides) {
  const DecideRow& row = GetParam();
  const LostPodDecision d = DecideLostPod(row.pod, row.may_rejoin, kOptions, At(row.now));
  EXPECT_EQ(d.verdict, row.verdict);
  if (row.verdict == LostPodDecision::kWait) { EXPECT_EQ(d.due, At(row.due)); }
  if (row.verdict == LostPodDecision::kForceDelete) { EXPECT_EQ(d.why, row.why); }
}

INSTANTIATE_TEST_SUITE_P(LostNodes, DecideLostPodTable, ::testing::ValuesIn(DecideRows()),
                         [](const auto& info) { return info.param.name; });

// ---- Through PlanReconcile.

// The kubelets of live nodes confirm their pods' deletions; a lost node's never do.
void ReapOnLiveNodes(Observed* world) {
  auto& pods = world->pods;
  pods.erase(std::remove_if(pods.begin(), pods.end(),
                            [](const ObservedPod& p) { return p.deleting && !p.node_lost; }),
             pods.end());
}

void SetAllRunning(Observed* world) {
  for (auto& p : world->pods) {
    p.phase = "Running";
    p.ready = true;
  }
}

bool SaysSomewhere(const Plan& plan, const std::string& text) {
  return std::any_of(plan.events.begin(), plan.events.end(),
                     [&](const Event& e) { return e.message.find(text) != std::string::npos; });
}

// Plans and applies until nothing is written (live kubelets confirm deletes between passes).
void Settle(api::DDPJob* job, Observed* world, TimePoint now) {
  for (int pass = 0; pass < 10; ++pass) {
    const Plan plan = PlanReconcile(*job, *world, now, kOptions);
    if (plan.creates.empty() && plan.deletes.empty() && !plan.status) return;
    Apply(plan, job, world, now);
    ReapOnLiveNodes(world);
  }
  ADD_FAILURE() << "planner did not settle";
}

// recovery Restart: the taint manager deletes pod 1 on silent node n3 at At(100) with a 30 s grace
// (deletionTimestamp At(130)). The new
// round's other names come at once; name 1 waits until grace + 30 s, is force-deleted, and comes
// back. One disruption, no restart.
TEST(LostNodeScenario, RestartRoundRecreatesTheNameAfterGracePlusMargin) {
  api::DDPJob job = InPhase(Job(3), "Running", 2, 3);
  Observed world = World(Pods(3, 2, "Running"));
  world.pods[1] = OnLostNode(DeletedAt(world.pods[1], 100, 30));

  const Plan round = PlanReconcile(job, world, At(101), kOptions);
  SCOPED_TRACE(round.ToString());
  ASSERT_TRUE(round.status.has_value());
  EXPECT_EQ(round.status->round, 3);
  EXPECT_EQ(round.status->disruptions, 1);
  EXPECT_EQ(round.status->restarts, 0);
  EXPECT_EQ(DescribeDeletes(round), (Strings{"Pod mingpt-worker-0", "Pod mingpt-worker-2"}));
  EXPECT_EQ(round.requeue_after, std::chrono::milliseconds(59000));  // At(160) - At(101)
  Apply(round, &job, &world, At(101));
  ReapOnLiveNodes(&world);

  const Plan others = PlanReconcile(job, world, At(102), kOptions);
  EXPECT_EQ(DescribeCreates(others), (Strings{"Pod mingpt-worker-0 r3", "Pod mingpt-worker-2 r3"}));
  EXPECT_TRUE(others.deletes.empty());
  EXPECT_TRUE(SaysSomewhere(others, "1 wait for their old pod to go"));
  Apply(others, &job, &world, At(102));

  const Plan early = PlanReconcile(job, world, At(159), kOptions);
  EXPECT_TRUE(early.deletes.empty()) << early.ToString();
  EXPECT_EQ(early.requeue_after, std::chrono::milliseconds(1000));

  const Plan forced = PlanReconcile(job, world, At(160), kOptions);
  EXPECT_EQ(DescribeDeletes(forced), (Strings{"Pod mingpt-worker-1 (grace 0s)"}));
  ASSERT_EQ(forced.deletes.size(), 1u);
  EXPECT_EQ(forced.deletes[0].uid, "mingpt-worker-1-r2");  // the UID precondition
  EXPECT_EQ(EventReasons(forced), (Strings{internal::kReasonForceDeleted}));
  EXPECT_TRUE(SaysSomewhere(
      forced, "round 3: pod mingpt-worker-1 Terminating on lost node n3 for 60s: force-deleted"));
  EXPECT_FALSE(forced.status.has_value()) << "a force delete counts nothing";
  Apply(forced, &job, &world, At(160));

  const Plan recreate = PlanReconcile(job, world, At(161), kOptions);
  EXPECT_EQ(DescribeCreates(recreate), (Strings{"Pod mingpt-worker-1 r3"}));
  Apply(recreate, &job, &world, At(161));
  SetAllRunning(&world);
  Settle(&job, &world, At(162));
  EXPECT_EQ(job.status.phase, "Running");
  EXPECT_EQ(job.status.round, 3);
  EXPECT_EQ(job.status.disruptions, 1);
  EXPECT_EQ(job.status.restarts, 0);
}

// recovery InPlace: the same loss is healed in the same round; the group has not fenced pod 1,
// so the operator waits the unfenced margin (its process might still train), then forces it.
TEST(LostNodeScenario, InPlaceUnfencedWaitsTheLongMarginInTheSameRound) {
  api::DDPJob job = InPlace(InPhase(Job(3), "Running", 2, 3));
  Observed world = GroupWorld(3, 2, 0, "Running");
  world.pods[1] = OnLostNode(DeletedAt(world.pods[1], 100, 30));

  const Plan replace = PlanReconcile(job, world, At(101), kOptions);
  SCOPED_TRACE(replace.ToString());
  ASSERT_TRUE(replace.status.has_value());
  EXPECT_EQ(replace.status->round, 2);
  EXPECT_EQ(replace.status->disruptions, 1);
  EXPECT_EQ(replace.status->recoveries, 0);
  // Its node becomes suspect (suspect_nodes.h): the replacement is kept off it.
  EXPECT_EQ(EventReasons(replace), (Strings{"PodReplaced", internal::kReasonNodeSuspect}));
  EXPECT_EQ(replace.status->suspect_nodes, (std::vector<api::SuspectNode>{{"n3", At(101)}}));
  EXPECT_TRUE(replace.deletes.empty());
  // The first timer: n3 may prove itself alive at At(161); the margin ends at At(430).
  EXPECT_EQ(replace.requeue_after, std::chrono::milliseconds(60000));
  Apply(replace, &job, &world, At(101));

  const Plan early = PlanReconcile(job, world, At(429), kOptions);
  EXPECT_TRUE(early.deletes.empty() && early.events.empty()) << early.ToString();

  const Plan forced = PlanReconcile(job, world, At(430), kOptions);
  EXPECT_EQ(DescribeDeletes(forced), (Strings{"Pod mingpt-worker-1 (grace 0s)"}));
  EXPECT_TRUE(SaysSomewhere(
      forced, "round 2: pod mingpt-worker-1 Terminating on lost node n3 for 330s: force-deleted"));
  EXPECT_FALSE(forced.status.has_value());
  Apply(forced, &job, &world, At(430));

  const Plan recreate = PlanReconcile(job, world, At(431), kOptions);
  EXPECT_EQ(DescribeCreates(recreate), (Strings{"Pod mingpt-worker-1 r2"}));
  Apply(recreate, &job, &world, At(431));
  SetAllRunning(&world);
  Settle(&job, &world, At(432));
  EXPECT_EQ(job.status.phase, "Running");
  EXPECT_EQ(job.status.round, 2);
  EXPECT_EQ(job.status.disruptions, 1);
  EXPECT_EQ(job.status.recoveries, 0);
}

// The group fences the stuck pod later: it goes at once, and is not counted again.
TEST(LostNodeScenario, FenceOfAStuckPodForcesItWithoutASecondCount) {
  api::DDPJob job = InPlace(InPhase(Job(3), "Running", 2, 3));
  Observed world = GroupWorld(3, 2, 0, "Running");
  world.pods[1] = OnLostNode(DeletedAt(world.pods[1], 100, 30));
  Apply(PlanReconcile(job, world, At(101), kOptions), &job, &world, At(101));
  ASSERT_EQ(job.status.disruptions, 1);

  world.pods[1].fenced = true;
  const Plan forced = PlanReconcile(job, world, At(150), kOptions);
  EXPECT_EQ(DescribeDeletes(forced), (Strings{"Pod mingpt-worker-1 (grace 0s)"}));
  EXPECT_FALSE(forced.status.has_value()) << forced.ToString();

  // Still visible after the force delete (a finalizer): not forced again, nothing written.
  world.pods[1] = DeletedAt(world.pods[1], 150, 0);
  const Plan again = PlanReconcile(job, world, At(151), kOptions);
  EXPECT_TRUE(again.deletes.empty()) << again.ToString();
  EXPECT_TRUE(again.events.empty()) << again.ToString();
}

// A member the group declared lost (a frozen process, a silent node not yet NotReady) is a
// disruption, replaced at once under InPlace with a force delete; counted once over all passes.
// Pod 0 is no different: the store lives in the rendezvous pod.
TEST(LostNodeScenario, FencedPodIsReplacedAtOnceAndCountedOnce) {
  for (int fenced : {2, 0}) {
    SCOPED_TRACE("fenced pod " + std::to_string(fenced));
    const std::string name = "mingpt-worker-" + std::to_string(fenced);
    api::DDPJob job = InPlace(InPhase(Job(3), "Running", 2, 3));
    Observed world = GroupWorld(3, 2, 0, "Running");
    world.pods[static_cast<size_t>(fenced)] = Fenced(world.pods[static_cast<size_t>(fenced)]);

    const Plan replace = PlanReconcile(job, world, At(10), kOptions);
    SCOPED_TRACE(replace.ToString());
    EXPECT_EQ(DescribeDeletes(replace), (Strings{"Pod " + name + " (grace 0s)"}));
    EXPECT_EQ(EventReasons(replace), (Strings{"PodReplaced", internal::kReasonForceDeleted}));
    EXPECT_TRUE(SaysSomewhere(replace, "rank " + std::to_string(fenced) +
                                           " disrupted: declared lost by its group; "
                                           "disruption 1, not limited"));
    EXPECT_TRUE(SaysSomewhere(replace, "round 2: pod " + name +
                                           " declared lost and fenced by its group: "
                                           "force-deleted"));
    ASSERT_TRUE(replace.status.has_value());
    EXPECT_EQ(replace.status->disruptions, 1);
    EXPECT_EQ(replace.status->recoveries, 0);
    EXPECT_EQ(replace.status->restarts, 0);
    EXPECT_EQ(replace.status->round, 2);

    // The force delete is lost (the cache is behind): the same delete again, no second count.
    api::DDPJob after = job;
    after.status = *replace.status;
    const Plan again = PlanReconcile(after, world, At(11), kOptions);
    EXPECT_EQ(DescribeDeletes(again), (Strings{"Pod " + name + " (grace 0s)"}));
    EXPECT_FALSE(again.status.has_value()) << again.ToString();

    Apply(replace, &job, &world, At(10));
    const Plan recreate = PlanReconcile(job, world, At(11), kOptions);
    EXPECT_EQ(DescribeCreates(recreate), (Strings{"Pod " + name + " r2"}));
    Apply(recreate, &job, &world, At(11));
    SetAllRunning(&world);
    Settle(&job, &world, At(12));
    EXPECT_EQ(job.status.phase, "Running");
    EXPECT_EQ(job.status.disruptions, 1);
    EXPECT_EQ(job.status.round, 2);
  }
}

// A fenced pod that already exited (its supervisor wrote Fenced, or it crashed after the group
// gave up on it) is a disruption as well, and goes at once: its exit code decides nothing.
TEST(LostNodeScenario, FencedPodThatExitedIsADisruptionForcedAtOnce) {
  api::DDPJob job = InPlace(InPhase(Job(3), "Running", 2, 3));
  Observed world = GroupWorld(3, 2, 0, "Running");
  world.pods[1] = Fenced(Exited(1, 2, 3));  // 3 would fail the job as a failure
  const Plan plan = PlanReconcile(job, world, At(10), kOptions);
  SCOPED_TRACE(plan.ToString());
  EXPECT_EQ(DescribeDeletes(plan), (Strings{"Pod mingpt-worker-1 (grace 0s)"}));
  EXPECT_EQ(EventReasons(plan), (Strings{"PodReplaced", internal::kReasonForceDeleted}));
  EXPECT_TRUE(SaysSomewhere(plan, "rank 1 disrupted: declared lost by its group"));
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->phase, "Restarting");
  EXPECT_EQ(plan.status->disruptions, 1);
  EXPECT_EQ(plan.status->recoveries, 0);
  Apply(plan, &job, &world, At(10));
  const Plan again = PlanReconcile(job, world, At(10), kOptions);
  EXPECT_EQ(DescribeCreates(again), (Strings{"Pod mingpt-worker-1 r2"}));
  EXPECT_FALSE(again.status.has_value() && again.status->disruptions != 1) << again.ToString();
}

// Under recovery Restart a fenced pod (a report of an earlier InPlace spec, or a group that
// raced a spec change) is a disruption of the round: a new round, the fenced pod forced.
TEST(LostNodeScenario, FencedPodUnderRestartStartsANewRound) {
  api::DDPJob job = InPhase(Job(3), "Running", 2, 3);
  Observed world = World(Pods(3, 2, "Running"));
  world.pods[2].fenced = true;
  const Plan plan = PlanReconcile(job, world, At(10), kOptions);
  SCOPED_TRACE(plan.ToString());
  EXPECT_EQ(DescribeDeletes(plan),
            (Strings{"Pod mingpt-worker-0", "Pod mingpt-worker-1", "Pod mingpt-worker-2 (grace 0s)"}));
  EXPECT_EQ(EventReasons(plan),
            (Strings{"PodDisrupted", "DeletingPods", internal::kReasonForceDeleted}));
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->round, 3);
  EXPECT_EQ(plan.status->disruptions, 1);
  EXPECT_EQ(plan.status->restarts, 0);
  // Once applied, the next pass counts nothing more and deletes nothing more.
  Apply(plan, &job, &world, At(10));
  const Plan again = PlanReconcile(job, world, At(10), kOptions);
  EXPECT_TRUE(again.deletes.empty() && !again.status) << again.ToString();
}

// A spare that took a rank trains like a worker: on a lost node, unfenced, it gets the long
// margin too; once the group fences it, it goes at once. Counted once, as a disruption.
TEST(LostNodeScenario, SpareHoldingARankWaitsTheLongMarginLikeAWorker) {
  api::DDPJob job = InPlace(InPhase(Job(2), "Running", 2, 2), 1);
  Observed world = GroupWorld(2, 2, 1, "Running");
  // The spare holds rank 1; worker 1 (its rank taken) is an idle spare now.
  world.group = Report(2, {{"mingpt-worker-0", 0}, {"mingpt-spare-0", 1}}, {"mingpt-worker-1"});
  world.pods[3] = OnLostNode(DeletedAt(world.pods[3], 100, 30));
  ASSERT_EQ(world.pods[3].name, "mingpt-spare-0");

  const Plan replace = PlanReconcile(job, world, At(101), kOptions);
  SCOPED_TRACE(replace.ToString());
  ASSERT_TRUE(replace.status.has_value());
  EXPECT_EQ(replace.status->disruptions, 1);
  EXPECT_EQ(replace.status->round, 2);
  EXPECT_TRUE(SaysSomewhere(replace, "replacing pod mingpt-spare-0 (rank 1 disrupted"));
  EXPECT_TRUE(replace.deletes.empty());
  // n3 may prove itself alive at At(161) (suspect_nodes.h), before the margin ends at At(430).
  EXPECT_EQ(replace.requeue_after, std::chrono::milliseconds(60000));
  Apply(replace, &job, &world, At(101));
  const Plan later = PlanReconcile(job, world, At(200), kOptions);
  EXPECT_TRUE(later.deletes.empty());
  EXPECT_EQ(later.requeue_after, std::chrono::milliseconds(230000));  // At(430) - At(200)

  EXPECT_TRUE(PlanReconcile(job, world, At(429), kOptions).deletes.empty());
  world.group->report.fenced = {{"mingpt-spare-0", "mingpt-spare-0-r2"}};
  const Plan forced = PlanReconcile(job, world, At(150), kOptions);
  EXPECT_EQ(DescribeDeletes(forced), (Strings{"Pod mingpt-spare-0 (grace 0s)"}));
  EXPECT_FALSE(forced.status.has_value()) << forced.ToString();
}

// What is not the planner's to force: a lost node's pod nobody deleted, a pod of a live node
// past its grace (its kubelet is finishing), a foreign pod.
TEST(LostNodeScenario, NothingToForce) {
  api::DDPJob job = InPlace(InPhase(Job(3), "Running", 2, 3));
  job.status.ready_replicas = 3;
  Observed on_lost = GroupWorld(3, 2, 0, "Running");
  on_lost.pods[1] = OnLostNode(on_lost.pods[1]);
  const Plan kept = PlanReconcile(job, on_lost, At(1000), kOptions);
  EXPECT_TRUE(kept.deletes.empty()) << kept.ToString();
  // Only its node is remembered as suspect (suspect_nodes.h); then nothing more.
  ASSERT_TRUE(kept.status.has_value()) << kept.ToString();
  EXPECT_EQ(kept.status->suspect_nodes, (std::vector<api::SuspectNode>{{"n3", At(1000)}}));
  EXPECT_EQ(EventReasons(kept), (Strings{internal::kReasonNodeSuspect}));
  job.status = *kept.status;
  const Plan after = PlanReconcile(job, on_lost, At(1060), kOptions);
  EXPECT_TRUE(after.empty()) << after.ToString();

  Observed foreign = GroupWorld(3, 2, 0, "Running");
  foreign.pods.push_back(
      OwnedBy(Fenced(OnLostNode(DeletedAt(Pod(5, 2, "Running"), 70, 30))), "another-job"));
  const Plan not_ours = PlanReconcile(job, foreign, At(1000), kOptions);
  // Nothing done to the foreign pod; the only thing planned is the wake-up that checks whether
  // the suspect node n3 (in the status since `kept`) has proved itself alive.
  EXPECT_TRUE(not_ours.deletes.empty()) << not_ours.ToString();
  EXPECT_FALSE(not_ours.status.has_value()) << not_ours.ToString();
  EXPECT_TRUE(EventReasons(not_ours).empty()) << not_ours.ToString();
  EXPECT_EQ(not_ours.requeue_after, std::chrono::milliseconds(60000));

  api::DDPJob restarting = InPhase(Job(3), "Restarting", 3, 3);
  restarting.status.disruptions = 1;
  Observed slow = World({Pod(0, 3, "Running"), Pod(2, 3, "Running"),
                         OnReadyNode(DeletedAt(Pod(1, 2, "Running"), 70, 30))});
  const Plan plan = PlanReconcile(restarting, slow, At(1000), kOptions);
  EXPECT_TRUE(plan.deletes.empty()) << plan.ToString();
}

}  // namespace
}  // namespace ddp::plan::testing
