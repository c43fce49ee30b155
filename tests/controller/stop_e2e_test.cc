// Succeeded means trained, against the test API server (DESIGN.md "Worker exit codes"): every
// worker pod of a running InPlace job deleted at once is a new round, not a pod replaced alone
// and never a success; pods that exit 0 without `ddp: Finished` (as the replacements of an older
// ddp-worker did after such a stop) fail, they do not finish the job; pods that say they finished
// end it Succeeded with the total step in its status. The test plays the kubelet; pods linger
// Terminating after a delete (a grace period) until the test confirms their end.
#include <gtest/gtest.h>

#include "common/group_contract.h"
#include "tests/controller/e2e_harness.h"

namespace ddp::e2e {
namespace {

constexpr milliseconds kWait{20000};

json InPlaceJob(const std::string& name) {
  return World::Job(name, 2, {{"failurePolicy", {{"recovery", "InPlace"}}}});
}

std::string Phase(World& w, const std::string& job) {
  return w.JobStatus(job).value("phase", "");
}

TEST(StopE2e, EveryPodDeletedAtOnceIsANewRoundAndTheJobTrainsToTheEnd) {
  World w(false, milliseconds(60000));
  auto op = w.StartOperator("op");
  w.CreateJob(InPlaceJob("s"));
  ASSERT_TRUE(w.RunRound("s", 0, 3, kWait)) << op->Log();  // 2 workers and the rendezvous pod
  ASSERT_TRUE(WaitFor([&] { return Phase(w, "s") == "Running"; }, kWait)) << op->Log();

  // kubectl delete pod s-worker-0 s-worker-1: both Terminating while they write the checkpoint.
  for (const char* pod : {"s-worker-0", "s-worker-1"}) {
    ASSERT_TRUE(w.client().Delete(controller::kPods, World::kNs, pod, {}).ok()) << pod;
  }
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("s").value("round", -1) == 1; }, kWait))
      << w.JobStatus("s").dump() << op->Log();
  json st = w.JobStatus("s");
  EXPECT_EQ(st.value("phase", ""), "Restarting");
  EXPECT_EQ(st.value("restarts", -1), 0) << "nobody's failure";
  EXPECT_GE(st.value("disruptions", -1), 1);
  // The stopped pods end as their supervisors end them; the round ends with them.
  for (const char* pod : {"s-worker-0", "s-worker-1"}) {
    ASSERT_TRUE(w.server().TerminatePod(World::kNs, pod, 75, "Error",
                                        group::FormatEnd(group::EndReason::kStopped,
                                                         "the job stopped together")));
  }
  // Every pod of round 0 goes (the operator deletes the rendezvous pod of the old round); the
  // test's kubelet confirms each end once the pod is being deleted.
  ASSERT_TRUE(WaitFor(
      [&] {
        bool left = false;
        for (const json& pod : w.Pods()) {
          if (RoundOf(pod) != 0) continue;
          left = true;
          if (pod["metadata"].contains("deletionTimestamp")) {
            (void)w.server().FinalizePod(World::kNs, pod["metadata"]["name"]);
          }
        }
        return !left;
      },
      kWait))
      << w.Pods().size() << " pods left; " << op->Log();
  ASSERT_TRUE(w.RunRound("s", 1, 3, kWait)) << w.JobStatus("s").dump() << op->Log();
  EXPECT_NE(Phase(w, "s"), "Succeeded");

  // Round 1 trains to the end: both pods say so.
  for (const char* pod : {"s-worker-0", "s-worker-1"}) {
    ASSERT_TRUE(w.server().TerminatePod(World::kNs, pod, 0, "Completed",
                                        group::FormatFinished({6000, 0})));
  }
  ASSERT_TRUE(WaitFor([&] { return Phase(w, "s") == "Succeeded"; }, kWait))
      << w.JobStatus("s").dump() << op->Log();
  st = w.JobStatus("s");
  EXPECT_EQ(st["progress"].value("step", -1), 6000) << st.dump();
  EXPECT_EQ(st["progress"].value("totalSteps", -1), 6000) << st.dump();
  EXPECT_FALSE(st["progress"].contains("etaSeconds")) << st.dump();
}

TEST(StopE2e, PodsThatExitZeroWithoutFinishingNeverEndTheJob) {
  World w;
  auto op = w.StartOperator("op");
  w.CreateJob(InPlaceJob("z"));
  ASSERT_TRUE(w.RunRound("z", 0, 3, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return Phase(w, "z") == "Running"; }, kWait)) << op->Log();
  // Exit 0, but one says nothing and the other says it stopped.
  ASSERT_TRUE(w.server().TerminatePod(World::kNs, "z-worker-0", 0));
  ASSERT_TRUE(w.server().TerminatePod(
      World::kNs, "z-worker-1", 0, "Completed",
      group::FormatEnd(group::EndReason::kStopped, "the group had stopped")));
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("z").value("recoveries", 0) >= 1; }, kWait))
      << w.JobStatus("z").dump() << op->Log();
  EXPECT_NE(Phase(w, "z"), "Succeeded");
  const json st = w.JobStatus("z");
  ASSERT_TRUE(st.contains("lastFailure")) << st.dump();
  EXPECT_EQ(st["lastFailure"].value("exitCode", -1), 0);
}

}  // namespace
}  // namespace ddp::e2e
