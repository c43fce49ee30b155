// A new store knows what the old one knew (worker/group/authority.h invariant I4), end to end with
// real ddp-worker processes (the test plays the operator): the rendezvous pod is killed and
// replaced while a spare holds a lost member's rank, while the group runs shrunk after a loss, and
// together with a worker pod (while the group trains, and while it assembles). None fences a pod
// that stays, charges a failure, reads a checkpoint or starts a new round.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "tests/worker/inplace_util.h"

namespace ddp::testing {
namespace {

bool Logged(const Proc& p, const std::string& what) {
  return ReadAll(p.err_path).find(what) != std::string::npos;
}

// The operator replaces a lost rendezvous pod: the same name, a new, empty store.
void ReplaceRendezvous(InPlaceGroup* g, const std::string& tag) {
  kill(-g->rendezvous.pid, SIGKILL);
  WaitProc(g->rendezvous, std::chrono::seconds(30));
  auto renv = PodEnv(*g, "rendezvous", -1);
  renv["DDP_POD_ROLE"] = "rendezvous";
  g->rendezvous = StartProc(kWorkerBin, {"rendezvous"}, renv, g->dir, tag);
}

// Spare "aspare0" (its name sorts before "pod1") took node rank 1 after pod 1 was killed, and
// pod 1's replacement idles as the new spare; then the rendezvous pod is lost. The spare keeps
// rank 1 with the new store: no pod ends Fenced, nobody is healed again, every rank ends with
// the uninterrupted run's parameters.
TEST(ReseedE2E, ASpareThatTookARankKeepsItWhenTheStoreIsLost) {
  const std::string dir = MakeTempDir("ddp-e2e-reseed-spare");
  const auto args = TinyArgs(2500);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {});
  KillOnExit reaper{&g};
  StartPod(&g, "aspare0", -1);  // g.pods[2]
  const auto deadline = std::chrono::seconds(120);
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= 100; }, deadline));
  kill(-g.pods[1].pid, SIGKILL);
  WaitProc(g.pods[1], std::chrono::seconds(30));
  ASSERT_TRUE(PollUntil([&] { return Logged(g.rendezvous, "spare aspare0 takes node rank 1"); },
                        deadline))
      << ReadAll(g.rendezvous.err_path);
  StartPod(&g, "pod1", 1);  // g.pods[3]: the replacement, its rank held by the spare
  ASSERT_TRUE(PollUntil([&] { return Logged(g.pods[3], "registered with the group"); }, deadline))
      << ReadAll(g.pods[3].err_path);
  const int64_t at_loss = LastStep(g.pods[0]);
  ReplaceRendezvous(&g, "rendezvous-reseed");
  PodsResult r = Wait(g);
  EXPECT_LT(at_loss, 2400) << "the store was lost before the end";
  for (size_t p : {0u, 2u, 3u}) {
    EXPECT_EQ(r.ends[p].find("ddp: Fenced"), std::string::npos) << p << ": " << r.ends[p];
  }
  ExpectAllEqual(r, want, {0, 2});
  EXPECT_NE(r.rendezvous_err.find("pod aspare0 takes node rank 1 back"), std::string::npos)
      << r.rendezvous_err;
  // One heal: the spare's, when it took rank 1; none after the store's loss.
  EXPECT_EQ(Count(r.err[0], "healed 1 member(s)"), 1u) << r.err[0];
  EXPECT_EQ(r.err[0].find("resumed from checkpoint"), std::string::npos) << r.err[0];
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// The group shrank 3 -> 2 on pod 1's loss (no spare, DDP_MIN_NODES 2), then the rendezvous pod is
// lost. The new store trains at 2, as the members' copy says, not at the 3 asked for: when pod 0's
// trainer is killed later, the group re-forms at 2 with the new store at once (at 3, rank 2 would
// never arrive and the group would be abandoned after the rendezvous timeout, a new round); the
// replacement of pod 1 then grows it back to 3. Every pod ends Finished, no checkpoint is read.
TEST(ReseedE2E, AShrunkGroupKeepsItsSizeWithANewStoreAndStillGrowsBack) {
  const std::string dir = MakeTempDir("ddp-e2e-reseed-shrunk");
  const std::string size_file = dir + "/group-size";
  std::ofstream(size_file) << "3\n";
  const auto args = TinyArgs(3000);
  InPlaceGroup g = StartInPlace(
      3, args, dir, {{1, "1:150@0:kill-pod"}, {0, "0:1200@0:kill"}},
      {{"DDP_GROUP_SIZE_FILE", size_file}, {"DDP_MIN_NODES", "2"}, {"DDP_MAX_NODES", "3"}});
  KillOnExit reaper{&g};
  const auto deadline = std::chrono::seconds(120);
  ASSERT_TRUE(PollUntil([&] { return Logged(g.pods[0], "resizes the group 3 -> 2"); }, deadline))
      << ReadAll(g.rendezvous.err_path);
  // The survivors' supervisors hold the shrink's copy of the membership (they read it a moment
  // after the trainers re-form; a store lost before that is seeded at 3 and shrinks again once
  // pod 1 misses the rejoin window, which is not this test's path).
  for (size_t p : {0u, 2u}) {
    ASSERT_TRUE(PollUntil([&] { return Logged(g.pods[p], "membership copy: 2 node rank(s)"); },
                          deadline))
        << ReadAll(g.pods[p].err_path);
  }
  const int64_t at_loss = LastStep(g.pods[0]);
  ReplaceRendezvous(&g, "rendezvous-reseed-shrunk");
  ASSERT_TRUE(PollUntil([&] { return Logged(g.rendezvous, "trained at 2 node rank(s)"); },
                        deadline))
      << ReadAll(g.rendezvous.err_path);
  // Pod 0's trainer is killed at step 1200 (its supervisor restarts it in place); then the
  // replacement of pod 1, as the operator creates it.
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= 1300; }, deadline))
      << ReadAll(g.pods[0].err_path);
  StartPod(&g, "pod1", 1);  // g.pods[3]
  ASSERT_TRUE(PollUntil([&] { return Logged(g.pods[0], "resizes the group 2 -> 3"); }, deadline))
      << ReadAll(g.rendezvous.err_path);
  PodsResult r = Wait(g);
  EXPECT_LT(at_loss, 1200) << "the store was lost before the trainer was killed";
  EXPECT_NE(r.err[0].find("restarted rank 0"), std::string::npos) << r.err[0];
  for (size_t p : {0u, 2u, 3u}) {
    EXPECT_EQ(r.codes[p], 0) << p << "\n" << r.err[p];
    EXPECT_EQ(r.ends[p].rfind("ddp: Finished", 0), 0u) << p << ": " << r.ends[p];
    EXPECT_EQ(r.err[p].find("resumed from checkpoint"), std::string::npos) << r.err[p];
  }
  EXPECT_EQ(r.rendezvous_err.find("abandoning the round"), std::string::npos) << r.rendezvous_err;
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// The rendezvous pod and pod 1 are deleted together (as `kubectl delete pod` of both): pod 1's
// SIGTERM finds no store to say it is leaving. It must not stop the group's trainers (a stop is
// agreed in the collectives, so pod 0's trainer would stop too and its restart be charged): it
// says so to the new store and departs alone; pod 0 trains on and heals pod 1's replacement.
TEST(ReseedE2E, APodDeletedWithTheRendezvousPodDepartsAloneAndNothingIsCharged) {
  const std::string dir = MakeTempDir("ddp-e2e-reseed-leave");
  InPlaceGroup g = StartInPlace(2, TinyArgs(2500), dir, {});
  KillOnExit reaper{&g};
  const auto deadline = std::chrono::seconds(120);
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= 100; }, deadline))
      << ReadAll(g.pods[0].err_path);
  kill(-g.rendezvous.pid, SIGKILL);
  WaitProc(g.rendezvous, std::chrono::seconds(30));
  kill(g.pods[1].pid, SIGTERM);  // its supervisor's, as the kubelet sends it
  ASSERT_TRUE(PollUntil([&] { return Logged(g.pods[1], "leaving the group"); }, deadline))
      << ReadAll(g.pods[1].err_path);
  const int64_t at_loss = LastStep(g.pods[0]);
  auto renv = PodEnv(g, "rendezvous", -1);
  renv["DDP_POD_ROLE"] = "rendezvous";
  g.rendezvous = StartProc(kWorkerBin, {"rendezvous"}, renv, g.dir, "rendezvous-reseed-leave");
  WaitProc(g.pods[1], std::chrono::seconds(60));
  StartPod(&g, "pod1", 1);  // g.pods[2]: the operator's replacement, once the old pod is gone
  PodsResult r = Wait(g);
  EXPECT_LT(at_loss, 2300) << "the store was lost before the end";
  EXPECT_EQ(r.ends[1].rfind("ddp: Departed", 0), 0u) << r.ends[1] << "\n" << r.err[1];
  for (size_t p : {0u, 2u}) {
    EXPECT_EQ(r.codes[p], 0) << p << "\n" << r.err[p];
    EXPECT_EQ(r.ends[p].rfind("ddp: Finished: step 2500 of 2500; 0 recoveries", 0), 0u)
        << p << ": " << r.ends[p];
    EXPECT_EQ(r.err[p].find("resumed from checkpoint"), std::string::npos) << r.err[p];
  }
  // Pod 0's trainer never stopped: one incarnation, healed pod 1's replacement in place.
  EXPECT_EQ(r.err[0].find("restarted rank 0"), std::string::npos) << r.err[0];
  EXPECT_EQ(r.err[0].find("stopped by signal"), std::string::npos) << r.err[0];
  EXPECT_NE(r.err[1].find("told the new store it is leaving"), std::string::npos) << r.err[1];
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// As a job starts: pod 1 has registered and holds node rank 1, pod 0's pod has not registered
// yet (its start is slow), and pod 1 is deleted (moved to another node), then the rendezvous pod.
// Pod 1's SIGTERM is not every member's: it departs and nothing stops (a Stopped pod would end
// the round); with the new rendezvous pod, pod 0 and pod 1's replacement the group forms and
// trains to the end.
TEST(ReseedE2E, APodDeletedWhileTheGroupAssemblesDepartsAndStopsNothing) {
  const std::string dir = MakeTempDir("ddp-e2e-reseed-assembling");
  InPlaceGroup g;
  g.n = 2;
  g.args = TinyArgs(300);
  g.dir = dir;
  g.env = {{"MASTER_PORT", std::to_string(FreePort())}, {"DDP_RENDEZVOUS_TIMEOUT", "60"},
           {"DDP_LIVENESS_TIMEOUT", "5"}};
  auto renv = PodEnv(g, "rendezvous", -1);
  renv["DDP_POD_ROLE"] = "rendezvous";
  g.rendezvous = StartProc(kWorkerBin, {"rendezvous"}, renv, dir, "rendezvous-assembling-1");
  KillOnExit reaper{&g};
  StartPod(&g, "pod1", 1);  // g.pods[0]
  const auto deadline = std::chrono::seconds(120);
  ASSERT_TRUE(PollUntil([&] { return Logged(g.pods[0], "node rank 1: rank 1"); }, deadline))
      << ReadAll(g.pods[0].err_path);
  kill(g.pods[0].pid, SIGTERM);
  ASSERT_TRUE(PollUntil(
      [&] { return Logged(g.rendezvous, "departs") || Logged(g.rendezvous, "job stops"); }, deadline))
      << ReadAll(g.rendezvous.err_path);
  const std::string authority = ReadAll(g.rendezvous.err_path);
  kill(g.rendezvous.pid, SIGTERM);
  WaitProc(g.pods[0], std::chrono::seconds(60));
  WaitProc(g.rendezvous, std::chrono::seconds(60));
  g.rendezvous = StartProc(kWorkerBin, {"rendezvous"}, renv, dir, "rendezvous-assembling-2");
  StartPod(&g, "pod0", 0);  // g.pods[1]
  StartPod(&g, "pod1", 1);  // g.pods[2]: the replacement
  PodsResult r = Wait(g);
  EXPECT_EQ(authority.find("job stops"), std::string::npos) << authority;
  EXPECT_EQ(r.ends[0].rfind("ddp: Departed", 0), 0u) << r.ends[0] << "\n" << r.err[0];
  for (size_t p : {1u, 2u}) {
    EXPECT_EQ(r.codes[p], 0) << p << "\n" << r.err[p];
    EXPECT_EQ(r.ends[p].rfind("ddp: Finished: step 300 of 300; 0 recoveries", 0), 0u)
        << p << ": " << r.ends[p];
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// An idle spare gets SIGTERM after the rendezvous pod was lost: no store to say it is leaving,
// and none comes back in time. It holds no rank, so it has nothing to save: it leaves once the
// verdict's wait is over, not when the kubelet's SIGKILL comes.
TEST(ReseedE2E, ASpareSigtermedWithNoStoreLeavesOnceTheVerdictWaitIsOver) {
  const std::string dir = MakeTempDir("ddp-e2e-reseed-spare-leave");
  InPlaceGroup g = StartInPlace(2, TinyArgs(2500), dir, {}, {}, /*spares=*/1);
  KillOnExit reaper{&g};
  const auto deadline = std::chrono::seconds(120);
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= 100; }, deadline))
      << ReadAll(g.pods[0].err_path);
  ASSERT_TRUE(Logged(g.pods[2], "registered with the group")) << ReadAll(g.pods[2].err_path);
  kill(-g.rendezvous.pid, SIGKILL);
  WaitProc(g.rendezvous, std::chrono::seconds(30));
  kill(g.pods[2].pid, SIGTERM);  // the spare's supervisor
  // The wait is the liveness timeout (5 s) and 5 s: it ends well within 40 s.
  const auto code = WaitProc(g.pods[2], std::chrono::seconds(40));
  EXPECT_EQ(code, 75) << ReadAll(g.pods[2].err_path);
  std::string end;
  std::getline(std::ifstream(g.end_paths[2]), end);
  EXPECT_EQ(end.rfind("ddp: Departed", 0), 0u) << end;
  // The group trains on: a new rendezvous pod, and both workers finish.
  auto renv = PodEnv(g, "rendezvous", -1);
  renv["DDP_POD_ROLE"] = "rendezvous";
  g.rendezvous = StartProc(kWorkerBin, {"rendezvous"}, renv, dir, "rendezvous-spare-leave");
  PodsResult r = Wait(g);
  for (size_t p : {0u, 1u}) {
    EXPECT_EQ(r.codes[p], 0) << p << "\n" << r.err[p];
    EXPECT_EQ(r.ends[p].rfind("ddp: Finished", 0), 0u) << p << ": " << r.ends[p];
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
