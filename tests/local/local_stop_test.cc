// Succeeded means trained (DESIGN.md "Worker exit codes", "Drains, silent nodes and the budget"):
// every pod of a running job stopped at once, all but one, two a few seconds apart, or one killed
// during the group's stop, under recovery InPlace and Restart, with the real ddp-worker in local
// mode (SIGTERM to a pod's process group is what a kubelet sends a deleted, evicted or drained
// pod). Nobody asked the job to stop, so none of these is its end: each run must train every step
// and end Succeeded on the parameters of an undisturbed run, with the total step in its status.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include "worker_job.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

constexpr int kSteps = 2000;  // a few seconds of training: room for a stop and a new round

class LocalStopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
    rlimit none{0, 0};
    setrlimit(RLIMIT_CORE, &none);
  }

  // Starts `o` and waits until rank 0 logged step 300 (training well under way).
  std::unique_ptr<LocalJob> StartTraining(JobOptions o) {
    o.steps = kSteps;
    auto job = std::make_unique<LocalJob>(dir_, o);
    EXPECT_TRUE(WaitFor([&] { return LocalJob::LastStep(job->PodLog("worker-0")) >= 300; },
                        seconds(60)))
        << job->op().Output();
    return job;
  }

  // SIGTERM to pod `pod`'s process group, as a kubelet stops a deleted pod.
  static void Stop(const LocalJob& job, const std::string& pod, int sig = SIGTERM) {
    const pid_t group = job.PodGroup(pod);
    ASSERT_GT(group, 0) << pod;
    ASSERT_EQ(kill(-group, sig), 0) << pod;
  }

  // The job ended Succeeded at the total step, and every process of its last round that printed
  // a summary (at least `replicas`, whatever their incarnation) ended on `reference`. (A trainer
  // stopped in an earlier round printed one too, at the step it stopped.)
  void ExpectTrainedToTheEnd(LocalJob& job, int replicas, const std::string& reference) {
    ASSERT_EQ(job.op().Wait(seconds(120)), 0) << job.op().Output();
    const nlohmann::json st = job.Status();
    EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
    ASSERT_TRUE(st.contains("progress")) << st.dump();
    EXPECT_EQ(st["progress"].value("step", -1), kSteps) << st.dump();
    EXPECT_EQ(st["progress"].value("totalSteps", -1), kSteps) << st.dump();
    EXPECT_FALSE(st["progress"].contains("etaSeconds")) << st.dump();
    int finished = 0;
    const std::string last_round = ".round" + std::to_string(Int(st, "round")) + ".";
    const std::string run_dir = dir_.path() + "/" + job_name_;
    DIR* d = opendir(run_dir.c_str());
    ASSERT_NE(d, nullptr) << run_dir;
    for (dirent* e; (e = readdir(d)) != nullptr;) {
      const std::string file = e->d_name;
      if (file.size() < 4 || file.substr(file.size() - 4) != ".log") continue;
      if (file.find(last_round) == std::string::npos) continue;
      const std::string sum = LastChecksum(job.Log(file));
      if (sum.empty()) continue;
      ++finished;
      EXPECT_EQ(sum, reference) << file;
    }
    closedir(d);
    EXPECT_GE(finished, replicas) << job.op().Output();
  }

  JobOptions Options(const std::string& name, const std::string& recovery, int replicas) {
    job_name_ = name;
    JobOptions o;
    o.name = name;
    o.recovery = recovery;
    o.replicas = replicas;
    return o;
  }

  TempDir dir_;
  std::string job_name_;
};

// The false success: every pod of an InPlace job at once. The group stops together with a
// checkpoint, the replacements find the stopped group and say so, and the operator resumes the
// job from the checkpoint in a new round instead of calling it done.
TEST_F(LocalStopTest, EveryPodStoppedAtOnceInPlaceTrainsToTheEnd) {
  const std::string reference = ReferenceChecksum(dir_, kSteps, 3);
  auto job = StartTraining(Options("all", "InPlace", 3));
  for (const char* pod : {"worker-0", "worker-1", "worker-2"}) Stop(*job, pod);
  ExpectTrainedToTheEnd(*job, 3, reference);
  const nlohmann::json st = job->Status();
  EXPECT_GE(Int(st, "round"), 1) << "resumed from the stop's checkpoint in a new round";
  EXPECT_EQ(Int(st, "restarts"), 0) << "nobody's failure: " << st.dump();
  EXPECT_EQ(Int(st, "recoveries"), 0) << st.dump();
  EXPECT_GE(Int(st, "disruptions"), 1) << st.dump();
}

TEST_F(LocalStopTest, EveryPodStoppedAtOnceUnderRestartTrainsToTheEnd) {
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  auto job = StartTraining(Options("restart", "Restart", 2));
  for (const char* pod : {"worker-0", "worker-1"}) Stop(*job, pod);
  ExpectTrainedToTheEnd(*job, 2, reference);
  EXPECT_GE(Int(job->Status(), "round"), 1);
}

// All but one: the survivor keeps the state and heals both replacements in place.
TEST_F(LocalStopTest, AllButOnePodStoppedHealsInPlace) {
  const std::string reference = ReferenceChecksum(dir_, kSteps, 3);
  auto job = StartTraining(Options("but-one", "InPlace", 3));
  for (const char* pod : {"worker-0", "worker-2"}) Stop(*job, pod);
  ExpectTrainedToTheEnd(*job, 3, reference);
  EXPECT_EQ(Int(job->Status(), "round"), 0) << job->Status().dump();
}

// Two pods a few seconds apart: pod 0 departs and is replaced; pod 1 is stopped once the
// operator has replaced pod 0 (its replacement may or may not hold the state yet).
TEST_F(LocalStopTest, TwoPodsStoppedSecondsApartTrainToTheEnd) {
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  auto job = StartTraining(Options("apart", "InPlace", 2));
  Stop(*job, "worker-0");
  ASSERT_TRUE(WaitFor(
      [&] { return job->op().Output().find("replacing pod apart-worker-0") != std::string::npos; },
      seconds(30)))
      << job->op().Output();
  Stop(*job, "worker-1");
  ExpectTrainedToTheEnd(*job, 2, reference);
}

// A pod killed while the group stops (it may die mid-checkpoint): the job still resumes, from
// the last complete checkpoint, and trains to the end.
TEST_F(LocalStopTest, APodKilledDuringTheGroupsStopTrainsToTheEnd) {
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  auto job = StartTraining(Options("during", "InPlace", 2));
  for (const char* pod : {"worker-0", "worker-1"}) Stop(*job, pod);
  ASSERT_TRUE(WaitFor(
      [&] {
        return job->PodLog("worker-1").find("the job stops") != std::string::npos;
      },
      seconds(30)))
      << job->PodLog("worker-1");
  Stop(*job, "worker-1", SIGKILL);
  ExpectTrainedToTheEnd(*job, 2, reference);
}

}  // namespace
}  // namespace ddp::testing_local
