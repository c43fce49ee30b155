// In-place recovery end to end, trainer by trainer: real ddp-worker processes, a rendezvous pod
// (the store and the group's authority) and one-trainer pods, each its own supervisor. Faults are
// scripted per incarnation; expected parameters come from an independent, uninterrupted run.
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
  // Rank 1's trainer, then (separately) rank 0's: both are healed the same way.
  for (int victim : {1, 0}) {
    PodsResult g = RunInPlace(2, args, dir, {{victim, std::to_string(victim) + ":12@0:kill"}});
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
    EXPECT_EQ(g.rendezvous_code, 0) << g.rendezvous_err;
  }
  std::filesystem::remove_all(dir);
}

// The supervisor keeps a warm standby per trainer: a killed trainer's standby takes its place
// (same process, its name back), a new standby follows, and the group ends bit-identical.
TEST(InPlaceE2E, AWarmStandbyTakesOverAKilledTrainerAndIsReplaced) {
  const std::string dir = MakeTempDir("ddp-e2e-standby");
  const auto args = TinyArgs(2000);  // seconds of training: time for two kills and two standbys
  const std::string want = Reference(2, args, dir);
  InPlaceGroup group = StartInPlace(2, args, dir, {});
  const pid_t pod1 = group.pods[1].pid;
  std::string failed;  // the pods are always waited for, so nothing outlives the test
  // The trainer of incarnation k as its supervisor logged it (process names alone cannot tell: a
  // standby is named ddp-worker until it has loaded LibTorch, the first trainer may itself be a
  // standby activated at once, and a machine under load stretches both windows).
  auto trainer_of = [&](int k) -> pid_t {
    const std::string log = ReadAll(group.pods[1].err_path);
    const std::string mark = k == 0 ? "rank 1 (local 0) pid " : "(incarnation " + std::to_string(k) + ", pid ";
    const size_t at = log.find(mark);
    return at == std::string::npos ? -1 : static_cast<pid_t>(std::atoi(log.c_str() + at + mark.size()));
  };
  pid_t trainer = -1, standby = -1;
  for (int k = 0; k < 2 && failed.empty(); ++k) {
    if (!PollUntil([&] { return (trainer = trainer_of(k)) > 0; }, std::chrono::seconds(60))) {
      failed = "no trainer of incarnation " + std::to_string(k) + " in the log";
      break;
    }
    // A standby of its own beside it (a new one after each take-over).
    const pid_t before = standby;
    if (!PollUntil([&] {
          auto s = ChildrenNamed(pod1, "ddp-standby");
          if (s.size() != 1 || s[0] == trainer || s[0] == before) return false;
          standby = s[0];
          return true;
        }, std::chrono::seconds(60))) {
      failed = "no standby beside the trainer of incarnation " + std::to_string(k);
      break;
    }
    if (kill(trainer, SIGKILL) != 0) {
      failed = "trainer " + std::to_string(trainer) + " was gone before its kill";
      break;
    }
    const pid_t took_over = standby;
    if (!PollUntil([&] { return trainer_of(k + 1) == took_over; }, std::chrono::seconds(30))) {
      failed = "the standby " + std::to_string(took_over) + " did not become the trainer after kill " +
               std::to_string(k + 1);
    }
  }
  const pid_t last = trainer_of(2);
  if (failed.empty() && !PollUntil([&] {
        auto s = ChildrenNamed(pod1, "ddp-standby");
        if (s.size() != 1 || s[0] == standby || s[0] == last) return false;
        standby = s[0];
        return true;
      }, std::chrono::seconds(30))) {
    failed = "no new standby after the second kill";
  }
  PodsResult g = Wait(group);
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
  PodsResult g = RunInPlace(3, args, dir, {{1, "1:9@0:kill"}, {2, "2:9@0:exit:75"}});
  ExpectAllEqual(g, want);
  EXPECT_EQ(Count(g.err[0], "healed"), 1u) << g.err[0];
  std::filesystem::remove_all(dir);
}

// A second failure in the middle of a heal: rank 1 dies at step 12; while the survivors heal its
// new incarnation, rank 0 (the heal's source) dies too. Rank 2 still holds the state: it heals
// both newcomers and the run ends bit-identical, each failure charged once.
TEST(InPlaceE2E, AFailureDuringAHealIsHealedToo) {
  const std::string dir = MakeTempDir("ddp-e2e-inheal");
  const auto args = TinyArgs(30);
  const std::string want = Reference(3, args, dir);
  PodsResult g = RunInPlace(3, args, dir, {{1, "1:12@0:kill"}, {0, "0:0@0:kill-in-heal"}});
  ExpectAllEqual(g, want);
  EXPECT_NE(g.err[0].find("while it heals"), std::string::npos) << g.err[0];
  EXPECT_NE(g.err[0].find("restarted rank 0 in place"), std::string::npos) << g.err[0];
  EXPECT_NE(g.err[0].find("from rank 2 at step 12"), std::string::npos) << g.err[0];
  std::filesystem::remove_all(dir);
}

