// `ddp-operator local` end to end: real processes, the real planner, scripted workers.
// Shell-script workers stand in for ddp-worker wherever training itself is not the point.
#include <signal.h>
#include <sys/resource.h>

#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>

#include "e2e_util.h"
#include "operator/local/process.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;
using controller::local::GroupExists;

class LocalRunTest : public ::testing::Test {
 protected:
  std::string Manifest() const { return dir_.path() + "/job.yaml"; }
  std::string RunDir() const { return dir_.path() + "/run"; }
  std::string Dir() const { return dir_.path(); }
  std::unique_ptr<OperatorProcess> Start(const std::string& yaml,
                                         const std::vector<std::string>& flags = {}) {
    WriteFileAtomic(Manifest(), yaml);
    std::vector<std::string> args = {DDP_OPERATOR_BIN, "local", "-f", Manifest(), "--run-dir",
                                     RunDir(), "--plain"};
    args.insert(args.end(), flags.begin(), flags.end());
    return std::make_unique<OperatorProcess>(args, dir_.path() + "/out.txt");
  }
  nlohmann::json Status() const { return ReadStatus(RunDir()); }
  // The whole status.json (name, generation, status, stragglersReported).
  nlohmann::json ReadDoc() const {
    nlohmann::json doc =
        nlohmann::json::parse(ReadFile(RunDir() + "/status.json"), nullptr, false);
    return doc.is_object() ? doc : nlohmann::json::object();
  }
  std::string StatusField(const char* key) const {
    nlohmann::json s = Status();
    return s.is_object() && s.contains(key) ? s[key].dump() : "";
  }
  bool WaitStatus(const char* key, const std::string& value, seconds timeout = seconds(30)) {
    return WaitFor([&] { return StatusField(key) == value; }, timeout);
  }
  // The pid a worker script wrote to pid-<round>-<rank>, 0 while absent.
  pid_t WorkerPid(int round, int rank) const {
    std::string text = ReadFile(Dir() + "/pid-" + std::to_string(round) + "-" +
                                std::to_string(rank));
    return text.empty() ? 0 : std::atoi(text.c_str());
  }
  bool WaitWorker(int round, int rank) {
    return WaitFor([&] { return WorkerPid(round, rank) > 0; }, seconds(30));
  }
  // Workers that record their pid and run until the test creates the file "finish".
  std::string UntilFinish() const {
    return "echo $$$$ > " + Dir() + "/pid-$DDP_ROUND-$RANK; while [ ! -f " + Dir() +
           "/finish ]; do sleep 0.05; done; exit 0";
  }
  void Finish() { WriteFileAtomic(Dir() + "/finish", "1"); }

  TempDir dir_;
};

TEST_F(LocalRunTest, RetryableExitRestartsOnceThenSucceeds) {
  auto op = Start(ShellJob("once", 2,
                           "if [ $DDP_ROUND = 0 ] && [ $RANK = 1 ]; then exit 75; fi; "
                           "sleep 0.2; exit 0"));
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  nlohmann::json s = Status();
  EXPECT_EQ(s["phase"], "Succeeded");
  EXPECT_EQ(s["round"], 1);
  EXPECT_EQ(s["restarts"], 1);
  EXPECT_EQ(s["disruptions"], 0);
  EXPECT_NE(op->Output().find("round 0 -> 1"), std::string::npos) << op->Output();
}

// `ddp-operator` raises its soft open-file limit to the hard one at start (a container under
// containerd 2.x starts at 1024), and its local pods, its children, inherit it: started here at
// a soft limit of 256, each pod sees its soft limit equal to the hard one.
TEST_F(LocalRunTest, TheOperatorAndItsPodsRunAtTheHardOpenFileLimit) {
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_max == RLIM_INFINITY || lim.rlim_max <= 256) GTEST_SKIP() << "hard limit unlimited or too low";
  const rlimit saved = lim;
  lim.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  auto op = Start(ShellJob("nofile", 2, "ulimit -Sn > " + Dir() + "/nofile-$RANK; ulimit -Hn >> " +
                                            Dir() + "/nofile-$RANK; exit 0"));
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  for (int rank = 0; rank < 2; ++rank) {
    std::istringstream in(ReadFile(Dir() + "/nofile-" + std::to_string(rank)));
    std::string soft, hard;
    in >> soft >> hard;
    ASSERT_FALSE(hard.empty()) << "rank " << rank;
    EXPECT_NE(soft, "256") << "rank " << rank;
    EXPECT_EQ(soft, hard) << "rank " << rank;
  }
  EXPECT_NE(op->Output().find("open files: soft limit 256 -> "), std::string::npos) << op->Output();
}

