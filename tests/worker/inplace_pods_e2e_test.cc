// In-place recovery end to end, whole pods, as a cluster delivers their failures: a pod killed
// (its sockets reset), a pod drained (SIGTERM to it alone), the whole job stopped (SIGTERM to
// every pod, a second apart), a pod frozen (SIGSTOP of its process group: a silent node), the
// rendezvous pod lost, a spare taking a lost member's rank, a member that never comes back.
// Expected parameters come from an uninterrupted run of the same config.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>

#include "tests/worker/inplace_util.h"

namespace ddp::testing {
namespace {

// Kills pod `p`'s whole process group once rank 0 logged `step`; false if it never did.
bool KillAtStep(const InPlaceGroup& g, const Proc& p, int64_t step, int sig = SIGKILL) {
  const bool reached =
      PollUntil([&] { return LastStep(g.pods[0]) >= step; }, std::chrono::seconds(60));
  if (reached) kill(-p.pid, sig);
  return reached;
}

TEST(InPlacePodsE2E, AReplacementPodHealsFromTheSurvivorAndEndsBitIdentical) {
  const std::string dir = MakeTempDir("ddp-e2e-podreplace");
  const auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {});
  const bool trained = KillAtStep(g, g.pods[1], 100);
  const std::optional<int> killed = WaitProc(g.pods[1], std::chrono::seconds(30));
  StartPod(&g, "pod1", 1);  // its replacement: the same name and rank, nothing else in common
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained) << r.err[0];
  EXPECT_EQ(killed, 128 + SIGKILL);
  ExpectAllEqual(r, want, {0, 2});
  EXPECT_NE(r.err[0].find("healed 1 member(s) from rank 0"), std::string::npos) << r.err[0];
  EXPECT_EQ(r.err[0].find("restarted rank"), std::string::npos) << r.err[0];  // pod 0 untouched
  std::filesystem::remove_all(dir);
}

// Pod 0 is no longer where the store lives: losing it heals in place like any other pod, from
// the survivor, with no new round and no checkpoint read.
TEST(InPlacePodsE2E, LosingPod0HealsInPlaceLikeAnyOtherPod) {
  const std::string dir = MakeTempDir("ddp-e2e-pod0");
  const auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {});
  const bool trained = KillAtStep(g, g.pods[0], 100);
  WaitProc(g.pods[0], std::chrono::seconds(30));
  StartPod(&g, "pod0", 0);
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained) << r.err[0];
  ExpectAllEqual(r, want, {1, 2});
  EXPECT_NE(r.err[2].find("healed 1 member(s) from rank 1"), std::string::npos) << r.err[2];
  EXPECT_EQ(r.err[1].find("resumed from checkpoint"), std::string::npos) << r.err[1];
  EXPECT_EQ(r.rendezvous_code, 0) << r.rendezvous_err;
  std::filesystem::remove_all(dir);
}

// A spare pod (its trainer a warm standby) takes the rank of a killed pod at once: nobody waits
// for a replacement pod, and the run ends bit-identical on the survivor and the spare.
TEST(InPlacePodsE2E, ASpareTakesTheRankOfAKilledPodAndEndsBitIdentical) {
  const std::string dir = MakeTempDir("ddp-e2e-spare");
  const auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {}, {}, /*spares=*/1);
  const bool trained = KillAtStep(g, g.pods[0], 100);  // pod 0: rank 0, not a special one
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained) << r.err[1];
  EXPECT_EQ(r.codes[0], 128 + SIGKILL);
  ExpectAllEqual(r, want, {1, 2});
  EXPECT_NE(r.rendezvous_err.find("spare spare0 takes node rank 0"), std::string::npos)
      << r.rendezvous_err;
  EXPECT_NE(r.err[2].find("node rank 0: rank 0 (local 0)"), std::string::npos) << r.err[2];
  EXPECT_NE(r.err[1].find("recovered in"), std::string::npos) << r.err[1];
  std::filesystem::remove_all(dir);
}

// An idle spare that dies changes nothing for the group: no re-formation, nobody healed.
TEST(InPlacePodsE2E, ASpareLostWhileIdleTouchesNothing) {
  const std::string dir = MakeTempDir("ddp-e2e-idlespare");
  const auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {}, {}, /*spares=*/1);
  const bool trained = KillAtStep(g, g.pods[2], 100);
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained) << r.err[0];
  ExpectAllEqual(r, want, {0, 1});
  for (size_t p : {0u, 1u}) {
    EXPECT_EQ(r.err[p].find("re-forming"), std::string::npos) << r.err[p];
  }
  EXPECT_NE(r.rendezvous_err.find("pod spare0 lost"), std::string::npos) << r.rendezvous_err;
  std::filesystem::remove_all(dir);
}

