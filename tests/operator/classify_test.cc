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

// A member its group declared lost was taken away, unless it already exited: then its code says
// what the program did.
TEST(ClassifyPod, FencedIsADisruptionUntilItExits) {
  ObservedPod running = Pod(1, 0, "Running");
  running.fenced = true;
  EXPECT_EQ(ClassifyPod(running), PodOutcome::kDisruption);
  EXPECT_EQ(DescribeOutcome(running, PodOutcome::kDisruption),
            "disrupted: declared lost by its group");
  ObservedPod exited = Exited(1, 0, 3);
  exited.fenced = true;
  EXPECT_EQ(ClassifyPod(exited), PodOutcome::kFailure);
  ObservedPod done = Exited(1, 0, 0);
  done.fenced = true;
  EXPECT_EQ(ClassifyPod(done), PodOutcome::kSucceeded);
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