TEST_F(LocalRunTest, ExitCodePolicyFailsOnAPermanentCode) {
  auto op = Start(ShellJob("perm", 2,
                           "if [ $RANK = 1 ]; then echo 'invalid config: lr'; exit 2; fi; "
                           "exec sleep 60",
                           "  failurePolicy: {restartPolicy: ExitCode}\n"));
  ASSERT_EQ(op->Wait(seconds(60)), 1) << op->Output();
  nlohmann::json s = Status();
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(s["restarts"], 0);
  EXPECT_EQ(s["lastFailure"]["pod"], "perm-worker-1");
  EXPECT_EQ(s["lastFailure"]["exitCode"], 2);
  // The summary shows the failed pod's log.
  EXPECT_NE(op->Output().find("| invalid config: lr"), std::string::npos) << op->Output();
}

TEST_F(LocalRunTest, MaxRestartsExhaustedFails) {
  auto op = Start(ShellJob("flaky", 1, "exit 75", "  failurePolicy: {maxRestarts: 2}\n"));
  ASSERT_EQ(op->Wait(seconds(60)), 1) << op->Output();
  nlohmann::json s = Status();
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(s["restarts"], 2);
  EXPECT_EQ(s["round"], 2);
}

TEST_F(LocalRunTest, UserKillIsADisruption) {
  auto op = Start(ShellJob("killed", 2,
                           "echo $$$$ > " + Dir() + "/pid-$DDP_ROUND-$RANK; "
                           "if [ $DDP_ROUND = 0 ]; then exec sleep 60; fi; exit 0"));
  ASSERT_TRUE(WaitWorker(0, 1)) << op->Output();
  ASSERT_TRUE(WaitStatus("phase", "\"Running\"")) << op->Output();
  ASSERT_EQ(kill(WorkerPid(0, 1), SIGKILL), 0);
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  nlohmann::json s = Status();
  EXPECT_EQ(s["phase"], "Succeeded");
  EXPECT_EQ(s["disruptions"], 1);
  EXPECT_EQ(s["restarts"], 0);
  EXPECT_EQ(s["round"], 1);
}

// A frozen pod (SIGSTOP of its process group: it holds a SIGTERM until continued) in a round the
// planner ends: SIGKILL at the end of its grace period (2 s) frees its name, and the next round
// runs to the end.
TEST_F(LocalRunTest, AFrozenPodNeverBlocksTheNextRound) {
  const std::string fail = Dir() + "/fail";
  auto op = Start(ShellJob("frozen", 2,
                           "echo $$$$ > " + Dir() + "/pid-$DDP_ROUND-$RANK; "
                           "if [ $DDP_ROUND = 0 ]; then while [ ! -f " + fail +
                               " ]; do sleep 0.05; done; "
                           "if [ $RANK = 0 ]; then exit 75; fi; exec sleep 60; fi; exit 0"));
  ASSERT_TRUE(WaitWorker(0, 0) && WaitWorker(0, 1)) << op->Output();
  ASSERT_TRUE(WaitStatus("phase", "\"Running\"")) << op->Output();
  const pid_t frozen = WorkerPid(0, 1);  // sh -c is the pod's process group leader
  ASSERT_EQ(kill(-frozen, SIGSTOP), 0);
  WriteFileAtomic(fail, "1");
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  nlohmann::json s = Status();
  EXPECT_EQ(s["phase"], "Succeeded");
  EXPECT_EQ(s["round"], 1);
  EXPECT_EQ(s["restarts"], 1);
  EXPECT_TRUE(WaitFor([&] { return !GroupExists(frozen); }, seconds(10)));
}

