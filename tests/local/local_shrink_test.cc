// `ddp-operator local` with an elastic job under recovery InPlace, no spare, and pods that take
// kStartDelay to start (--pod-start-delay: a cluster's scheduling, image pull and container
// start; local pods otherwise start in milliseconds). A pod lost mid-run costs the group no wait
// for its replacement (docs/failures-and-elasticity.md "A loss without a spare"): the group goes
// on at 3 at once, pod 3 moving into the lost node rank 1 with its state; the status says why it
// runs smaller (BelowSize, MemberLost); the replacement, once started, prepares outside the group
// for the node rank pod 3 left and the group grows back to 4. One disruption, round 0, no
// checkpoint read, every finisher on the same parameters. And a group that finishes while it runs
// smaller has finished (issue 51), whatever its replacement is doing.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <signal.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "worker_job.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

constexpr int kStartDelay = 12;  // seconds: every pod's, the replacement's among them

std::string Condition(const nlohmann::json& st, const std::string& type) {
  if (!st.contains("conditions")) return "";
  for (const auto& c : st["conditions"]) {
    if (c.value("type", "") == type) return c.value("status", "") + "/" + c.value("reason", "");
  }
  return "";
}

TEST(LocalShrinkTest, ALostPodCostsNoWaitForItsReplacementAndTheGroupGrowsBack) {
  if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  TempDir dir;
  JobOptions o;
  o.name = "shrink";
  o.replicas = 4;
  o.steps = 12000;
  o.elastic = "{minReplicas: 2, maxReplicas: 4}";
  o.operator_args = {"--pod-start-delay", std::to_string(kStartDelay)};
  LocalJob job(dir, o);
  const auto start = seconds(kStartDelay + 120);  // a loaded machine starts 5 pods slowly
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 300; }, start))
      << job.op().Output();
  const pid_t pod1 = job.PodGroup("worker-1");
  ASSERT_GT(pod1, 0);
  ASSERT_EQ(kill(-pod1, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  const int at_kill = LocalJob::LastStep(job.PodLog("worker-0"));

  // Training goes on while the replacement starts: 100 steps well inside its start delay, and
  // the status says why the group runs smaller.
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= at_kill + 100; },
                      seconds(kStartDelay - 2)))
      << "rank 0 stood still after the loss\n" << job.Log("shrink-rendezvous.round0.log");
  const double went_on =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_LT(went_on, kStartDelay - 2.0);
  ASSERT_TRUE(WaitFor([&] { return Condition(job.Status(), "BelowSize") == "True/MemberLost"; },
                      seconds(kStartDelay)))
      << job.Status().dump();
  EXPECT_TRUE(job.PodLog("worker-1", 1).empty()) << "the replacement has not started yet";

  // The replacement starts, prepares for node rank 3 and the group grows back to 4.
  const std::string rdzv_log = "shrink-rendezvous.round0.log";
  ASSERT_TRUE(WaitFor([&] { return job.Log(rdzv_log).find("3 -> 4 rank(s)") != std::string::npos; },
                      seconds(kStartDelay + 90)))
      << job.Log(rdzv_log);
  ASSERT_EQ(job.op().Wait(seconds(300)), 0) << job.op().Output();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0) << st.dump();
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "recoveries"), 0);
  EXPECT_EQ(Int(st, "disruptions"), 1) << "the loss, charged once: " << st.dump();
  EXPECT_EQ(Int(st, "replicas"), 4);
  EXPECT_EQ(Int(st, "worldSize"), 4) << st.dump();
  EXPECT_EQ(Condition(st, "BelowSize"), "False/AtSize") << st.dump();
  const std::string rdzv = job.Log(rdzv_log);
  EXPECT_NE(rdzv.find("pod shrink-worker-3 moves from node rank 3 to 1"), std::string::npos) << rdzv;
  EXPECT_NE(rdzv.find("4 -> 3 rank(s)"), std::string::npos) << rdzv;
  EXPECT_NE(rdzv.find("its members leaving at a step agreement"), std::string::npos)
      << "the growth back is graceful: " << rdzv;
  // Pod 3 trained on as rank 1 (its one trainer, its state); the replacement joined prepared.
  const std::string log3 = job.PodLog("worker-3");
  EXPECT_NE(log3.find("gives it rank 1 with its state"), std::string::npos) << log3;
  EXPECT_NE(log3.find("summary rank=1 "), std::string::npos) << log3;
  const std::string again = job.PodLog("worker-1", 1);
  EXPECT_NE(again.find("prepares outside the group (node rank 3"), std::string::npos) << again;
  EXPECT_NE(again.find("its prepared trainers join the group"), std::string::npos) << again;
  EXPECT_NE(again.find("summary rank=3 "), std::string::npos) << again;
  // Nothing was read back, and every finisher ended on the same parameters.
  const std::string want = LastChecksum(job.PodLog("worker-0"));
  ASSERT_FALSE(want.empty());
  for (const std::string& log : {job.PodLog("worker-2"), log3, again}) {
    EXPECT_EQ(LastChecksum(log), want) << log;
  }
  for (const char* pod : {"worker-0", "worker-2", "worker-3"}) {
    EXPECT_EQ(job.PodLog(pod).find("resumed from checkpoint"), std::string::npos) << pod;
  }
  EXPECT_EQ(again.find("resumed from checkpoint"), std::string::npos) << again;
}

