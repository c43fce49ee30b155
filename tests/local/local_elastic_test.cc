// `ddp-operator local --scale-at` with an elastic job under recovery InPlace and the real
// ddp-worker (docs/in-place-recovery.md "Resize in place"): 4 pods shrink to 3, then 2, then grow
// back to 4 in the same round. The survivors' pods are never restarted (one process each, the
// same from start to end), no checkpoint is read, nothing is charged, and the job Succeeds.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <gtest/gtest.h>

#include "worker_job.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LocalElasticTest, ShrinksToThreeThenTwoAndGrowsBackToFourInPlace) {
  if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  TempDir dir;
  JobOptions o;
  o.name = "elastic";
  o.replicas = 4;
  o.steps = 3000;
  o.elastic = "{minReplicas: 1, maxReplicas: 4}";
  o.operator_args = {"--scale-at", "300=3,700=2,1100=4"};
  LocalJob job(dir, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 100; },
                      seconds(90)))
      << job.op().Output();
  const pid_t pod0 = job.PodGroup("worker-0"), pod1 = job.PodGroup("worker-1");
  ASSERT_GT(pod0, 0);
  ASSERT_GT(pod1, 0);
  ASSERT_EQ(job.op().Wait(seconds(240)), 0) << job.op().Output();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0) << st.dump();
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "recoveries"), 0);
  EXPECT_EQ(Int(st, "disruptions"), 0) << st.dump();
  EXPECT_EQ(Int(st, "replicas"), 4);
  // Pods 0 and 1 ran one process each, the same from start to end, and trained to the end.
  EXPECT_EQ(job.PodGroup("worker-0"), pod0);
  EXPECT_EQ(job.PodGroup("worker-1"), pod1);
  EXPECT_EQ(job.PodLog("worker-0", 1), "");
  EXPECT_EQ(job.PodLog("worker-1", 1), "");
  const std::string log0 = job.PodLog("worker-0");
  EXPECT_NE(log0.find("resizes the group 4 -> 3"), std::string::npos) << log0;
  EXPECT_NE(log0.find("resizes the group 3 -> 2"), std::string::npos) << log0;
  EXPECT_EQ(log0.find("resumed from checkpoint"), std::string::npos) << log0;
  EXPECT_EQ(log0.find("restarted rank"), std::string::npos) << log0;
  // Pods 2 and 3 left (the group shrank without them) and came back as new pods of round 0.
  EXPECT_NE(job.PodLog("worker-3").find("the group shrank in place without pod"), std::string::npos);
  EXPECT_NE(job.PodLog("worker-2").find("the group shrank in place without pod"), std::string::npos);
  EXPECT_FALSE(job.PodLog("worker-2", 1).empty());
  EXPECT_FALSE(job.PodLog("worker-3", 1).empty());
  // The group resized 4 -> 3 -> 2, then grew back: to 4 at once, or by one pod then the other.
  const std::string rdzv = job.Log("elastic-rendezvous.round0.log");
  const size_t resizes = Count(rdzv, "the group resizes in place");
  EXPECT_GE(resizes, 3u) << rdzv;
  EXPECT_LE(resizes, 4u) << rdzv;
  EXPECT_NE(rdzv.find("-> 4 rank(s)"), std::string::npos) << rdzv;
  const std::string out = job.op().Output();
  // The planner's ResizedInPlace Events, as local mode prints them.
  EXPECT_EQ(Count(out, "pods in place (spec.replicas changed)"), 3u) << out;
}

}  // namespace
}  // namespace ddp::testing_local
