// In-place recovery end to end, whole pods: a pod replaced by a new one (what the operator does for
// a lost non-zero pod), the loss of pod 0 (and with it the store), and a trainer killed in the
// middle of writing a checkpoint. Expected parameters come from an uninterrupted run.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>

#include "tests/worker/inplace_util.h"

namespace ddp::testing {
namespace {

// Rank 0's step lines ("step N/M ...") seen so far in `proc`'s log.
int64_t LastStep(const Proc& proc) {
  const std::string log = ReadAll(proc.err_path);
  const size_t at = log.rfind("] step ");
  return at == std::string::npos ? 0 : std::atoll(log.c_str() + at + 7);
}

TEST(InPlacePodsE2E, AReplacementPodHealsFromTheSurvivorAndEndsBitIdentical) {
  const std::string dir = MakeTempDir("ddp-e2e-podreplace");
  const auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  const std::map<std::string, std::string> env{{"MASTER_PORT", std::to_string(FreePort())}};
  std::vector<Proc> pods = StartInPlacePods(2, args, dir, {}, env);
  // The whole pod 1 goes (its supervisor; its trainer follows it), mid-training.
  const bool trained = PollUntil([&] { return LastStep(pods[0]) >= 100; }, std::chrono::seconds(60));
  if (trained) kill(pods[1].pid, SIGKILL);
  const std::optional<int> killed = WaitProc(pods[1], std::chrono::seconds(30));
  // Its replacement: the same name and rank, a new process, nothing else in common.
  Proc replacement = StartPod(2, 1, args, dir, env);
  PodsResult g = WaitPods({pods[0], replacement});
  ASSERT_TRUE(trained) << g.err[0];
  EXPECT_EQ(killed, 128 + SIGKILL);
  ExpectAllEqual(g, want);
  EXPECT_NE(g.err[0].find("healed 1 member(s) from rank 0"), std::string::npos) << g.err[0];
  EXPECT_EQ(g.err[0].find("restarted rank"), std::string::npos) << g.err[0];  // pod 0 untouched
  std::filesystem::remove_all(dir);
}

TEST(InPlacePodsE2E, LosingPod0EndsTheRoundWithAJustInTimeCheckpointAndRepeatsNoStep) {
  const std::string dir = MakeTempDir("ddp-e2e-pod0");
  auto args = TinyArgs(1500);
  const std::string want = Reference(2, args, dir);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ckpt", "--checkpoint-every", "100000"});
  std::vector<Proc> pods = StartInPlacePods(2, args, dir, {});
  const bool trained = PollUntil([&] { return LastStep(pods[0]) >= 100; }, std::chrono::seconds(60));
  if (trained) kill(pods[0].pid, SIGKILL);
  PodsResult lost = WaitPods(pods);
  ASSERT_TRUE(trained) << lost.err[0];
  // The store went with pod 0: pod 1 cannot re-form, saves its committed step and exits 75.
  EXPECT_EQ(lost.codes[1], 75) << lost.err[1];
  const std::string& err = lost.err[1];
  const size_t at = err.find("just-in-time checkpoint of step ");
  ASSERT_NE(at, std::string::npos) << err;
  const int64_t saved = std::atoll(err.c_str() + at + 32);
  EXPECT_GE(saved, 100);
  // The next round (both pods new) resumes from it and ends as the uninterrupted run.
  PodsResult next = RunInPlacePods(2, args, dir, {}, {{"DDP_ROUND", "1"}});
  ExpectAllEqual(next, want);
  EXPECT_EQ(Field(next.out[0], "resumed_from"), std::to_string(saved)) << next.err[0];
  std::filesystem::remove_all(dir);
}

TEST(InPlacePodsE2E, ATrainerKilledWhileWritingACheckpointIsHealedAndTheTornCopyIgnored) {
  const std::string dir = MakeTempDir("ddp-e2e-ckptkill");
  auto args = TinyArgs(30);
  const std::string want = Reference(2, args, dir);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ckpt", "--checkpoint-every", "10"});
  // Rank 0 writes the periodic checkpoints; its first trainer dies with step 10's half written.
  PodsResult g = RunInPlacePods(2, args, dir, {{0, "0:10@0:kill-in-checkpoint"}});
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