// The store's own host (the rendezvous pod) lost: training goes on without it; its replacement
// is a new, empty store the pods register with again, and it heals the next failure.
TEST(InPlacePodsE2E, LosingTheRendezvousPodStopsNothingAndItsReplacementHealsTheNextFailure) {
  const std::string dir = MakeTempDir("ddp-e2e-rdzv");
  const auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {{1, "1:900@0:kill"}});
  const bool trained =
      PollUntil([&] { return LastStep(g.pods[0]) >= 100; }, std::chrono::seconds(60));
  if (trained) kill(-g.rendezvous.pid, SIGKILL);
  WaitProc(g.rendezvous, std::chrono::seconds(30));
  const int64_t at_loss = LastStep(g.pods[0]);
  auto renv = PodEnv(g, "rendezvous", -1);
  renv["DDP_POD_ROLE"] = "rendezvous";
  g.rendezvous = StartProc(kWorkerBin, {"rendezvous"}, renv, dir, "rendezvous-again");
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained) << r.err[0];
  EXPECT_LT(at_loss, 900);  // the later failure happened with the new store
  ExpectAllEqual(r, want);
  EXPECT_NE(r.err[0].find("registered again with a new store"), std::string::npos) << r.err[0];
  EXPECT_NE(r.err[0].find("healed 1 member(s) from rank 0 at step 900"), std::string::npos) << r.err[0];
  std::filesystem::remove_all(dir);
}

// A drain (SIGTERM to one pod) is a departure, not a stop: the pod leaves, its state lives on in
// the others, nobody else restarts a trainer or reads a checkpoint, and its replacement heals.
TEST(InPlacePodsE2E, ADrainedPodDepartsAndItsReplacementIsHealed) {
  const std::string dir = MakeTempDir("ddp-e2e-drain");
  auto args = TinyArgs(1500);
  const std::string want = Reference(3, args, dir);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ckpt", "--checkpoint-every", "1000"});
  InPlaceGroup g = StartInPlace(3, args, dir, {{2, "2:120@0:term"}});
  const std::optional<int> departed = WaitProc(g.pods[2], std::chrono::seconds(90));
  StartPod(&g, "pod2", 2);  // the operator's replacement
  PodsResult r = Wait(g);
  EXPECT_EQ(departed, 75) << r.err[2];
  EXPECT_EQ(r.ends[2].rfind("ddp: Departed: ", 0), 0u) << r.ends[2];
  ExpectAllEqual(r, want, {0, 1, 3});
  for (size_t p : {0u, 1u}) {
    EXPECT_EQ(r.err[p].find("restarted rank"), std::string::npos) << r.err[p];
    EXPECT_EQ(r.err[p].find("stopped by signal"), std::string::npos) << r.err[p];
  }
  EXPECT_EQ(r.err[3].find("resumed from checkpoint"), std::string::npos) << r.err[3];
  EXPECT_NE(r.rendezvous_err.find("pod pod2 departs"), std::string::npos) << r.rendezvous_err;
  std::filesystem::remove_all(dir);
}

// SIGTERM to every pod (a suspend, a delete, a deadline), a second apart: one stop at one step,
// one checkpoint; the next round resumes from it and ends as the uninterrupted run.
TEST(InPlacePodsE2E, AWholeJobStopIsOneStopWithACheckpointEvenWhenTheSignalsArriveApart) {
  const std::string dir = MakeTempDir("ddp-e2e-stop");
  auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ckpt", "--checkpoint-every", "100000"});
  InPlaceGroup g = StartInPlace(2, args, dir, {});
  const bool trained = KillAtStep(g, g.pods[1], 100, SIGTERM);
  const auto first = std::chrono::steady_clock::now();
  PollUntil([&] { return std::chrono::steady_clock::now() - first > std::chrono::seconds(1); },
            std::chrono::seconds(2));  // the second pod's SIGTERM arrives a second later
  kill(-g.pods[0].pid, SIGTERM);
  kill(-g.rendezvous.pid, SIGTERM);
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained) << r.err[0];
  for (size_t p : {0u, 1u}) {
    EXPECT_EQ(r.codes[p], 75) << r.err[p];
    EXPECT_EQ(r.ends[p], "ddp: Stopped: the job stopped together with a checkpoint") << r.err[p];
  }
  EXPECT_EQ(Field(r.out[0], "step"), Field(r.out[1], "step"));
  const std::string saved = Field(r.out[0], "step");
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt/step-" + std::string(8 - saved.size(), '0') +
                                      saved + "/DONE")) << saved;
  PodsResult next = RunInPlace(2, args, dir, {}, {{"DDP_ROUND", "1"}});
  ExpectAllEqual(next, want);
  EXPECT_EQ(Field(next.out[0], "resumed_from"), saved) << next.err[0];
  std::filesystem::remove_all(dir);
}