TEST_F(LocalRunTest, SuspendAndResumeByEditing) {
  const std::string script = UntilFinish();
  auto op = Start(ShellJob("susp", 2, script));
  ASSERT_TRUE(WaitWorker(0, 0) && WaitWorker(0, 1)) << op->Output();
  ASSERT_TRUE(WaitStatus("phase", "\"Running\"")) << op->Output();
  WriteFileAtomic(Manifest(), ShellJob("susp", 2, script, "  runPolicy: {suspend: true}\n"));
  ASSERT_TRUE(WaitStatus("phase", "\"Suspended\"")) << op->Output();
  ASSERT_TRUE(WaitFor([&] { return !GroupExists(WorkerPid(0, 0)) && !GroupExists(WorkerPid(0, 1)); },
                      seconds(10)));
  WriteFileAtomic(Manifest(), ShellJob("susp", 2, script, "  runPolicy: {suspend: false}\n"));
  ASSERT_TRUE(WaitStatus("phase", "\"Running\"")) << op->Output();
  Finish();
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  EXPECT_EQ(Status()["restarts"], 0);
  EXPECT_NE(op->Output().find("applied edit"), std::string::npos);
}

TEST_F(LocalRunTest, ActiveDeadlineFailsTheJob) {
  auto op = Start(ShellJob("late", 2, "exec sleep 60",
                           "  runPolicy: {activeDeadlineSeconds: 2}\n"));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(op->Wait(seconds(60)), 1) << op->Output();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(20));
  nlohmann::json s = Status();
  EXPECT_EQ(s["phase"], "Failed");
  bool deadline = false;
  for (const auto& c : s["conditions"]) {
    deadline = deadline || (c["type"] == "Failed" && c["reason"] == "DeadlineExceeded");
  }
  EXPECT_TRUE(deadline) << s.dump();
}

TEST_F(LocalRunTest, ResizeTwoToThreeByEditing) {
  const std::string script = UntilFinish();
  auto op = Start(ShellJob("grow", 2, script));
  ASSERT_TRUE(WaitStatus("phase", "\"Running\"")) << op->Output();
  WriteFileAtomic(Manifest(), ShellJob("grow", 3, script));
  ASSERT_TRUE(WaitStatus("replicas", "3")) << op->Output();
  ASSERT_TRUE(WaitStatus("phase", "\"Running\"")) << op->Output();
  const int round = Status()["round"];
  EXPECT_GE(round, 1);
  ASSERT_TRUE(WaitWorker(round, 2)) << op->Output();
  EXPECT_EQ(Status()["worldSize"], 3);
  Finish();
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  EXPECT_EQ(Status()["restarts"], 0);
}

TEST_F(LocalRunTest, InvalidEditIsIgnored) {
  const std::string script = UntilFinish();
  auto op = Start(ShellJob("keep", 1, script));
  ASSERT_TRUE(WaitWorker(0, 0)) << op->Output();
  WriteFileAtomic(Manifest(), ShellJob("keep", 0, script));
  ASSERT_TRUE(WaitFor([&] { return op->Output().find("edit ignored") != std::string::npos; },
                      seconds(10)))
      << op->Output();
  EXPECT_NE(op->Output().find("spec.replicas"), std::string::npos);
  Finish();
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  EXPECT_EQ(Status()["round"], 0);
}

TEST_F(LocalRunTest, CtrlCLeavesNoProcessBehind) {
  auto op = Start(ShellJob("intr", 2,
                           "echo $$$$ > " + Dir() + "/pid-$DDP_ROUND-$RANK; "
                           "trap '' TERM; sleep 60 & sleep 60; wait"));
  ASSERT_TRUE(WaitWorker(0, 0) && WaitWorker(0, 1)) << op->Output();
  ASSERT_EQ(kill(op->pid(), SIGINT), 0);
  // The workers ignore SIGTERM: they end only by the SIGKILL after the grace period.
  EXPECT_EQ(op->Wait(seconds(30)), 128 + SIGINT) << op->Output();
  // A killed grandchild is a zombie for a moment, until init reaps it.
  EXPECT_TRUE(WaitFor([&] { return !GroupExists(WorkerPid(0, 0)); }, seconds(5)));
  EXPECT_TRUE(WaitFor([&] { return !GroupExists(WorkerPid(0, 1)); }, seconds(5)));
}

