// A silent node under the store, end to end with whole pods (the test plays the operator): the
// rendezvous pod frozen (SIGSTOP of its process group: its host accepts connections and answers
// nothing, as a frozen node does), alone or with a worker pod. The group must outlive it: training
// goes on, finished pods leave, and a member frozen with the store is declared lost by the store
// that replaces it (worker/group/rejoin.h) and healed in place, in the same round, from the
// survivor. Expected parameters come from an uninterrupted run of the same config.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>

#include "tests/worker/inplace_util.h"

namespace ddp::testing {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool Logged(const Proc& p, const std::string& what, std::chrono::seconds within) {
  return PollUntil([&] { return ReadAll(p.err_path).find(what) != std::string::npos; }, within);
}

// The rendezvous pod frozen for good and never replaced: every pod still trains to the end, says
// Finished (with what it knows: the store cannot tell the count) and leaves within a bounded
// time, with the uninterrupted run's parameters.
TEST(NodeLossE2E, TheStoreFrozenAloneStopsNoTrainingAndFinishedPodsStillLeave) {
  const std::string dir = MakeTempDir("ddp-e2e-storefrozen");
  const auto args = TinyArgs(400);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {}, {{"DDP_LIVENESS_TIMEOUT", "3"}});
  const bool trained =
      PollUntil([&] { return LastStep(g.pods[0]) >= 50; }, std::chrono::seconds(150));
  if (trained) kill(-g.rendezvous.pid, SIGSTOP);
  const auto frozen = Clock::now();
  std::vector<std::optional<int>> codes;
  for (const Proc& p : g.pods) codes.push_back(WaitProc(p, std::chrono::seconds(150)));
  const double left = Since(frozen);
  kill(-g.rendezvous.pid, SIGKILL);  // the operator's force delete; it never woke up
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained) << r.err[0];
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_EQ(codes[p], 0) << r.err[p];
    EXPECT_EQ(r.ends[p].rfind("ddp: Finished", 0), 0u) << r.ends[p] << "\n" << r.err[p];
    EXPECT_EQ(r.err[p].find("restarted rank"), std::string::npos) << r.err[p];
  }
  ExpectAllEqual(r, want);
  // 350 steps of a tiny model take seconds on a quiet machine; every wait on the silent store is bounded by the
  // liveness timeout (3 s) or the trainers' 10 s store timeout, a few times over.
  EXPECT_LT(left, 90) << r.err[0];
  std::filesystem::remove_all(dir);
}

// The rendezvous pod and pod 1 frozen together (one node): the operator replaces the silent
// rendezvous pod; pod 0 registers again and hands over the old membership; the new authority
// declares pod 1 lost after the rejoin window (nothing of it ever reaches the new store), the
// operator replaces it, and the group heals in place from pod 0: no checkpoint, no new round.
TEST(NodeLossE2E, TheStoreFrozenWithAWorkerIsHealedInTheSameRoundByTheNewStore) {
  const std::string dir = MakeTempDir("ddp-e2e-storeworker");
  const auto args = TinyArgs(500);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {}, {{"DDP_LIVENESS_TIMEOUT", "3"}});
  const bool trained =
      PollUntil([&] { return LastStep(g.pods[0]) >= 50; }, std::chrono::seconds(150));
  if (trained) {
    kill(-g.rendezvous.pid, SIGSTOP);
    kill(-g.pods[1].pid, SIGSTOP);
  }
  const auto frozen = Clock::now();
  const int64_t at_freeze = LastStep(g.pods[0]);
  // The operator: the rendezvous pod's page silent for the liveness timeout -> force-deleted (the
  // local executor's SIGKILL frees its port, as a new pod IP would) and created again.
  PollUntil([&] { return Since(frozen) >= 3; }, std::chrono::seconds(4));
  kill(-g.rendezvous.pid, SIGKILL);
  WaitProc(g.rendezvous, std::chrono::seconds(10));
  auto renv = PodEnv(g, "rendezvous", -1);
  renv["DDP_POD_ROLE"] = "rendezvous";
  g.rendezvous = StartProc(kWorkerBin, {"rendezvous"}, renv, dir, "rendezvous-new");
  // The new authority declares pod 1 lost (ddp_group_fenced on its page): the operator
  // force-deletes it and creates its replacement.
  const bool fenced = Logged(g.rendezvous, "pod pod1 of node rank 1 lost", std::chrono::seconds(30));
  const double fenced_after = Since(frozen);
  kill(-g.pods[1].pid, SIGKILL);
  WaitProc(g.pods[1], std::chrono::seconds(10));
  StartPod(&g, "pod1", 1);
  const bool resumed =
      PollUntil([&] { return LastStep(g.pods[0]) > at_freeze + 1; }, std::chrono::seconds(60));
  const double stall = Since(frozen);
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained) << r.err[0];
  ASSERT_TRUE(fenced) << r.rendezvous_err;
  ASSERT_TRUE(resumed) << r.err[0];
  std::cout << "store and worker frozen: fenced after " << fenced_after << " s, training resumed "
            << stall << " s after the freeze" << std::endl;
  ExpectAllEqual(r, want, {0, 2});
  EXPECT_NE(r.err[0].find("registered again with a new store"), std::string::npos) << r.err[0];
  EXPECT_NE(r.err[0].find("healed 1 member(s) from rank 0"), std::string::npos) << r.err[0];
  EXPECT_EQ(r.err[2].find("resumed from checkpoint"), std::string::npos) << r.err[2];
  EXPECT_EQ(r.err[0].find("restarted rank"), std::string::npos) << r.err[0];
  // The operator's wait (the liveness timeout, 3 s) + the new rendezvous pod's start + the
  // rejoin window (2 s): the start of a ddp-worker process is most of the slack on a loaded
  // machine. Training resumes after the replacement's start on top; a survivor not released by
  // the new store would have hit its collective timeout (20 s) and restarted its trainer, which
  // the check on "restarted rank" above rules out.
  EXPECT_LT(fenced_after, 3 + 2 + 10) << r.rendezvous_err;
  EXPECT_LT(stall, 3 + 2 + 10 + 20) << r.err[0];
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