// Issue 51's case: 3 pods, minReplicas 2, no spare; pod 1 is killed and its replacement is slow to
// start (its process runs, but ddp-worker does not start while the file `slow` exists: until the
// test ends), so the group trains to the end at 2. The job ends Succeeded in round 0 once the two
// members finished, the replacement is stopped, and nothing is read back from a checkpoint.
// Before 6533aa0 the replacement, still starting, held the finish back (with this one's start
// that never ends, the operator never exits: checked with 6533aa0's plan.cc reverted); in the
// issue's run it then found no store, ended GroupAbandoned, and round 1 resumed from the
// checkpoint.
TEST(LocalShrinkTest, AGroupThatFinishesWhileShrunkHasFinished) {
  if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  TempDir dir;
  const std::string slow = dir.path() + "/slow";
  // Whatever the outcome, a replacement still waiting ends within a second of the test.
  struct Unblock {
    std::string path;
    ~Unblock() { std::remove(path.c_str()); }
  } unblock{slow};
  JobOptions o;
  o.name = "finish";
  o.replicas = 3;
  o.steps = 2000;
  o.elastic = "{minReplicas: 2, maxReplicas: 3}";
  // Pods started after the kill wait; once the file is gone they leave without training.
  o.wrapper =
      "if [ -f " + slow + " ]; then while [ -f " + slow + " ]; do sleep 1; done; exit 75; fi;";
  LocalJob job(dir, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 300; },
                      seconds(120)))
      << job.op().Output();
  WriteFileAtomic(slow, "1");
  const pid_t pod1 = job.PodGroup("worker-1");
  ASSERT_GT(pod1, 0);
  ASSERT_EQ(kill(-pod1, SIGKILL), 0);
  ASSERT_EQ(job.op().Wait(seconds(300)), 0) << job.op().Output();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0) << st.dump();
  EXPECT_EQ(Int(st, "restarts"), 0) << st.dump();
  EXPECT_EQ(Int(st, "disruptions"), 1) << "the loss, charged once: " << st.dump();
  const std::string rdzv = job.Log("finish-rendezvous.round0.log");
  EXPECT_NE(rdzv.find("3 -> 2 rank(s)"), std::string::npos) << rdzv;
  EXPECT_EQ(rdzv.find("2 -> 3 rank(s)"), std::string::npos) << "it never grew back: " << rdzv;
  // Both members trained to the end at 2, on the same parameters; nothing was read back.
  const std::string log0 = job.PodLog("worker-0"), log2 = job.PodLog("worker-2");
  EXPECT_EQ(LocalJob::LastStep(log0), o.steps) << log0;
  EXPECT_FALSE(LastChecksum(log0).empty()) << log0;
  EXPECT_EQ(LastChecksum(log2), LastChecksum(log0)) << log2;
  for (const std::string& log : {log0, log2}) {
    EXPECT_EQ(log.find("resumed from checkpoint"), std::string::npos) << log;
  }
  EXPECT_EQ(job.PodLog("worker-1", 1).find("summary rank="), std::string::npos)
      << "the replacement never trained";
  EXPECT_TRUE(job.PodLog("worker-0", 0, 1).empty()) << "no round 1";
}

}  // namespace
}  // namespace ddp::testing_local
