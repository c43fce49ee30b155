// In-place recovery end to end: each "pod" is a real ddp-worker process with DDP_RECOVERY=InPlace
// (it supervises its own trainer; pod 0's hosts the store). Faults are scripted per incarnation,
// and the expected parameters come from an independent, uninterrupted run of the same config.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "tests/worker/inplace_util.h"

namespace ddp::testing {
namespace {

TEST(InPlaceE2E, KilledTrainersHealFromASurvivorAndEndBitIdentical) {
  const std::string dir = MakeTempDir("ddp-e2e-inplace");
  const auto args = TinyArgs(30);
  const std::string want = Reference(2, args, dir);
  // Rank 1's trainer, then (separately) rank 0's: the store lives in pod 0's supervisor, so
  // losing rank 0's trainer is healed like any other.
  for (int victim : {1, 0}) {
    PodsResult g = RunInPlacePods(2, args, dir, {{victim, std::to_string(victim) + ":12@0:kill"}});
    ExpectAllEqual(g, want);
    const std::string& victim_err = g.err[static_cast<size_t>(victim)];
    EXPECT_NE(victim_err.find("restarted rank " + std::to_string(victim) + " in place"),
              std::string::npos) << victim_err;
    // The survivor discarded the step in flight and healed the newcomer from its state.
    const std::string& survivor_err = g.err[static_cast<size_t>(1 - victim)];
    EXPECT_NE(survivor_err.find("re-forming the group at step 12"), std::string::npos)
        << survivor_err;
    EXPECT_NE(g.err[0].find("healed 1 member(s) from rank " + std::to_string(1 - victim) +
                            " at step 12"), std::string::npos) << g.err[0];
    EXPECT_NE(survivor_err.find("recovered in"), std::string::npos) << survivor_err;
  }
  std::filesystem::remove_all(dir);
}

// The supervisor keeps a warm standby per trainer: a killed trainer's standby takes its place
// (same process, its name back), a new standby follows, and the group ends bit-identical.
TEST(InPlaceE2E, AWarmStandbyTakesOverAKilledTrainerAndIsReplaced) {
  const std::string dir = MakeTempDir("ddp-e2e-standby");
  const auto args = TinyArgs(2000);  // seconds of training: time for two kills and two standbys
  const std::string want = Reference(2, args, dir);
  std::vector<Proc> pods = StartInPlacePods(2, args, dir, {});
  const pid_t pod1 = pods[1].pid;
  std::string failed;  // the pods are always waited for, so nothing outlives the test
  pid_t standby = -1;
  auto next_standby = [&] {
    auto s = ChildrenNamed(pod1, "ddp-standby");
    if (s.size() != 1 || s[0] == standby) return false;
    standby = s[0];
    return true;
  };
  if (!PollUntil(next_standby, std::chrono::seconds(60))) failed = "no standby appeared";
  for (int k = 0; k < 2 && failed.empty(); ++k) {
    const auto trainers = ChildrenNamed(pod1, "ddp-worker");
    if (trainers.size() != 1 || kill(trainers[0], SIGKILL) != 0) {
      failed = "no trainer to kill (" + std::to_string(trainers.size()) + ")";
      break;
    }
    const pid_t took_over = standby;
    if (!PollUntil([&] { return ChildrenNamed(pod1, "ddp-worker") == std::vector<pid_t>{took_over}; },
                   std::chrono::seconds(30))) {
      failed = "the standby did not become the trainer after kill " + std::to_string(k + 1);
    } else if (!PollUntil(next_standby, std::chrono::seconds(30))) {
      failed = "no new standby after kill " + std::to_string(k + 1);
    }
  }
  PodsResult g = WaitPods(pods);
  ASSERT_EQ(failed, "") << g.err[1];
  ExpectAllEqual(g, want);
  EXPECT_EQ(Count(g.err[1], "its warm standby)"), 2u) << g.err[1];
  EXPECT_NE(g.err[0].find("healed 1 member(s) from rank 0"), std::string::npos) << g.err[0];
  // The last standby ended with its pod (killed and reaped by the supervisor).
  std::string state;
  std::getline(std::ifstream("/proc/" + std::to_string(standby) + "/stat"), state);
  EXPECT_TRUE(state.empty() || state.find(") Z") != std::string::npos) << state;
  std::filesystem::remove_all(dir);
}

TEST(InPlaceE2E, TwoTrainersLostTogetherAreBothHealed) {
  const std::string dir = MakeTempDir("ddp-e2e-inplace2");
  const auto args = TinyArgs(30);
  const std::string want = Reference(3, args, dir);
  PodsResult g = RunInPlacePods(3, args, dir, {{1, "1:9@0:kill"}, {2, "2:9@0:exit:75"}});
  ExpectAllEqual(g, want);
  EXPECT_EQ(Count(g.err[0], "healed"), 1u) << g.err[0];
  std::filesystem::remove_all(dir);
}

TEST(InPlaceE2E, DeterministicCrashSpendsTheBudgetAndFailsThePods) {
  const std::string dir = MakeTempDir("ddp-e2e-inplace3");
  // Rank 1 crashes at step 6 in every incarnation: two recoveries, then the supervisors stop.
  PodsResult g = RunInPlacePods(2, TinyArgs(30), dir, {{1, "1:6:exit:75"}},
                                {{"DDP_MAX_RECOVERIES", "2"}, {"DDP_RENDEZVOUS_TIMEOUT", "10"}});
  EXPECT_EQ(g.codes[1], 75) << g.err[1];
  EXPECT_EQ(g.codes[0], 75) << g.err[0];
  EXPECT_EQ(Count(g.err[1], "in place (recovery"), 2u) << g.err[1];
  EXPECT_NE(g.err[1].find("recovery budget spent"), std::string::npos) << g.err[1];
  std::filesystem::remove_all(dir);
}

TEST(InPlaceE2E, BadRecoverySettingsExit2) {
  const std::string dir = MakeTempDir("ddp-e2e-inplace4");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"DDP_RECOVERY", "Sometimes"}, {"DDP_MAX_RECOVERIES", "-1"},
           {"DDP_WARM_STANDBY", "yes"}}) {
    GroupResult g = RunGroup(1, TinyArgs(3), {{key, value}}, dir, std::chrono::seconds(60));
    EXPECT_EQ(g.codes[0], 2) << g.err[0];
    EXPECT_NE(g.err[0].find(key), std::string::npos) << g.err[0];
  }
  std::filesystem::remove_all(dir);
}

TEST(JustInTimeCheckpoint, SurvivorSavesTheLastCommittedStepBeforeExiting) {
  const std::string dir = MakeTempDir("ddp-e2e-jit");
  auto args = TinyArgs(40);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ckpt", "--checkpoint-every", "100"});
  // Recovery Restart (the default): rank 1 dies before step 7, so 7 steps were committed.
  GroupResult g = RunGroup(2, args, {{"DDP_FAULT", "1:7:kill"}}, dir);
  EXPECT_EQ(g.codes[0], 75) << g.err[0];
  EXPECT_NE(g.err[0].find("just-in-time checkpoint of step 7"), std::string::npos) << g.err[0];
  EXPECT_TRUE(std::filesystem::exists(dir + "/ckpt/step-00000007/DONE"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