// A frozen pod (a silent node: no reset) is declared lost within the liveness timeout and its
// rank taken by the spare; when it wakes up it is fenced: it cannot rejoin, and it leaves.
TEST(InPlacePodsE2E, AFrozenPodIsDeclaredLostWithinTheLivenessTimeoutAndFenced) {
  const std::string dir = MakeTempDir("ddp-e2e-frozen");
  const auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  InPlaceGroup g = StartInPlace(2, args, dir, {}, {{"DDP_LIVENESS_TIMEOUT", "3"}}, 1);
  const bool trained = KillAtStep(g, g.pods[1], 100, SIGSTOP);
  const auto frozen = std::chrono::steady_clock::now();
  const bool taken = PollUntil(
      [&] { return ReadAll(g.rendezvous.err_path).find("spare spare0 takes node rank 1") != std::string::npos; },
      std::chrono::seconds(30));
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - frozen).count();
  kill(-g.pods[1].pid, SIGCONT);
  PodsResult r = Wait(g);
  ASSERT_TRUE(trained && taken) << r.rendezvous_err;
  EXPECT_LT(after, 3 + 3);  // the liveness timeout plus 3 s
  EXPECT_EQ(r.codes[1], 75) << r.err[1];
  EXPECT_EQ(r.ends[1].rfind("ddp: Fenced: ", 0), 0u) << r.ends[1];
  ExpectAllEqual(r, want, {0, 2});
  std::filesystem::remove_all(dir);
}

// A member that never comes back (its pod not replaced): the group is abandoned after the
// rendezvous timeout; the survivor saves its step once and leaves, nobody restarts a trainer into
// a group that cannot form, and the next round resumes from exactly that step.
TEST(InPlacePodsE2E, AMemberThatNeverArrivesEndsTheRoundWithOneCheckpoint) {
  const std::string dir = MakeTempDir("ddp-e2e-never");
  auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ckpt", "--checkpoint-every", "100000"});
  InPlaceGroup g = StartInPlace(2, args, dir, {}, {{"DDP_RENDEZVOUS_TIMEOUT", "6"}});
  const bool trained = KillAtStep(g, g.pods[1], 100);
  const auto lost = std::chrono::steady_clock::now();
  PodsResult r = Wait(g);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - lost).count();
  ASSERT_TRUE(trained) << r.err[0];
  EXPECT_EQ(r.codes[0], 75) << r.err[0];
  EXPECT_EQ(r.ends[0].rfind("ddp: GroupAbandoned: the group could not re-form", 0), 0u) << r.ends[0];
  EXPECT_LT(took, 6 + 20);
  EXPECT_EQ(Count(r.err[0], "just-in-time checkpoint of step"), 1u) << r.err[0];
  EXPECT_EQ(Count(r.err[0], "restarted rank"), 0u) << r.err[0];
  const std::string& err = r.err[0];
  const size_t at = err.find("just-in-time checkpoint of step ");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string saved = std::to_string(std::atoll(err.c_str() + at + 32));
  PodsResult next = RunInPlace(2, args, dir, {}, {{"DDP_ROUND", "1"}});
  ExpectAllEqual(next, want);
  EXPECT_EQ(Field(next.out[0], "resumed_from"), saved) << next.err[0];
  std::filesystem::remove_all(dir);
}

TEST(InPlacePodsE2E, ATrainerKilledWhileWritingACheckpointIsHealedAndTheTornCopyIgnored) {
  const std::string dir = MakeTempDir("ddp-e2e-ckptkill");
  auto args = TinyArgs(30);
  const std::string want = Reference(2, args, dir);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ckpt", "--checkpoint-every", "10"});
  // Rank 0 writes the periodic checkpoints; its first trainer dies with step 10's half written.
  PodsResult g = RunInPlace(2, args, dir, {{0, "0:10@0:kill-in-checkpoint"}});
  ExpectAllEqual(g, want);
  EXPECT_NE(g.err[0].find("while writing the checkpoint of step 10"), std::string::npos) << g.err[0];
  EXPECT_NE(g.err[0].find("restarted rank 0 in place"), std::string::npos) << g.err[0];
  EXPECT_NE(g.err[0].find("healed 1 member(s) from rank 1 at step 10"), std::string::npos)
      << g.err[0];
  // The later checkpoints are complete; nothing torn is left behind.
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt/step-00000030/DONE"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/ckpt/step-00000010/DONE"));
  for (const auto& e : std::filesystem::directory_iterator(dir + "/ckpt")) {
    EXPECT_EQ(e.path().filename().string().rfind(".tmp", 0), std::string::npos) << e.path();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