// Rank 1 crashes at step 6 in every incarnation. The budget (2) heals two, each charged once; the
// third is refused: pod 1 ends with the trainer's own exit code and says why; nobody restarts a
// trainer into a group that cannot form, and pod 0 leaves once the group is abandoned.
TEST(InPlaceE2E, TheFailurePastTheBudgetEndsThePodWithItsOwnCode) {
  const std::string dir = MakeTempDir("ddp-e2e-inplace3");
  PodsResult g = RunInPlace(2, TinyArgs(30), dir, {{1, "1:6:exit:9"}},
                            {{"DDP_MAX_RECOVERIES", "2"}, {"DDP_RENDEZVOUS_TIMEOUT", "8"}});
  EXPECT_EQ(g.codes[1], 9) << g.err[1];
  EXPECT_EQ(Count(g.err[1], "restarted rank 1 in place"), 2u) << g.err[1];
  EXPECT_EQ(g.ends[1].rfind("ddp: BudgetSpent: rank 1 exited 9; ", 0), 0u) << g.ends[1];
  EXPECT_NE(g.ends[1].find("(2 healed in place this round)"), std::string::npos) << g.ends[1];
  EXPECT_EQ(g.codes[0], 75) << g.err[0];
  EXPECT_EQ(g.ends[0].rfind("ddp: GroupAbandoned: ", 0), 0u) << g.ends[0];
  EXPECT_EQ(Count(g.err[0], "restarted rank 0"), 0u) << g.err[0];
  EXPECT_NE(g.rendezvous_err.find("abandoning the round"), std::string::npos) << g.rendezvous_err;
  std::filesystem::remove_all(dir);
}

// restartPolicy means in a pod what it means for pods: Never restarts nothing, ExitCode only the
// listed codes and signals. The pod exits with the trainer's own code.
TEST(InPlaceE2E, RestartPolicyDecidesInThePodAsForPods) {
  const std::string dir = MakeTempDir("ddp-e2e-policy");
  struct Row {
    std::string policy, codes, fault;
    int want_code;       // pod 1's exit code when not healed; 0 when healed
  };
  for (const Row& r : std::vector<Row>{{"Never", "75", "1:6@0:kill", 128 + SIGKILL},
                                       {"ExitCode", "75", "1:6@0:exit:1", 1},
                                       {"ExitCode", "75", "1:6@0:exit:75", 0},
                                       {"ExitCode", "none", "1:6@0:kill", 0}}) {
    PodsResult g = RunInPlace(2, TinyArgs(20), dir, {{1, r.fault}},
                              {{"DDP_RESTART_POLICY", r.policy},
                               {"DDP_RETRYABLE_EXIT_CODES", r.codes},
                               {"DDP_RENDEZVOUS_TIMEOUT", "6"}});
    SCOPED_TRACE(r.policy + " " + r.codes + " " + r.fault);
    EXPECT_EQ(g.codes[1], r.want_code) << g.err[1];
    if (r.want_code == 0) {
      EXPECT_EQ(Count(g.err[1], "restarted rank 1 in place"), 1u) << g.err[1];
    } else {
      EXPECT_EQ(Count(g.err[1], "restarted rank 1"), 0u) << g.err[1];
      EXPECT_EQ(g.ends[1].rfind("ddp: NotRetryable: rank 1 exited " + std::to_string(r.want_code), 0),
                0u) << g.ends[1];
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(InPlaceE2E, BadRecoverySettingsExit2) {
  const std::string dir = MakeTempDir("ddp-e2e-inplace4");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"DDP_RECOVERY", "Sometimes"}, {"DDP_WARM_STANDBY", "yes"}}) {
    GroupResult g = RunGroup(1, TinyArgs(3), {{key, value}}, dir, std::chrono::seconds(60));
    EXPECT_EQ(g.codes[0], 2) << g.err[0];
    EXPECT_NE(g.err[0].find(key), std::string::npos) << g.err[0];
  }
  // The group's own settings, read by the supervisor before anything starts.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"DDP_MAX_RECOVERIES", "-1"}, {"DDP_LIVENESS_TIMEOUT", "0"},
           {"DDP_RESTART_POLICY", "Sometimes"}, {"DDP_RETRYABLE_EXIT_CODES", "7x"},
           {"DDP_POD_ROLE", "boss"}}) {
    GroupResult g = RunGroup(1, TinyArgs(3), {{"DDP_RECOVERY", "InPlace"}, {key, value}}, dir,
                             std::chrono::seconds(60));
    EXPECT_EQ(g.codes[0], 2) << key << "\n" << g.err[0];
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
