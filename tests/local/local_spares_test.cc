// `ddp-operator local` with recovery InPlace and the real ddp-worker (DESIGN.md "Hot spares",
// "Drains, silent nodes and the budget"): a spare takes the rank of a killed pod 0 and the run
// ends bit-identical; a drained pod costs no round and no charge; the failure budget is charged
// once per failure wherever it is seen, and the job fails on the failure past it. Faults come from
// outside as a cluster delivers them (signals to a pod's process group) and from DDP_FAULT.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "worker_job.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

class LocalSparesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
    // Crash signals below must not leave core files behind.
    rlimit none{0, 0};
    setrlimit(RLIMIT_CORE, &none);
  }
  TempDir dir_;
};

// (a) Pod 0's process group is SIGKILLed mid-run (its node died; in local mode a signal the
// operator did not send is a disruption): the idle spare takes rank 0 and is healed by broadcast,
// pod 0 is recreated in the same round and registers as the new idle spare (readySpares back to
// 1), and both ranks end on the fault-free run's parameters.
TEST_F(LocalSparesTest, ASpareTakesRankZeroOfAKilledPodAndTheRunEndsBitIdentical) {
  constexpr int kSteps = 1500;
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  JobOptions o;
  o.name = "spare";
  o.spares = 1;
  o.steps = kSteps;
  LocalJob job(dir_, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 200; },
                      seconds(30)))
      << job.op().Output();
  const pid_t pod0 = job.PodGroup("worker-0");
  ASSERT_GT(pod0, 0);
  ASSERT_EQ(kill(-pod0, SIGKILL), 0);
  ASSERT_EQ(job.op().Wait(seconds(60)), 0) << job.op().Output();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(Int(st, "round"), 0);
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "recoveries"), 0);
  EXPECT_EQ(Int(st, "disruptions"), 1) << st.dump();
  EXPECT_EQ(Int(st, "spares"), 1);
  EXPECT_EQ(Int(st, "readySpares"), 1) << "the recreated pod 0 is the idle spare: " << st.dump();
  EXPECT_EQ(st["lastFailure"]["pod"], "spare-worker-0");
  // The killed pod 0 never finished; the spare did, as rank 0; pod 1 kept rank 1 throughout.
  EXPECT_EQ(LastChecksum(job.PodLog("worker-0")), "");
  const std::string spare_log = job.PodLog("spare-0");
  EXPECT_NE(spare_log.find("summary rank=0 "), std::string::npos) << spare_log;
  EXPECT_EQ(LastChecksum(spare_log), reference) << spare_log;
  EXPECT_EQ(LastChecksum(job.PodLog("worker-1")), reference);
  // The recreated pod 0 (its second log) trained nothing: it waited as the spare.
  const std::string again = job.PodLog("worker-0", 1);
  EXPECT_FALSE(again.empty());
  EXPECT_EQ(LastChecksum(again), "") << again;
}

// (c) A drain: SIGTERM reaches pod 1's processes only. Its supervisor leaves (a departure, not a
// job stop): one disruption, no round, no charge; the new pod 1 is healed in place from pod 0's
// memory, nothing is reloaded, and the run ends on the fault-free parameters.
TEST_F(LocalSparesTest, ADrainedPodIsADisruptionHealedInPlace) {
  constexpr int kSteps = 3000;  // the departure waits out the group's stop window (3 s)
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  JobOptions o;
  o.name = "drain";
  o.steps = kSteps;
  LocalJob job(dir_, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 200; },
                      seconds(30)))
      << job.op().Output();
  const pid_t pod1 = job.PodGroup("worker-1");
  ASSERT_GT(pod1, 0);
  ASSERT_EQ(kill(-pod1, SIGTERM), 0);
  ASSERT_EQ(job.op().Wait(seconds(60)), 0) << job.op().Output();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(Int(st, "round"), 0);
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "recoveries"), 0);
  EXPECT_EQ(Int(st, "disruptions"), 1) << st.dump();
  EXPECT_EQ(st["lastFailure"]["pod"], "drain-worker-1");
  // The operator learns it from the pod's own termination message (Departed) or from the group,
  // which fences a departed pod; either way a disruption of rank 1.
  EXPECT_NE(job.op().Output().find("replacing pod drain-worker-1 (rank 1 disrupted"),
            std::string::npos)
      << job.op().Output();
  EXPECT_EQ(LastChecksum(job.PodLog("worker-0")), reference);
  EXPECT_EQ(LastChecksum(job.PodLog("worker-1", 1)), reference);
  EXPECT_EQ(LastChecksum(job.PodLog("worker-1")), "") << "the drained pod left before the end";
  EXPECT_EQ(job.PodLog("worker-0").find("resumed from checkpoint"), std::string::npos);
  EXPECT_EQ(job.PodLog("worker-1", 1).find("resumed from checkpoint"), std::string::npos);
}

