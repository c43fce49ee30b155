// Rule 2's classification and restart policies, as tables; and Plan's value semantics.
#include <gtest/gtest.h>

#include "operator/plan/classify.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

TEST(IsRetryable, PolicyByExitCode) {
  api::FailurePolicy on_failure, exit_code, never;
  exit_code.restart_policy = api::RestartPolicy::kExitCode;
  exit_code.retryable_exit_codes = {75, 76};
  never.restart_policy = api::RestartPolicy::kNever;
  struct Case { int code; bool on_failure, exit_code, never; };
  const Case cases[] = {
      {1, true, false, false},   {2, true, false, false},  {3, true, false, false},
      {75, true, true, false},   {76, true, true, false},  {127, true, false, false},
      {128, true, true, false},  {137, true, true, false}, {143, true, true, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(IsRetryable(on_failure, c.code), c.on_failure) << c.code;
    EXPECT_EQ(IsRetryable(exit_code, c.code), c.exit_code) << c.code;
    EXPECT_EQ(IsRetryable(never, c.code), c.never) << c.code;
  }
}

TEST(ClassifyPod, FailureNeedsAnExitCodeAndNoDisruptionSignal) {
  EXPECT_EQ(ClassifyPod(Pod(0, 0, "Running")), PodOutcome::kActive);
  EXPECT_EQ(ClassifyPod(Pod(0, 0, "Pending")), PodOutcome::kActive);
  EXPECT_EQ(ClassifyPod(Pod(0, 0, "Unknown")), PodOutcome::kActive);
  EXPECT_EQ(ClassifyPod(Exited(0, 0, 0)), PodOutcome::kSucceeded);
  EXPECT_EQ(ClassifyPod(Exited(0, 0, 75)), PodOutcome::kFailure);
  EXPECT_EQ(ClassifyPod(Evicted(0, 0)), PodOutcome::kDisruption);
  EXPECT_EQ(ClassifyPod(Pod(0, 0, "Failed")), PodOutcome::kDisruption);  // no exit code
  EXPECT_EQ(ClassifyPod(Deleting(Pod(0, 0, "Running"))), PodOutcome::kDisruption);
  ObservedPod preempted = Exited(0, 0, 75);
  preempted.disruption_condition = true;  // exit 75 after a checkpoint, then taken away
  EXPECT_EQ(ClassifyPod(preempted), PodOutcome::kDisruption);
  ObservedPod shutdown = Exited(0, 0, 137);
  shutdown.reason = "NodeShutdown";
  EXPECT_EQ(ClassifyPod(shutdown), PodOutcome::kDisruption);
}

// A member its group declared lost was taken away, whether or not it exited since (its
// supervisor exits when it learns it was fenced; a code then says nothing about the program).
TEST(ClassifyPod, FencedIsADisruptionWhetherOrNotItExited) {
  ObservedPod running = Pod(1, 0, "Running");
  running.fenced = true;
  EXPECT_EQ(ClassifyPod(running), PodOutcome::kDisruption);
  EXPECT_EQ(DescribeOutcome(running, PodOutcome::kDisruption),
            "disrupted: declared lost by its group");
  for (int code : {0, 3, 75, 137}) {
    ObservedPod exited = Exited(1, 0, code);
    exited.fenced = true;
    EXPECT_EQ(ClassifyPod(exited), PodOutcome::kDisruption) << code;
    EXPECT_EQ(DescribeOutcome(exited, PodOutcome::kDisruption),
              "disrupted: declared lost by its group")
        << code;
  }
}

// What a supervised pod (recovery InPlace) wrote when it ended decides before its exit code:
// Departed (SIGTERM to this pod alone) and Fenced are disruptions; BudgetSpent, NotRetryable and
// GroupAbandoned end a failing program (inplace.h's steps decide what each costs).
TEST(ClassifyPod, SupervisorEndReasons) {
  using group::EndReason;
  struct Case {
    EndReason reason;
    PodOutcome want;
  };
  const Case cases[] = {
      {EndReason::kDeparted, PodOutcome::kDisruption},
      {EndReason::kFenced, PodOutcome::kDisruption},
      {EndReason::kBudgetSpent, PodOutcome::kFailure},
      {EndReason::kNotRetryable, PodOutcome::kFailure},
      {EndReason::kGroupAbandoned, PodOutcome::kFailure},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ClassifyPod(Ends(Pod(1, 0, "Running"), c.reason, "why")), c.want)
        << group::EndReasonName(c.reason);
  }
  // Not our prefix, or a reason we do not know: the exit code decides.
  ObservedPod other = Exited(1, 0, 75);
  other.message = "ddp: Departedness: no";
  EXPECT_EQ(ClassifyPod(other), PodOutcome::kFailure);
  other.message = "Departed: not ours";
  EXPECT_EQ(ClassifyPod(other), PodOutcome::kFailure);
}

TEST(DescribeOutcome, ReadsLikeTheEventMessages) {
  EXPECT_EQ(DescribeOutcome(Exited(1, 0, 75), PodOutcome::kFailure), "exited 75");
  EXPECT_EQ(DescribeOutcome(Exited(1, 0, 143), PodOutcome::kFailure),
            "killed by signal 15 (exit 143)");
  EXPECT_EQ(DescribeOutcome(Evicted(1, 0), PodOutcome::kDisruption), "disrupted: Evicted");
}

TEST(PlanValue, EqualityEmptinessAndReadableForm) {
  Plan a;
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.ToString(), "Plan{}");
  Plan b = a;
  b.deletes.push_back({"Pod", "mingpt-worker-1", "u1"});
  b.events.push_back({"Warning", "PodFailed", "round 2 -> 3 (rank 1 exited 75)"});
  b.requeue_after = std::chrono::milliseconds(1500);
  EXPECT_FALSE(b.empty());
  EXPECT_FALSE(a == b);
  Plan c = b;
  EXPECT_TRUE(b == c);
  EXPECT_EQ(b.ToString(),
            "Plan{\n  delete Pod mingpt-worker-1\n"
            "  event Warning PodFailed: round 2 -> 3 (rank 1 exited 75)\n"
            "  requeue after 1500ms\n}");
  c.delete_job = true;
  EXPECT_FALSE(b == c);
  Plan forced = b;
  forced.deletes[0].grace_period_seconds = 0;  // a force delete differs from a graceful one
  EXPECT_FALSE(b == forced);
  EXPECT_NE(forced.ToString().find("delete Pod mingpt-worker-1 (grace 0s)"), std::string::npos);
}

}  // namespace
}  // namespace ddp::plan::testing
