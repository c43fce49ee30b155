// In-place recovery's pure decisions: whom to heal from, the recovery settings, and faults
// scoped to one incarnation. (What a trainer's exit means: tests/common/failure_policy_test.cc.)
#include <gtest/gtest.h>

#include <filesystem>

#include <map>

#include "worker/launch/supervise.h"
#include "worker/train/fault.h"
#include "worker/train/heal.h"

namespace ddp::worker {
namespace {

TEST(PlanHealTest, TheLowestRankAtTheLatestStepSendsToEveryoneBehind) {
  struct Row {
    std::vector<int64_t> steps;
    HealPlan want;
  };
  for (const Row& r : std::vector<Row>{
           {{-1, -1, -1}, {-1, -1, 0}},   // a new round: nobody has state
           {{12, -1}, {12, 0, 1}},        // rank 1's trainer restarted
           {{-1, 12}, {12, 1, 1}},        // rank 0's trainer restarted
           {{12, 13, 13}, {13, 1, 1}},    // rank 0 had not applied step 12 when the peer died
           {{20, 20, 20}, {20, 0, 0}},    // a failure with no one behind: nothing to send
           {{7, -1, -1, 7}, {7, 0, 2}}}) {
    const HealPlan got = PlanHeal(r.steps);
    EXPECT_EQ(got.step, r.want.step);
    EXPECT_EQ(got.source, r.want.source);
    EXPECT_EQ(got.behind, r.want.behind);
  }
}

TEST(SuperviseTest, SettingsFromEnvAndTheirErrors) {
  auto lookup = [](std::map<std::string, std::string> env) {
    return RecoverySettingsFromLookup([env](const char* n) -> const char* {
      auto it = env.find(n);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  auto def = lookup({});
  ASSERT_TRUE(def.ok());
  EXPECT_FALSE(def->in_place);
  EXPECT_TRUE(def->warm_standby);
  auto set = lookup({{kEnvRecovery, "InPlace"}, {kEnvWarmStandby, "0"}});
  ASSERT_TRUE(set.ok());
  EXPECT_TRUE(set->in_place);
  EXPECT_FALSE(set->warm_standby);
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {kEnvRecovery, "inplace"}, {kEnvWarmStandby, "true"}}) {
    auto bad = lookup({{k, v}});
    ASSERT_FALSE(bad.ok()) << k << "=" << v;
    EXPECT_NE(bad.status().message().find(k), std::string::npos);
  }
}

TEST(FaultTest, AnIncarnationScopesAFault) {
  auto once = ParseFault("1:12@0:kill");
  ASSERT_TRUE(once.ok() && once->has_value());
  EXPECT_EQ((*once)->step, 12);
  EXPECT_EQ((*once)->incarnation, 0);
  auto every = ParseFault("1:12:exit:75");
  ASSERT_TRUE(every.ok() && every->has_value());
  EXPECT_EQ((*every)->incarnation, -1);
  for (const char* bad : {"1:12@:kill", "1:12@x:kill", "1:12@-1:kill", "1:@0:kill"}) {
    EXPECT_FALSE(ParseFault(bad).ok()) << bad;
  }
}

TEST(FaultTest, AKillInACheckpointWrapsOnlyItsRanksFileSystem) {
  auto f = ParseFault("0:10@0:kill-in-checkpoint");
  ASSERT_TRUE(f.ok() && f->has_value());
  EXPECT_EQ((*f)->kind, Fault::Kind::kKillInCheckpoint);
  EXPECT_EQ((*f)->step, 10);
  EXPECT_FALSE(ParseFault("0:10:kill-in-checkpoint:1").ok());
  FileSystem* base = PosixFileSystem();
  EXPECT_EQ(WithCheckpointFault(base, *f, 1), base);  // another rank's fault
  EXPECT_EQ(WithCheckpointFault(base, *ParseFault("0:10:kill"), 0), base);
  EXPECT_EQ(WithCheckpointFault(base, std::nullopt, 0), base);
  FileSystem* faulty = WithCheckpointFault(base, *f, 0);
  ASSERT_NE(faulty, base);
  // Everything but the checkpoint's manifest passes through.
  const std::string dir = std::filesystem::temp_directory_path() / "ddp-fault-fs-test";
  ASSERT_TRUE(faulty->MakeDirs(dir + "/.tmp-step-00000011").ok());
  EXPECT_TRUE(faulty->WriteFile(dir + "/.tmp-step-00000011/MANIFEST", "x").ok());
  EXPECT_TRUE(faulty->WriteFile(dir + "/step-00000010.state.pt", "x").ok());
  EXPECT_EQ(*faulty->ReadFile(dir + "/.tmp-step-00000011/MANIFEST"), "x");
  EXPECT_TRUE(faulty->RemoveAll(dir).ok());
  EXPECT_FALSE(faulty->Exists(dir));
}

}  // namespace
}  // namespace ddp::worker
