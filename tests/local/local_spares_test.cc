// `ddp-operator local` with recovery InPlace and the real ddp-worker (DESIGN.md "Hot spares",
// "Drains, silent nodes and the budget"): a spare takes the rank of a killed pod 0 and the run
// ends bit-identical; a drained pod costs no round and no charge; the failure budget is charged
// once per failure wherever it is seen, and the job fails on the failure past it. Faults come from
// outside as a cluster delivers them (signals to a pod's process group) and from DDP_FAULT.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <regex>

#include <gtest/gtest.h>

#include "e2e_util.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

struct JobOptions {
  std::string name;
  std::string recovery = "InPlace";
  int replicas = 2;
  int spares = 0;
  int max_restarts = 3;
  int steps = 1500;
  std::string fault;    // DDP_FAULT for every pod, "" for none
  std::string wrapper;  // shell run before exec'ing ddp-worker ($(VAR) expansion: write $ as $$)
};

// A tiny minGPT on synthetic tokens, one thread per rank: a few hundred steps a second here. Each
// pod writes its main process id (its process group) to <dir>/pid-<pod name>.
std::string WorkerJob(const TempDir& dir, const JobOptions& o) {
  const std::string pid_file = dir.path() + "/pid-$DDP_POD_NAME";
  return "apiVersion: ddp.dev/v1alpha1\n"
         "kind: DDPJob\n"
         "metadata: {name: " + o.name + "}\n"
         "spec:\n"
         "  replicas: " + std::to_string(o.replicas) + "\n"
         "  rendezvous: {timeoutSeconds: 60}\n"
         "  failurePolicy: {recovery: " + o.recovery + ", maxRestarts: " +
         std::to_string(o.max_restarts) +
         (o.recovery == "InPlace" ? ", livenessTimeoutSeconds: 5, spares: " +
                                        std::to_string(o.spares)
                                  : std::string()) +
         "}\n"
         "  template:\n"
         "    spec:\n"
         "      terminationGracePeriodSeconds: 5\n"
         "      containers:\n"
         "      - name: worker\n"
         "        image: unused\n"
         "        command: [sh, -c]\n"
         "        args: ['echo $$$$ > " + pid_file + "; " + o.wrapper + " exec " + WorkerBin() +
         " \"$@\"', ddp-worker, --model=mingpt, --dataset=synthetic, --n-layer=1, --n-head=2,"
         " --n-embd=32, --block-size=16, --steps=" + std::to_string(o.steps) +
         ", --batch-size=4, --checkpoint-every=1000, --log-every=10, --seed=7, --threads=1]\n"
         "        env:\n"
         "        - {name: DDP_FAULT, value: \"" + o.fault + "\"}\n"
         "        - {name: OMP_NUM_THREADS, value: \"1\"}\n";
}

// One `ddp-operator local` run of `o` in <dir>/<name>.
class LocalJob {
 public:
  LocalJob(const TempDir& dir, const JobOptions& o)
      : dir_(dir), run_dir_(dir.path() + "/" + o.name), name_(o.name) {
    const std::string manifest = dir.path() + "/" + o.name + ".yaml";
    WriteFileAtomic(manifest, WorkerJob(dir, o));
    op_ = std::make_unique<OperatorProcess>(
        std::vector<std::string>{DDP_OPERATOR_BIN, "local", "-f", manifest, "--run-dir", run_dir_,
                                 "--plain"},
        dir.path() + "/" + o.name + ".out");
  }
  OperatorProcess& op() { return *op_; }
  nlohmann::json Status() const { return ReadStatus(run_dir_); }
  std::string Log(const std::string& file) const { return ReadFile(run_dir_ + "/" + file); }
  std::string PodLog(const std::string& pod, int incarnation = 0) const {
    return Log(name_ + "-" + pod + ".round0" +
               (incarnation > 0 ? "." + std::to_string(incarnation) : "") + ".log");
  }
  // The process group of pod `pod` ("worker-0") as it wrote it; -1 until it did.
  pid_t PodGroup(const std::string& pod) const {
    const std::string text = ReadFile(dir_.path() + "/pid-" + name_ + "-" + pod);
    return text.empty() ? -1 : static_cast<pid_t>(std::stol(text));
  }
  // The last step rank 0 logged in `pod_log` ("step N/T"), -1 before any.
  static int LastStep(const std::string& pod_log) {
    static const std::regex kRe(R"(\] step (\d+)/)");
    int last = -1;
    for (std::sregex_iterator it(pod_log.begin(), pod_log.end(), kRe), end; it != end; ++it) {
      last = std::stoi((*it)[1]);
    }
    return last;
  }

