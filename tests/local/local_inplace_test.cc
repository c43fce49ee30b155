// `ddp-operator local` with failurePolicy.recovery InPlace: a failed pod, pod 0 included, is a new
// local process under the same name and round, the other pods' processes are untouched, and the
// old pod's log is kept. Shell-script workers (the rendezvous pod runs the real
// `ddp-worker rendezvous`): the operator's side is the point here; local_spares_test.cc has the
// real trainers.
#include <gtest/gtest.h>

#include <sstream>

#include "e2e_util.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class LocalInPlaceTest : public ::testing::Test {
 protected:
  std::string Dir() const { return dir_.path(); }
  std::string RunDir() const { return dir_.path() + "/run"; }
  std::unique_ptr<OperatorProcess> Start(const std::string& yaml) {
    WriteFileAtomic(Dir() + "/job.yaml", yaml);
    return std::make_unique<OperatorProcess>(
        std::vector<std::string>{DDP_OPERATOR_BIN, "local", "-f", Dir() + "/job.yaml",
                                 "--run-dir", RunDir(), "--plain"},
        Dir() + "/out.txt");
  }
  // Every start of rank `rank` appends "<round> <pid>" to starts-<rank>.
  std::vector<std::string> Starts(int rank) const {
    return Lines(ReadFile(Dir() + "/starts-" + std::to_string(rank)));
  }

  TempDir dir_;
};

// Rank 1 exits 75 once (a marker file says it already did); every rank then runs until the test
// creates "finish". Pod 1 must be replaced alone: one more start of rank 1 in round 0, and ranks
// 0 and 2 started exactly once (the same processes throughout).
TEST_F(LocalInPlaceTest, FailedPodOneIsReplacedAloneInTheSameRound) {
  const std::string d = Dir();
  const std::string script =
      "echo \"$DDP_ROUND $$$$\" >> " + d + "/starts-$RANK; "
      "echo \"start rank $RANK recovery $DDP_RECOVERY budget $DDP_MAX_RECOVERIES\"; "
      "if [ $RANK = 1 ] && [ ! -f " + d + "/failed-once ]; then "
      "  touch " + d + "/failed-once; echo 'rank 1 fails'; exit 75; fi; "
      "while [ ! -f " + d + "/finish ]; do sleep 0.05; done; "
      "echo 'ddp: Finished: step 1 of 1' > $DDP_TERMINATION_LOG; exit 0";
  auto op = Start(ShellJob("heal", 3, script,
                           "  failurePolicy: {recovery: InPlace, maxRestarts: 3}\n"));
  ASSERT_TRUE(WaitFor([&] { return Starts(1).size() == 2; }, seconds(60))) << op->Output();
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json s = ReadStatus(RunDir());
        return s.is_object() && s.value("phase", "") == "Running" && s.value("recoveries", 0) == 1;
      },
      seconds(30)))
      << op->Output();
  WriteFileAtomic(d + "/finish", "1");
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();

  nlohmann::json s = ReadStatus(RunDir());
  EXPECT_EQ(s["phase"], "Succeeded");
  EXPECT_EQ(s["round"], 0);
  EXPECT_EQ(s["recoveries"], 1);
  EXPECT_EQ(s["restarts"], 0);
  EXPECT_EQ(s["disruptions"], 0);
  EXPECT_EQ(s["lastFailure"]["pod"], "heal-worker-1");
  EXPECT_EQ(s["lastFailure"]["exitCode"], 75);
  // Ranks 0 and 2: one start each, in round 0. Rank 1: two starts in round 0, two processes.
  ASSERT_EQ(Starts(0).size(), 1u);
  ASSERT_EQ(Starts(2).size(), 1u);
  const auto one = Starts(1);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].substr(0, 2), "0 ");
  EXPECT_EQ(one[1].substr(0, 2), "0 ");
  EXPECT_NE(one[0], one[1]);
  // Both logs of pod 1 survive; the replacement was created with one recovery of 3 spent.
  const std::string first = ReadFile(RunDir() + "/heal-worker-1.round0.log");
  const std::string second = ReadFile(RunDir() + "/heal-worker-1.round0.1.log");
  EXPECT_NE(first.find("start rank 1 recovery InPlace budget 3"), std::string::npos) << first;
  EXPECT_NE(first.find("rank 1 fails"), std::string::npos) << first;
  EXPECT_NE(second.find("start rank 1 recovery InPlace budget 2"), std::string::npos) << second;
  EXPECT_EQ(second.find("rank 1 fails"), std::string::npos) << second;
  EXPECT_NE(op->Output().find("round 0: replacing pod heal-worker-1 (rank 1 exited 75; "
                              "recovery 1 of 3)"),
            std::string::npos)
      << op->Output();
  EXPECT_NE(op->Output().find("recoveries 1"), std::string::npos) << op->Output();
}

