// The dead that come back, in `ddp-operator local` with the real ddp-worker: the rendezvous pod
// and pod 1 frozen together (a node lost), both replaced, the group healed in place; then pod 1's
// old process is thawed while the job trains, as on a node that thaws or whose partition heals.
// Its pod object is gone (force-deleted), but its processes were not killed: here it runs in a
// session of its own, out of reach of the force delete (a partitioned node's kubelet never hears
// of the delete). It must find that it was replaced and end, charging nothing, while its
// replacement keeps the rank: Succeeded, round 0, no recovery, one checksum.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "worker_job.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

class LocalReturnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  }
  TempDir dir_;
};

TEST_F(LocalReturnTest, APodThawedAfterItsReplacementTookItsRankEndsAndChargesNothing) {
  constexpr int kSteps = 1500;
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  JobOptions o;
  o.name = "back";
  o.steps = kSteps;
  // Pod 1's worker in a session of its own: the force delete kills its shell, not the worker.
  o.wrapper = "if [ \"$DDP_POD_NAME\" = back-worker-1 ]; then exec setsid -w " + WorkerBin() +
              " \"$@\"; fi;";
  LocalJob job(dir_, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 200; },
                      seconds(60)))
      << job.op().Output();
  const pid_t store = ProcessGroupsOfPod("back-rendezvous").back();
  const std::vector<pid_t> pod1 = ProcessGroupsOfPod("back-worker-1");
  ASSERT_GT(store, 0);
  ASSERT_GE(pod1.size(), 2u) << "the shell's group and the worker's own session";
  ASSERT_EQ(kill(-store, SIGSTOP), 0);
  for (pid_t g : pod1) ASSERT_EQ(kill(-g, SIGSTOP), 0);
  // Both replaced and healed: the new store fenced the old pod 1 when its replacement registered.
  ASSERT_TRUE(WaitFor([&] {
    return job.PodLog("worker-0").find("healed 1 member(s) from rank 0") != std::string::npos;
  }, seconds(90))) << job.op().Output();
  const int at_thaw = LocalJob::LastStep(job.PodLog("worker-0"));
  ASSERT_LT(at_thaw, kSteps - 100) << "the run ended before the old process could come back";
  for (pid_t g : pod1) kill(-g, SIGCONT);  // the shell's group is gone; the worker's is not
  ASSERT_EQ(job.op().Wait(seconds(120)), 0) << job.op().Output();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0) << st.dump();
  EXPECT_EQ(Int(st, "restarts"), 0) << st.dump();
  EXPECT_EQ(Int(st, "recoveries"), 0) << st.dump();  // nothing charged for the returning process
  // The old process learned it was replaced (its name taken, or the group's verdict on it), and
  // ended.
  const std::string old_log = job.PodLog("worker-1");
  EXPECT_TRUE(old_log.find("was replaced") != std::string::npos ||
              old_log.find("declared pod back-worker-1") != std::string::npos ||
              old_log.find("given the verdict fenced by the group") != std::string::npos)
      << old_log;
  EXPECT_TRUE(WaitFor([&] { return kill(-pod1.back(), 0) != 0; }, seconds(30)))
      << "the old process is still running";
  // The replacement kept the rank to the end, on the fault-free parameters, as did pod 0.
  const std::string again = job.PodLog("worker-1", 1);
  EXPECT_EQ(again.find("restarted rank"), std::string::npos) << again;
  EXPECT_EQ(LastChecksum(again), reference) << again;
  EXPECT_EQ(LastChecksum(job.PodLog("worker-0")), reference);
}

}  // namespace
}  // namespace ddp::testing_local
