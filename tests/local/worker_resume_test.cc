// With the real ddp-worker: a rank that exits 75 once makes round 1, which resumes from the last
// checkpoint and ends with exactly the parameters of an uninterrupted run with the same seed.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <gtest/gtest.h>

#include "e2e_util.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

// A tiny minGPT on synthetic tokens: seconds per run on one core per rank.
std::string WorkerJob(const std::string& name, const std::string& worker,
                      const std::string& fault, const std::string& recovery, int steps) {
  return "apiVersion: ddp.dev/v1alpha1\n"
         "kind: DDPJob\n"
         "metadata: {name: " + name + "}\n"
         "spec:\n"
         "  replicas: 2\n"
         "  rendezvous: {timeoutSeconds: 60}\n"
         "  failurePolicy: {recovery: " + recovery + "}\n"
         "  template:\n"
         "    spec:\n"
         "      terminationGracePeriodSeconds: 5\n"
         "      containers:\n"
         "      - name: worker\n"
         "        image: unused\n"
         "        command: [sh, -c]\n"
         // The fault is armed in round 0 only: round 1 replays the steps after the checkpoint.
         "        args: ['if [ \"$DDP_ROUND\" != 0 ]; then unset DDP_FAULT; fi; exec " + worker +
         " \"$@\"', ddp-worker, --model=mingpt, --dataset=synthetic, --n-layer=1, --n-head=2,"
         " --n-embd=32, --block-size=16, --steps=" + std::to_string(steps) + ", --batch-size=4, --checkpoint-every=10,"
         " --log-every=10, --seed=7, --threads=1]\n"
         "        env:\n"
         "        - {name: DDP_FAULT, value: \"" + fault + "\"}\n"
         "        - {name: OMP_NUM_THREADS, value: \"1\"}\n";
}

struct Result {
  int exit_code = -1;
  nlohmann::json status;
  std::string checksum0, checksum1;  // ranks 0 and 1 of the final round
  std::string output;
};

Result RunJob(const TempDir& dir, const std::string& name, const std::string& fault,
              const std::string& recovery = "Restart", int steps = 30) {
  const std::string worker = WorkerBin();
  const std::string manifest = dir.path() + "/" + name + ".yaml";
  const std::string run_dir = dir.path() + "/" + name;
  WriteFileAtomic(manifest, WorkerJob(name, worker, fault, recovery, steps));
  OperatorProcess op({DDP_OPERATOR_BIN, "local", "-f", manifest, "--run-dir", run_dir, "--plain"},
                     dir.path() + "/" + name + ".out");
  Result r;
  r.exit_code = op.Wait(seconds(150));
  r.output = op.Output();
  r.status = ReadStatus(run_dir);
  const std::string round = r.status.is_object() ? r.status["round"].dump() : "0";
  r.checksum0 = LastChecksum(ReadFile(run_dir + "/" + name + "-worker-0.round" + round + ".log"));
  r.checksum1 = LastChecksum(ReadFile(run_dir + "/" + name + "-worker-1.round" + round + ".log"));
  return r;
}

TEST(WorkerResume, RestartAfterExit75EndsWithTheUninterruptedParameters) {
  if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  TempDir dir;
  Result clean = RunJob(dir, "clean", "");
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  ASSERT_FALSE(clean.checksum0.empty()) << clean.output;
  EXPECT_EQ(clean.status["round"], 0);

  Result faulty = RunJob(dir, "faulty", "1:15:exit:75");
  ASSERT_EQ(faulty.exit_code, 0) << faulty.output;
  EXPECT_EQ(faulty.status["phase"], "Succeeded");
  EXPECT_EQ(faulty.status["round"], 1);
  EXPECT_EQ(faulty.status["restarts"], 1);
  EXPECT_EQ(faulty.status["lastFailure"]["exitCode"], 75);
  EXPECT_EQ(faulty.checksum0, faulty.checksum1);
  EXPECT_EQ(faulty.checksum0, clean.checksum0);
  const std::string log1 = ReadFile(dir.path() + "/faulty/faulty-worker-0.round1.log");
  // Rank 1 left before step 15 began, so 15 steps were committed: the survivor's just-in-time
  // checkpoint saves step 15 and the new round repeats none of them (the periodic one was 10).
  EXPECT_NE(log1.find("resumed_from=15"), std::string::npos) << log1;
}

// recovery InPlace: rank 1's trainer is killed once; its pod's supervisor restarts it, rank 0
// heals it by broadcast, and the job ends in round 0 with the uninterrupted run's parameters.
// The recovery reaches status.recoveries through rank 0's page (the local runner reads it).
TEST(WorkerResume, InPlaceRecoveryStaysInRoundZeroWithTheUninterruptedParameters) {
  if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  TempDir dir;
  constexpr int kSteps = 400;  // long enough for the runner to read rank 0's page after the heal
  Result clean = RunJob(dir, "clean", "", "Restart", kSteps);
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  Result healed = RunJob(dir, "healed", "1:15@0:kill", "InPlace", kSteps);
  ASSERT_EQ(healed.exit_code, 0) << healed.output;
  EXPECT_EQ(healed.status["phase"], "Succeeded");
  EXPECT_EQ(healed.status["round"], 0);
  EXPECT_EQ(healed.status["restarts"], 0);
  EXPECT_EQ(healed.status["recoveries"], 1) << healed.status.dump();
  EXPECT_EQ(healed.checksum0, clean.checksum0);
  EXPECT_EQ(healed.checksum1, clean.checksum0);
  const std::string log0 = ReadFile(dir.path() + "/healed/healed-worker-0.round0.log");
  EXPECT_NE(log0.find("healed 1 member(s) from rank 0 at step 15"), std::string::npos) << log0;
}

}  // namespace
}  // namespace ddp::testing_local