// A deterministic crash of rank 1 is healed alone until restarts + recoveries reach maxRestarts,
// then the job fails; each incarnation kept its own log and the summary shows the last one.
TEST_F(LocalInPlaceTest, DeterministicCrashExhaustsTheBudgetThenFails) {
  const std::string d = Dir();
  const std::string script =
      "echo \"$DDP_ROUND $$$$\" >> " + d + "/starts-$RANK; "
      "if [ $RANK = 1 ]; then echo \"crash with budget $DDP_MAX_RECOVERIES\"; exit 75; fi; "
      "exec sleep 60";
  auto op = Start(ShellJob("crash", 2, script,
                           "  failurePolicy: {recovery: InPlace, maxRestarts: 2}\n"));
  ASSERT_EQ(op->Wait(seconds(60)), 1) << op->Output();
  nlohmann::json s = ReadStatus(RunDir());
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(s["round"], 0);
  EXPECT_EQ(s["recoveries"], 2);
  EXPECT_EQ(s["restarts"], 0);
  EXPECT_EQ(Starts(0).size(), 1u);  // pod 0 ran throughout, until the job ended
  EXPECT_EQ(Starts(1).size(), 3u);  // the first pod and two replacements
  EXPECT_NE(ReadFile(RunDir() + "/crash-worker-1.round0.log").find("crash with budget 2"),
            std::string::npos);
  EXPECT_NE(ReadFile(RunDir() + "/crash-worker-1.round0.1.log").find("crash with budget 1"),
            std::string::npos);
  EXPECT_NE(ReadFile(RunDir() + "/crash-worker-1.round0.2.log").find("crash with budget 0"),
            std::string::npos);
  const std::string out = op->Output();
  EXPECT_NE(out.find("0 restarts and 2 recoveries reached spec.failurePolicy.maxRestarts (2)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("crash-worker-1.round0.2.log"), std::string::npos) << out;
  EXPECT_NE(out.find("| crash with budget 0"), std::string::npos) << out;
}

// Pod 0 is no longer the store's host (the rendezvous pod is): its failure is replaced alone in
// the same round like any other pod's, and pod 1's process runs throughout.
TEST_F(LocalInPlaceTest, FailedPodZeroIsReplacedAloneLikeAnyOther) {
  const std::string d = Dir();
  const std::string script =
      "echo \"$DDP_ROUND $$$$\" >> " + d + "/starts-$RANK; "
      "if [ $RANK = 0 ] && [ ! -f " + d + "/failed-once ]; then "
      "  touch " + d + "/failed-once; exit 75; fi; "
      "while [ ! -f " + d + "/finish ]; do sleep 0.05; done; "
      "echo 'ddp: Finished: step 1 of 1' > $DDP_TERMINATION_LOG; exit 0";
  auto op = Start(ShellJob("store", 2, script, "  failurePolicy: {recovery: InPlace}\n"));
  ASSERT_TRUE(WaitFor([&] { return Starts(0).size() == 2; }, seconds(60))) << op->Output();
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json s = ReadStatus(RunDir());
        return s.is_object() && s.value("phase", "") == "Running" && s.value("recoveries", 0) == 1;
      },
      seconds(30)))
      << op->Output();
  WriteFileAtomic(d + "/finish", "1");
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  nlohmann::json s = ReadStatus(RunDir());
  EXPECT_EQ(s["phase"], "Succeeded");
  EXPECT_EQ(s["round"], 0);
  EXPECT_EQ(s["restarts"], 0);
  EXPECT_EQ(s["recoveries"], 1);
  EXPECT_EQ(s["lastFailure"]["pod"], "store-worker-0");
  EXPECT_EQ(Starts(1).size(), 1u);
  const auto zero = Starts(0);
  ASSERT_EQ(zero.size(), 2u);
  EXPECT_EQ(zero[0].substr(0, 2), "0 ");
  EXPECT_EQ(zero[1].substr(0, 2), "0 ");
  EXPECT_NE(op->Output().find("round 0: replacing pod store-worker-0 (rank 0 exited 75; "
                              "recovery 1 of 3)"),
            std::string::npos)
      << op->Output();
}

}  // namespace
}  // namespace ddp::testing_local