// (b) The budget (issue 19's scenario), maxRestarts 3: rank 1's trainer is killed in its pod
// (healed in place, charged by the group), pod 0's supervisor crashes (SIGABRT: a failure in local
// mode, unlike SIGKILL/SIGTERM which are disruptions; replaced alone, charged by the operator),
// then the replacement's rank 0 trainer is killed twice: the first is charged (3 of 3), the second
// is refused in the pod (BudgetSpent) and the job fails with MaxRestartsExceeded. Each failure is
// charged once: restarts + recoveries end at 3 and never exceed it.
TEST_F(LocalSparesTest, EachFailureIsChargedOnceAndTheOnePastTheBudgetFailsTheJob) {
  const std::string d = dir_.path();
  JobOptions o;
  o.name = "budget";
  o.steps = 20000;  // never reached: the job fails first
  o.fault = "1:50@0:kill";
  // Pods started once the test armed the fault: rank 0 killed at the armed step, every time.
  o.wrapper = "if [ -f " + d + "/armed ]; then export DDP_FAULT=0:$$(cat " + d + "/armed):kill; fi;";
  LocalJob job(dir_, o);
  int most_charged = 0;
  auto charged = [&] {
    const nlohmann::json st = job.Status();
    const int n = std::max(0, Int(st, "restarts")) + std::max(0, Int(st, "recoveries"));
    most_charged = std::max(most_charged, n);
    return st;
  };
  // 1. The in-pod heal reaches the status through the rendezvous pod's report, once.
  ASSERT_TRUE(WaitFor([&] { return Int(charged(), "recoveries") == 1; }, seconds(40)))
      << job.op().Output();
  // 2. Pod 0's supervisor crashes; its replacement's rank 0 will be killed 150 steps later.
  const int now = LocalJob::LastStep(job.PodLog("worker-0"));
  ASSERT_GE(now, 50);
  WriteFileAtomic(d + "/armed", std::to_string(now + 150));
  const pid_t pod0 = job.PodGroup("worker-0");
  ASSERT_GT(pod0, 0);
  ASSERT_EQ(kill(pod0, SIGABRT), 0);
  // 3-4. Two more kills; the job ends.
  ASSERT_TRUE(WaitFor(
      [&] {
        charged();
        return !job.op().running();
      },
      seconds(60)))
      << job.op().Output();
  EXPECT_EQ(job.op().Wait(seconds(1)), 1) << job.op().Output();

  const nlohmann::json st = charged();
  EXPECT_EQ(st["phase"], "Failed") << st.dump();
  EXPECT_EQ(FailedReason(st), "MaxRestartsExceeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0);
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "recoveries"), 3) << st.dump();
  EXPECT_EQ(Int(st, "disruptions"), 0);
  EXPECT_LE(most_charged, 3);
  // The failure past the budget is the replacement pod's, refused in the pod.
  EXPECT_EQ(st["lastFailure"]["pod"], "budget-worker-0");
  EXPECT_NE(st["lastFailure"].value("message", "").find("BudgetSpent"), std::string::npos)
      << st.dump();
  // The crash was counted as a failure (recovery 2 of 3), not as a disruption.
  EXPECT_NE(job.op().Output().find("replacing pod budget-worker-0 (rank 0 killed by signal 6"),
            std::string::npos)
      << job.op().Output();
}

}  // namespace
}  // namespace ddp::testing_local
