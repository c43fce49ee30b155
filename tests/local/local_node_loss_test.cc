// A silent node under the store and a worker, in `ddp-operator local` with the real ddp-worker
// (DESIGN.md "In-place recovery"; operator/plan/silent_rendezvous.h, worker/group/rejoin.h): the
// rendezvous pod and pod 1 frozen together (SIGSTOP of both process groups: their ports accept
// connections and answer nothing, as a frozen node's do). The operator finds the rendezvous page
// silent for livenessTimeoutSeconds and replaces the store; its probes of pod 1 fail too, but
// local mode has no node that Kubernetes could call lost, and the operator's failing probes alone
// never replace a member (a partition between the operator and a live node looks the same).
// Pod 0 registers with the new store; the new authority declares pod 1 lost once its rejoin
// window passes without it, the operator replaces pod 1 on that word, and the group heals in
// place from pod 0. Only the store frozen: every worker answers its probe and none is replaced.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "worker_job.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

class LocalNodeLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  }
  TempDir dir_;
};

TEST_F(LocalNodeLossTest, AWorkerFrozenWithTheStoreIsReplacedOnItsGroupsWordAndHealedInTheSameRound) {
  constexpr int kSteps = 1500;
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  JobOptions o;
  o.name = "frozen";
  o.steps = kSteps;
  LocalJob job(dir_, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 200; },
                      seconds(60)))
      << job.op().Output();
  const pid_t store = ProcessGroupsOfPod("frozen-rendezvous").back();
  const pid_t pod1 = job.PodGroup("worker-1");
  ASSERT_GT(store, 0);
  ASSERT_GT(pod1, 0);
  ASSERT_EQ(kill(-store, SIGSTOP), 0);
  ASSERT_EQ(kill(-pod1, SIGSTOP), 0);
  const int at_freeze = LocalJob::LastStep(job.PodLog("worker-0"));
  const auto frozen = std::chrono::steady_clock::now();
  ASSERT_EQ(job.op().Wait(seconds(120)), 0) << job.op().Output();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - frozen).count();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0) << st.dump();
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "disruptions"), 1) << st.dump();  // pod 1, once
  EXPECT_EQ(st["lastFailure"]["pod"], "frozen-worker-1") << st.dump();
  // The force deletes killed both frozen process groups.
  EXPECT_NE(kill(-store, 0), 0);
  EXPECT_NE(kill(-pod1, 0), 0);
  // Pod 0 kept its process and healed the new pod 1 from its memory: the fault-free parameters.
  const std::string pod0 = job.PodLog("worker-0");
  EXPECT_NE(pod0.find("registered again with a new store"), std::string::npos) << pod0;
  EXPECT_NE(pod0.find("healed 1 member(s) from rank 0"), std::string::npos) << pod0;
  EXPECT_EQ(pod0.find("restarted rank"), std::string::npos) << pod0;
  EXPECT_EQ(LastChecksum(pod0), reference);
  const std::string again = job.PodLog("worker-1", 1);
  EXPECT_EQ(again.find("resumed from checkpoint"), std::string::npos) << again;
  EXPECT_EQ(LastChecksum(again), reference) << again;
  EXPECT_GT(LocalJob::LastStep(pod0), at_freeze);
  // The operator replaced the store on its silence and pod 1 only on its group's word: the new
  // store declared it lost when it did not register again, never the operator's probes.
  EXPECT_EQ(job.op().Output().find("lost with its node"), std::string::npos) << job.op().Output();
  const std::string store_log = job.PodLog("rendezvous", 1);
  EXPECT_NE(store_log.find("did not register again"), std::string::npos) << store_log;
  std::cout << "store and worker frozen at step " << at_freeze << ": the job ended " << took
            << " s later" << std::endl;
}

// Only the store frozen: the workers answer their probes, so none is replaced; the store is, and
// the group trains on without a disruption.
TEST_F(LocalNodeLossTest, OnlyTheStoreFrozenReplacesNoWorker) {
  // Long enough to still train when the store is replaced (the liveness timeout, 5 s, and a
  // probe after the freeze): at 1,500 the job once ended as the new store was created, which
  // never started.
  constexpr int kSteps = 4000;
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  JobOptions o;
  o.name = "storeonly";
  o.steps = kSteps;
  LocalJob job(dir_, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 200; },
                      seconds(60)))
      << job.op().Output();
  const pid_t store = ProcessGroupsOfPod("storeonly-rendezvous").back();
  ASSERT_GT(store, 0);
  ASSERT_EQ(kill(-store, SIGSTOP), 0);
  // Hold the run until the operator has replaced the store (its second log), so the probes ran.
  ASSERT_TRUE(WaitFor([&] { return !job.PodLog("rendezvous", 1).empty(); }, seconds(60)))
      << job.op().Output();
  ASSERT_EQ(job.op().Wait(seconds(120)), 0) << job.op().Output();
  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0);
  EXPECT_EQ(Int(st, "disruptions"), 0) << st.dump();
  EXPECT_TRUE(job.PodLog("worker-1", 1).empty());
  EXPECT_EQ(job.op().Output().find("lost with its node"), std::string::npos) << job.op().Output();
  EXPECT_EQ(LastChecksum(job.PodLog("worker-0")), reference);
  EXPECT_EQ(LastChecksum(job.PodLog("worker-1")), reference);
}

}  // namespace
}  // namespace ddp::testing_local
