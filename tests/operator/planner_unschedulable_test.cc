// A round whose pod cannot be scheduled: condition Unschedulable and a Warning Event carrying
// the scheduler's message (operator/plan/unschedulable.h); cleared once the pod is placed.
#include <gtest/gtest.h>

#include "operator/plan/observe.h"
#include "operator/plan/unschedulable.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;

const char kCpu[] = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
                    "available: 1 No preemption victims found for incoming pod.";

ObservedPod Stuck(int index, const std::string& message = kCpu) {
  ObservedPod p = Unschedulable(index, 0, At(0));
  p.unschedulable_message = message;
  return p;
}

const api::Condition* Cond(const api::DDPJob& j) {
  return j.status.FindCondition(internal::kCondUnschedulable);
}

TEST(PlannerUnschedulable, ObservePodReadsTheSchedulersMessage) {
  const json pod = {
      {"metadata", {{"name", "mingpt-worker-1"}, {"labels", {{"ddp.dev/replica-index", "1"}}}}},
      {"status",
       {{"phase", "Pending"},
        {"conditions", {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                         {"message", kCpu}, {"lastTransitionTime", "2026-01-01T00:00:05Z"}}}}}}};
  const ObservedPod p = ObservePod(pod);
  EXPECT_EQ(p.unschedulable_since, At(5));
  EXPECT_EQ(p.unschedulable_message, kCpu);
}

TEST(PlannerUnschedulable, ConditionAndEventNameThePodAndTheReason) {
  api::DDPJob job = InPhase(Job(2), api::kPhasePending, 0, 2);
  Observed world = World({Pod(0, 0, "Running"), Stuck(1)});
  Plan plan = PlanReconcile(job, world, At(10));
  Apply(plan, &job, &world, At(10));
  const std::string want = std::string("pod mingpt-worker-1 cannot be scheduled: ") + kCpu;
  ASSERT_TRUE(Cond(job)) << plan.ToString();
  EXPECT_EQ(Cond(job)->status, "True");
  EXPECT_EQ(Cond(job)->reason, "Unschedulable");
  EXPECT_EQ(Cond(job)->message, want);
  ASSERT_EQ(EventReasons(plan), std::vector<std::string>{"Unschedulable"});
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.events[0].message, want);
  // The same facts again: no status write, no second Event.
  Plan again = PlanReconcile(job, world, At(20));
  EXPECT_FALSE(again.status) << again.ToString();
  EXPECT_TRUE(again.events.empty()) << again.ToString();
  // Placed (it runs now): the condition turns False, once, with a Normal Event.
  world = With(world, Pod(1, 0, "Running"));
  Plan placed = PlanReconcile(job, world, At(30));
  Apply(placed, &job, &world, At(30));
  ASSERT_TRUE(Cond(job));
  EXPECT_EQ(Cond(job)->status, "False");
  EXPECT_EQ(Cond(job)->reason, "Scheduled");
  EXPECT_EQ(Cond(job)->last_transition_time, At(30));
  const std::vector<std::string> reasons = EventReasons(placed);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "Scheduled"), reasons.end()) << placed.ToString();
  EXPECT_TRUE(PlanReconcile(job, world, At(40)).events.empty());
}

TEST(PlannerUnschedulable, SeveralPodsNameTheFirstAndCountTheRest) {
  api::DDPJob job = InPhase(Job(3), api::kPhasePending, 0, 3);
  Observed world = World({Stuck(2), Pod(0, 0, "Running"), Stuck(1, "0/1 nodes: 1 Insufficient memory.")});
  Plan plan = PlanReconcile(job, world, At(10));
  Apply(plan, &job, &world, At(10));
  ASSERT_TRUE(Cond(job));
  EXPECT_EQ(Cond(job)->message,
            "pod mingpt-worker-1 cannot be scheduled: 0/1 nodes: 1 Insufficient memory. (and 1 more)");
  // Another reason: a new Event.
  world = With(world, Stuck(1));
  Plan next = PlanReconcile(job, world, At(20));
  EXPECT_EQ(EventReasons(next), std::vector<std::string>{"Unschedulable"}) << next.ToString();
}

TEST(PlannerUnschedulable, OldRoundsAndDeletingPodsDoNotCount) {
  api::DDPJob job = InPhase(Job(2), api::kPhaseRunning, 1, 2);
  ObservedPod old = Unschedulable(1, 0, At(0));
  old.unschedulable_message = kCpu;
  Observed world = World({Pod(0, 1, "Running"), Pod(1, 1, "Running"), Deleting(old)});
  Plan plan = PlanReconcile(job, world, At(10));
  Apply(plan, &job, &world, At(10));
  EXPECT_FALSE(Cond(job)) << plan.ToString();
}

}  // namespace
}  // namespace ddp::plan::testing