TEST_F(LocalRunTest, TtlAfterFinishedEndsTheRun) {
  auto op = Start(ShellJob("ttl", 1, "exit 0", "  runPolicy: {ttlSecondsAfterFinished: 1}\n"));
  ASSERT_EQ(op->Wait(seconds(30)), 0) << op->Output();
  EXPECT_NE(op->Output().find("ttlSecondsAfterFinished elapsed"), std::string::npos)
      << op->Output();
}

// Rank 0's /metrics (here a static page served on the DDP_METRICS_PORT the executor picked)
// drives the status line's step, progress bar and loss.
TEST_F(LocalRunTest, StatusLineShowsRankZeroMetrics) {
  if (system("python3 -c 'import http.server' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 not available to serve a metrics page";
  }
  WriteFileAtomic(Dir() + "/metrics",
                  "# TYPE ddp_worker_steps_total counter\nddp_worker_steps_total 30\n"
                  "# TYPE ddp_worker_total_steps gauge\nddp_worker_total_steps 120\n"
                  "# TYPE ddp_worker_loss gauge\nddp_worker_loss 1.5\n");
  auto op = Start(ShellJob("scrape", 1,
                           "cd " + Dir() + " && exec python3 -m http.server $DDP_METRICS_PORT "
                           "--bind 127.0.0.1"));
  const std::string expected = "step 30/120 [#####---------------]  25%  loss 1.5000";
  EXPECT_TRUE(WaitFor([&] { return op->Output().find(expected) != std::string::npos; },
                      seconds(40)))
      << op->Output();
  kill(op->pid(), SIGTERM);
  EXPECT_EQ(op->Wait(seconds(30)), 128 + SIGTERM);
}

// status.json carries the same status.progress as the cluster, and a step that stops advancing
// for hangTimeoutSeconds restarts the job (reason Hung). Targets: progress within 15 s of the
// step; the restart within hangTimeoutSeconds + 15 s.
TEST_F(LocalRunTest, StatusJsonHasProgressAndAHungJobRestarts) {
  if (system("python3 -c 'import http.server' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 not available to serve a metrics page";
  }
  WriteFileAtomic(Dir() + "/metrics",
                  "# TYPE ddp_worker_steps_total counter\nddp_worker_steps_total 30\n"
                  "# TYPE ddp_worker_total_steps gauge\nddp_worker_total_steps 120\n"
                  "# TYPE ddp_worker_loss gauge\nddp_worker_loss 1.5\n");
  constexpr int kHangSeconds = 3;
  // status.json appears with the first status write.
  auto status = [&] {
    nlohmann::json st = Status();
    return st.is_object() ? st : nlohmann::json::object();
  };
  auto op = Start(ShellJob("hang", 1,
                           "cd " + Dir() + " && exec python3 -m http.server $DDP_METRICS_PORT "
                           "--bind 127.0.0.1",
                           "  failurePolicy: {hangTimeoutSeconds: 3}\n"));
  ASSERT_TRUE(WaitFor([&] { return status().value("phase", "") == "Running"; }, seconds(30)))
      << op->Output();
  const auto running = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor(
      [&] { return status().value("progress", nlohmann::json::object()).value("step", -1) == 30; },
      seconds(15)))
      << op->Output();
  nlohmann::json progress = status()["progress"];
  EXPECT_EQ(progress["totalSteps"], 120);
  EXPECT_EQ(progress["loss"], 1.5);
  EXPECT_TRUE(progress.contains("updatedAt"));
  ASSERT_TRUE(WaitFor([&] { return status().value("round", 0) >= 1; },
                      seconds(kHangSeconds + 15) -
                          std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - running)))
      << op->Output();
  nlohmann::json st = status();
  EXPECT_EQ(st["lastFailure"]["reason"], "Hung");
  EXPECT_NE(st["lastFailure"]["message"].get<std::string>().find("last step 30 seen at"),
            std::string::npos)
      << st.dump();
  // The console line may follow status.json's write by a moment: wait for it, briefly.
  EXPECT_TRUE(WaitFor(
      [&] { return op->Output().find("hung, no step progress for 3s: last step 30") !=
                   std::string::npos; },
      seconds(10)))
      << op->Output();
  kill(op->pid(), SIGTERM);
  EXPECT_EQ(op->Wait(seconds(30)), 128 + SIGTERM);
}

