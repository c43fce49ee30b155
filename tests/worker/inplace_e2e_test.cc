// In-place recovery end to end: each "pod" is a real ddp-worker process with DDP_RECOVERY=InPlace
// (it supervises its own trainer; pod 0's hosts the store). Faults are scripted per incarnation,
// and the expected parameters come from an independent, uninterrupted run of the same config.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/worker/e2e_util.h"

namespace ddp::testing {
namespace {

struct PodsResult {
  std::vector<std::optional<int>> codes;
  std::vector<std::string> out, err;
};

// Starts `n` one-trainer pods of one InPlace group; `faults` by rank (DDP_FAULT).
std::vector<Proc> StartInPlacePods(int n, const std::vector<std::string>& args,
                                   const std::string& dir, const std::map<int, std::string>& faults,
                                   std::map<std::string, std::string> env = {}) {
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(FreePort());
  env["WORLD_SIZE"] = std::to_string(n);
  env["NNODES"] = std::to_string(n);
  env["NPROC_PER_NODE"] = "1";
  env["DDP_RECOVERY"] = "InPlace";
  if (!env.count("DDP_RENDEZVOUS_TIMEOUT")) env["DDP_RENDEZVOUS_TIMEOUT"] = "60";
  static int run = 0;
  ++run;
  std::vector<Proc> procs;
  for (int r = 0; r < n; ++r) {
    auto e = env;
    e["RANK"] = e["NODE_RANK"] = std::to_string(r);
    if (auto it = faults.find(r); it != faults.end()) e["DDP_FAULT"] = it->second;
    procs.push_back(StartProc(kWorkerBin, args, e, dir,
                              "inplace" + std::to_string(run) + "-pod" + std::to_string(r)));
  }
  return procs;
}

PodsResult WaitPods(const std::vector<Proc>& procs) {
  PodsResult g;
  for (const auto& p : procs) {
    g.codes.push_back(WaitProc(p, std::chrono::seconds(150)));
    g.out.push_back(ReadAll(p.out_path));
    g.err.push_back(ReadAll(p.err_path));
  }
  return g;
}

PodsResult RunInPlacePods(int n, const std::vector<std::string>& args, const std::string& dir,
                          const std::map<int, std::string>& faults,
                          std::map<std::string, std::string> env = {}) {
  return WaitPods(StartInPlacePods(n, args, dir, faults, std::move(env)));
}

std::string Reference(int n, const std::vector<std::string>& args, const std::string& dir) {
  GroupResult ref = RunGroup(n, args, {}, dir);
  for (size_t r = 0; r < ref.codes.size(); ++r) EXPECT_EQ(ref.codes[r], 0) << ref.err[r];
  return Field(ref.out[0], "param_checksum");
}

void ExpectAllEqual(const PodsResult& g, const std::string& want) {
  ASSERT_FALSE(want.empty());
  for (size_t r = 0; r < g.codes.size(); ++r) {
    EXPECT_EQ(g.codes[r], 0) << g.err[r];
    EXPECT_EQ(Field(g.out[r], "param_checksum"), want) << "rank " << r << "\n" << g.err[r];
  }
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

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

// Live children of `parent` whose process name (/proc/<pid>/comm) is `name`.
std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& name) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat, comm;
    std::getline(std::ifstream(e.path() / "stat"), stat);
    std::getline(std::ifstream(e.path() / "comm"), comm);
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || comm != name) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = -1;
    if (rest >> state >> ppid && ppid == parent && state != 'Z') out.push_back(std::stoi(pid));
  }
  return out;
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