 private:
  const TempDir& dir_;
  std::string run_dir_, name_;
  std::unique_ptr<OperatorProcess> op_;
};

int Int(const nlohmann::json& status, const char* key) {
  return status.is_object() ? status.value(key, -1) : -1;
}

std::string FailedReason(const nlohmann::json& status) {
  for (const auto& c : status.value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == "Failed" && c.value("status", "") == "True") return c["reason"];
  }
  return "";
}

// The fault-free run every faulty run must end on: the same training under recovery Restart.
std::string ReferenceChecksum(const TempDir& dir, int steps) {
  JobOptions o;
  o.name = "clean";
  o.recovery = "Restart";
  o.steps = steps;
  LocalJob clean(dir, o);
  EXPECT_EQ(clean.op().Wait(seconds(60)), 0) << clean.op().Output();
  const std::string sum = LastChecksum(clean.PodLog("worker-0"));
  EXPECT_FALSE(sum.empty()) << clean.PodLog("worker-0");
  EXPECT_EQ(LastChecksum(clean.PodLog("worker-1")), sum);
  return sum;
}

class LocalSparesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
    // Crash signals below must not leave core files behind.
    rlimit none{0, 0};
    setrlimit(RLIMIT_CORE, &none);
  }
  TempDir dir_;
};

// (a) Pod 0's process group is SIGKILLed mid-run (its node died; in local mode a signal the
// operator did not send is a disruption): the idle spare takes rank 0 and is healed by broadcast,
// pod 0 is recreated in the same round and registers as the new idle spare (readySpares back to
// 1), and both ranks end on the fault-free run's parameters.
TEST_F(LocalSparesTest, ASpareTakesRankZeroOfAKilledPodAndTheRunEndsBitIdentical) {
  constexpr int kSteps = 1500;
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  JobOptions o;
  o.name = "spare";
  o.spares = 1;
  o.steps = kSteps;
  LocalJob job(dir_, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 200; },
                      seconds(30)))
      << job.op().Output();
  const pid_t pod0 = job.PodGroup("worker-0");
  ASSERT_GT(pod0, 0);
  ASSERT_EQ(kill(-pod0, SIGKILL), 0);
  ASSERT_EQ(job.op().Wait(seconds(60)), 0) << job.op().Output();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(Int(st, "round"), 0);
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "recoveries"), 0);
  EXPECT_EQ(Int(st, "disruptions"), 1) << st.dump();
  EXPECT_EQ(Int(st, "spares"), 1);
  EXPECT_EQ(Int(st, "readySpares"), 1) << "the recreated pod 0 is the idle spare: " << st.dump();
  EXPECT_EQ(st["lastFailure"]["pod"], "spare-worker-0");
  // The killed pod 0 never finished; the spare did, as rank 0; pod 1 kept rank 1 throughout.
  EXPECT_EQ(LastChecksum(job.PodLog("worker-0")), "");
  const std::string spare_log = job.PodLog("spare-0");
  EXPECT_NE(spare_log.find("summary rank=0 "), std::string::npos) << spare_log;
  EXPECT_EQ(LastChecksum(spare_log), reference) << spare_log;
  EXPECT_EQ(LastChecksum(job.PodLog("worker-1")), reference);
  // The recreated pod 0 (its second log) trained nothing: it waited as the spare.
  const std::string again = job.PodLog("worker-0", 1);
  EXPECT_FALSE(again.empty());
  EXPECT_EQ(LastChecksum(again), "") << again;
}