// Every rank's page is read: rank 1 spends 5 s of each 10 s step busy, rank 0 1 s (waiting for
// rank 1 in the all-reduce the rest of the time), so rank 1 is reported, once, and not restarted.
TEST_F(LocalRunTest, AStragglerIsReportedOnceAndNotRestarted) {
  if (system("python3 -c 'import http.server' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 not available to serve a metrics page";
  }
  // Each pod serves its own directory and rewrites its page (cumulative counters) every 0.2 s.
  const std::string script =
      "d=" + Dir() + "/m$RANK; mkdir -p $d; "
      "python3 -m http.server $DDP_METRICS_PORT --bind 127.0.0.1 --directory $d & "
      "i=0; while true; do i=$$((i+1)); "
      "if [ $RANK = 1 ]; then e=$$((i*5)); else e=$$((i*9)); fi; "
      "printf '# TYPE ddp_worker_step_seconds histogram\\nddp_worker_step_seconds_sum %s\\n"
      "ddp_worker_step_seconds_count %s\\n# TYPE ddp_worker_exposed_allreduce_seconds_total "
      "counter\\nddp_worker_exposed_allreduce_seconds_total %s\\n' $$((i*10)) $i $e > $d/.t && "
      "mv $d/.t $d/metrics; sleep 0.2; done";
  auto op = Start(ShellJob("slow", 2, script), {"--straggler-reads", "2"});
  const std::string report =
      "rank 1 is a straggler: 5.000 s busy per step, 5.0x the median of the other ranks "
      "(1.000 s) (reported, not restarted)";
  ASSERT_TRUE(WaitFor([&] { return op->Output().find(report) != std::string::npos; },
                      seconds(60)))
      << op->Output();
  EXPECT_EQ(op->Output().find("rank 0 is a straggler"), std::string::npos) << op->Output();
  kill(op->pid(), SIGTERM);
  EXPECT_EQ(op->Wait(seconds(30)), 128 + SIGTERM);
  const std::string out = op->Output();
  EXPECT_EQ(out.find(report), out.rfind(report)) << "reported twice:\n" << out;
  EXPECT_NE(out.find("stragglers reported: 1"), std::string::npos) << out;
  EXPECT_EQ(ReadDoc().value("stragglersReported", 0), 1);
  EXPECT_EQ(Status().value("restarts", -1), 0);
  EXPECT_EQ(Status().value("round", -1), 0);
}

// Rank 0's page carries every rank's busy time (a ddp-worker of this version): it is read alone.
// Rank 1 serves no page at all, so a report proves the per-rank series are the source: rank 1 is
// busy 0.4 s per step (4 s per 10 steps), rank 0 0.1 s.
TEST_F(LocalRunTest, RankZerosPerRankSeriesAloneFindTheStraggler) {
  if (system("python3 -c 'import http.server' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 not available to serve a metrics page";
  }
  const std::string script =
      "if [ $RANK != 0 ]; then exec sleep 600; fi; d=" + Dir() + "/m0; mkdir -p $d; "
      "python3 -m http.server $DDP_METRICS_PORT --bind 127.0.0.1 --directory $d & "
      "i=0; while true; do i=$$((i+1)); "
      "printf '# TYPE ddp_worker_rank_busy_seconds_total counter\\n"
      "ddp_worker_rank_busy_seconds_total{peer_rank=\"0\"} %s\\n"
      "ddp_worker_rank_busy_seconds_total{peer_rank=\"1\"} %s\\n"
      "# TYPE ddp_worker_rank_busy_steps_total counter\\nddp_worker_rank_busy_steps_total %s\\n' "
      "$i $$((i*4)) $$((i*10)) > $d/.t && mv $d/.t $d/metrics; sleep 0.2; done";
  auto op = Start(ShellJob("busy", 2, script), {"--straggler-reads", "2"});
  const std::string report =
      "rank 1 is a straggler: 0.400 s busy per step, 4.0x the median of the other ranks "
      "(0.100 s) (reported, not restarted)";
  ASSERT_TRUE(WaitFor([&] { return op->Output().find(report) != std::string::npos; },
                      seconds(60)))
      << op->Output();
  // status.json says so too, without a status change.
  ASSERT_TRUE(WaitFor([&] { return ReadDoc().value("stragglersReported", 0) == 1; },
                      seconds(10)));
  EXPECT_EQ(op->Output().find("rank 0 is a straggler"), std::string::npos) << op->Output();
  kill(op->pid(), SIGTERM);
  EXPECT_EQ(op->Wait(seconds(30)), 128 + SIGTERM);
  EXPECT_EQ(Status().value("round", -1), 0);
}

TEST_F(LocalRunTest, BadStragglerFlagsAreUsageErrors) {
  auto op = Start(ShellJob("flags", 1, "true"), {"--straggler-factor", "0.5"});
  EXPECT_EQ(op->Wait(seconds(20)), 2);
  EXPECT_NE(op->Output().find("--straggler-factor wants a number > 1"), std::string::npos)
      << op->Output();
  op = Start(ShellJob("flags", 1, "true"), {"--straggler-reads", "0"});
  EXPECT_EQ(op->Wait(seconds(20)), 2);
  EXPECT_NE(op->Output().find("--straggler-reads wants a count >= 1"), std::string::npos)
      << op->Output();
}

TEST_F(LocalRunTest, InvalidManifestIsAUsageError) {
  auto op = Start(ShellJob("Bad_Name", 0, "true"));
  ASSERT_EQ(op->Wait(seconds(20)), 2);
  EXPECT_NE(op->Output().find("metadata.name"), std::string::npos) << op->Output();
  EXPECT_NE(op->Output().find("spec.replicas"), std::string::npos) << op->Output();
}

// Local mode has no scheduler: a schedulingPolicy and a Kueue queue label are validated like
// anywhere else, reported once, and create nothing (no PodGroup, no wait for admission).
TEST_F(LocalRunTest, GangSchedulingIsValidatedReportedAndCreatesNothing) {
  const std::string policy = "  runPolicy:\n    schedulingPolicy: {minAvailable: 3}\n";
  auto op = Start(ShellJob("gang", 2, "exit 0", policy));
  ASSERT_EQ(op->Wait(seconds(20)), 2) << op->Output();
  EXPECT_NE(op->Output().find("spec.runPolicy.schedulingPolicy.minAvailable (3) exceeds the "
                              "job's largest round (2 pods)"),
            std::string::npos)
      << op->Output();

  std::string yaml = ShellJob("gang", 2, "exit 0",
                              "  runPolicy:\n    schedulingPolicy: {minAvailable: 2, queue: q}\n");
  yaml.replace(yaml.find("  name: gang\n"), 12,
               "  name: gang\n  labels: {kueue.x-k8s.io/queue-name: team-a}\n");
  op = Start(yaml);
  ASSERT_EQ(op->Wait(seconds(60)), 0) << op->Output();
  EXPECT_NE(op->Output().find("spec.runPolicy.schedulingPolicy and the label "
                              "kueue.x-k8s.io/queue-name ignored: local mode has no scheduler"),
            std::string::npos)
      << op->Output();
  EXPECT_EQ(op->Output().find("PodGroup"), std::string::npos) << op->Output();
  const nlohmann::json s = Status();
  EXPECT_EQ(s["phase"], "Succeeded");
  for (const auto& c : s["conditions"]) EXPECT_NE(c["type"], "Queued") << s.dump();
}

TEST_F(LocalRunTest, MissingCommandIsAUsageError) {
  std::string yaml = ShellJob("nocmd", 1, "true");
  yaml.replace(yaml.find("[sh, -c,"), 8, "[no-such-command-xyz,");
  auto op = Start(yaml);
  ASSERT_EQ(op->Wait(seconds(20)), 2);
  EXPECT_NE(op->Output().find("no-such-command-xyz"), std::string::npos) << op->Output();
}

}  // namespace
}  // namespace ddp::testing_local