// (c) A drain: SIGTERM reaches pod 1's processes only. Its supervisor leaves (a departure, not a
// job stop): one disruption, no round, no charge; the new pod 1 is healed in place from pod 0's
// memory, nothing is reloaded, and the run ends on the fault-free parameters.
TEST_F(LocalSparesTest, ADrainedPodIsADisruptionHealedInPlace) {
  constexpr int kSteps = 3000;  // the departure waits out the group's stop window (3 s)
  const std::string reference = ReferenceChecksum(dir_, kSteps);
  JobOptions o;
  o.name = "drain";
  o.steps = kSteps;
  LocalJob job(dir_, o);
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 200; },
                      seconds(30)))
      << job.op().Output();
  const pid_t pod1 = job.PodGroup("worker-1");
  ASSERT_GT(pod1, 0);
  ASSERT_EQ(kill(-pod1, SIGTERM), 0);
  ASSERT_EQ(job.op().Wait(seconds(60)), 0) << job.op().Output();

  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(Int(st, "round"), 0);
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "recoveries"), 0);
  EXPECT_EQ(Int(st, "disruptions"), 1) << st.dump();
  EXPECT_EQ(st["lastFailure"]["pod"], "drain-worker-1");
  // The operator learns it from the pod's own termination message (Departed) or from the group,
  // which fences a departed pod; either way a disruption of rank 1.
  EXPECT_NE(job.op().Output().find("replacing pod drain-worker-1 (rank 1 disrupted"),
            std::string::npos)
      << job.op().Output();
  EXPECT_EQ(LastChecksum(job.PodLog("worker-0")), reference);
  EXPECT_EQ(LastChecksum(job.PodLog("worker-1", 1)), reference);
  EXPECT_EQ(LastChecksum(job.PodLog("worker-1")), "") << "the drained pod left before the end";
  EXPECT_EQ(job.PodLog("worker-0").find("resumed from checkpoint"), std::string::npos);
  EXPECT_EQ(job.PodLog("worker-1", 1).find("resumed from checkpoint"), std::string::npos);
}

// (b) The budget (issue 19's scenario), maxRestarts 3: rank 1's trainer is killed in its pod
// (healed in place, charged by the group), pod 0's supervisor crashes (SIGABRT: a failure in local
// mode, unlike SIGKILL/SIGTERM which are disruptions; replaced alone, charged by the operator),
// then the replacement's rank 0 trainer is killed twice: the first is charged (3 of 3), the second
// is refused in the pod (BudgetSpent) and the job fails with MaxRestartsExceeded. Each failure is
// charged once: restarts + recoveries end at 3 and never exceed it.
TEST_F(LocalSparesTest, EachFailureIsChargedOnceAndTheOnePastTheBudgetFailsTheJob) {
  const std::string d = dir_.path();
  JobOptions o;
  o.name = "budget";
  o.steps = 20000;  // never reached: the job fails first
  o.fault = "1:50@0:kill";
  // Pods started once the test armed the fault: rank 0 killed at the armed step, every time.
  o.wrapper = "if [ -f " + d + "/armed ]; then export DDP_FAULT=0:$$(cat " + d + "/armed):kill; fi;";
  LocalJob job(dir_, o);
  int most_charged = 0;
  auto charged = [&] {
    const nlohmann::json st = job.Status();
    const int n = std::max(0, Int(st, "restarts")) + std::max(0, Int(st, "recoveries"));
    most_charged = std::max(most_charged, n);
    return st;
  };
  // 1. The in-pod heal reaches the status through the rendezvous pod's report, once.
  ASSERT_TRUE(WaitFor([&] { return Int(charged(), "recoveries") == 1; }, seconds(40)))
      << job.op().Output();
  // 2. Pod 0's supervisor crashes; its replacement's rank 0 will be killed 150 steps later.
  const int now = LocalJob::LastStep(job.PodLog("worker-0"));
  ASSERT_GE(now, 50);
  WriteFileAtomic(d + "/armed", std::to_string(now + 150));
  const pid_t pod0 = job.PodGroup("worker-0");
  ASSERT_GT(pod0, 0);
  ASSERT_EQ(kill(pod0, SIGABRT), 0);
  // 3-4. Two more kills; the job ends.
  ASSERT_TRUE(WaitFor(
      [&] {
        charged();
        return !job.op().running();
      },
      seconds(60)))
      << job.op().Output();
  EXPECT_EQ(job.op().Wait(seconds(1)), 1) << job.op().Output();

  const nlohmann::json st = charged();
  EXPECT_EQ(st["phase"], "Failed") << st.dump();
  EXPECT_EQ(FailedReason(st), "MaxRestartsExceeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0);
  EXPECT_EQ(Int(st, "restarts"), 0);
  EXPECT_EQ(Int(st, "recoveries"), 3) << st.dump();
  EXPECT_EQ(Int(st, "disruptions"), 0);
  EXPECT_LE(most_charged, 3);
  // The failure past the budget is the replacement pod's, refused in the pod.
  EXPECT_EQ(st["lastFailure"]["pod"], "budget-worker-0");
  EXPECT_NE(st["lastFailure"].value("message", "").find("BudgetSpent"), std::string::npos)
      << st.dump();
  // The crash was counted as a failure (recovery 2 of 3), not as a disruption.
  EXPECT_NE(job.op().Output().find("replacing pod budget-worker-0 (rank 0 killed by signal 6"),
            std::string::npos)
      << job.op().Output();
}

}  // namespace
}  // namespace ddp::testing_local
