// The executor with real processes: what it starts, what it reports, how it deletes.
#include "operator/local/executor.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "e2e_util.h"
#include "operator/local/manifest.h"
#include "operator/local/process.h"
#include "operator/plan/builders.h"
#include "operator/plan/plan.h"

namespace ddp::controller::local {
namespace {

using std::chrono::seconds;
using testing_local::ReadFile;
using testing_local::TempDir;
using testing_local::WaitFor;

api::DDPJob ShellJob(const std::string& script, int replicas = 2) {
  StatusOr<api::DDPJob> job =
      ParseLocalManifest(testing_local::ShellJob("ex", replicas, script), "test");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.value();
}

plan::Plan CreatePods(const api::DDPJob& job, int round, int replicas) {
  plan::Plan p;
  for (int i = 0; i < replicas; ++i) p.creates.push_back(plan::BuildWorkerPod(job, i, round, replicas));
  return p;
}

const plan::ObservedPod* Find(const plan::Observed& seen, const std::string& name) {
  for (const auto& p : seen.pods) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool Reaped(LocalExecutor* ex, const std::string& name) {
  ex->Reap();
  auto it = ex->pods().find(name);
  return it == ex->pods().end() || !it->second.alive;
}

TEST(LocalExecutor, RunsThePodsEnvWithHostPorts) {
  TempDir dir;
  api::DDPJob job = ShellJob("env > " + dir.path() + "/env-$RANK; exit 0");
  LocalExecutor ex({dir.path(), {}, std::nullopt});
  EXPECT_TRUE(ex.Apply(CreatePods(job, 0, 2), plan::TimePoint()).empty());
  ASSERT_TRUE(WaitFor([&] { return Reaped(&ex, "ex-worker-0") && Reaped(&ex, "ex-worker-1"); },
                      seconds(10)));
  plan::Observed seen = ex.Observe();
  ASSERT_EQ(seen.pods.size(), 2u);
  for (const auto& p : seen.pods) {
    EXPECT_EQ(p.phase, "Succeeded");
    EXPECT_EQ(p.exit_code, 0);
  }
  std::string env0 = ReadFile(dir.path() + "/env-0"), env1 = ReadFile(dir.path() + "/env-1");
  const std::string port = "MASTER_PORT=" + std::to_string(ex.MasterPort(0)) + "\n";
  for (const std::string& env : {env0, env1}) {
    EXPECT_NE(env.find("MASTER_ADDR=127.0.0.1\n"), std::string::npos);
    EXPECT_NE(env.find("PET_MASTER_ADDR=127.0.0.1\n"), std::string::npos);
    EXPECT_NE(env.find(port), std::string::npos) << env;
    EXPECT_NE(env.find("DDP_ROUND=0\n"), std::string::npos);
    EXPECT_NE(env.find("PATH="), std::string::npos);  // inherited underneath
  }
  // Two ranks on one host: distinct metrics ports, each the one the executor recorded.
  const std::string m0 =
      "DDP_METRICS_PORT=" + std::to_string(ex.pods().at("ex-worker-0").metrics_port) + "\n";
  const std::string m1 =
      "DDP_METRICS_PORT=" + std::to_string(ex.pods().at("ex-worker-1").metrics_port) + "\n";
  EXPECT_NE(m0, m1);
  EXPECT_NE(env0.find(m0), std::string::npos);
  EXPECT_NE(env1.find(m1), std::string::npos);
}

TEST(LocalExecutor, ExitCodesAndUserKillsAreReportedAsAKubeletWould) {
  TempDir dir;
  api::DDPJob job = ShellJob("if [ $RANK = 0 ]; then exit 75; fi; exec sleep 60");
  LocalExecutor ex({dir.path(), {}, std::nullopt});
  ex.Apply(CreatePods(job, 0, 2), plan::TimePoint());
  ASSERT_TRUE(WaitFor([&] { return Reaped(&ex, "ex-worker-0"); }, seconds(10)));
  const LocalPod& p1 = ex.pods().at("ex-worker-1");
  ASSERT_TRUE(p1.alive);
  kill(p1.pid, SIGKILL);  // the user's kill -9
  ASSERT_TRUE(WaitFor([&] { return Reaped(&ex, "ex-worker-1"); }, seconds(10)));
  plan::Observed seen = ex.Observe();
  const plan::ObservedPod* a = Find(seen, "ex-worker-0");
  const plan::ObservedPod* b = Find(seen, "ex-worker-1");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->phase, "Failed");
  EXPECT_EQ(a->exit_code, 75);
  EXPECT_FALSE(a->disruption_condition);
  EXPECT_EQ(b->exit_code, 128 + SIGKILL);
  EXPECT_TRUE(b->disruption_condition);
  EXPECT_EQ(a->round, 0);
  EXPECT_EQ(b->index, 1);
}

TEST(LocalExecutor, DeleteIsDoneOnlyWhenReapedAndKillsAfterGrace) {
  TempDir dir;
  // Ignores SIGTERM, so only the SIGKILL after the 1 s grace period ends it.
  api::DDPJob job = ShellJob("trap '' TERM; echo $$$$ > " + dir.path() +
                             "/pid; while true; do sleep 0.05; done", 1);
  LocalExecutor ex({dir.path(), {}, 1});
  ex.Apply(CreatePods(job, 0, 1), plan::TimePoint());
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(dir.path() + "/pid").empty(); }, seconds(10)));
  const pid_t pgid = ex.pods().at("ex-worker-0").pid;
  plan::Plan del;
  del.deletes.push_back({"Pod", "ex-worker-0", ""});
  const auto t0 = std::chrono::steady_clock::now();
  ex.Apply(del, plan::TimePoint());
  // Still there, marked deleting: the planner must not recreate the name yet.
  ex.Reap();
  ASSERT_EQ(ex.Observe().pods.size(), 1u);
  EXPECT_TRUE(ex.Observe().pods[0].deleting);
  ASSERT_TRUE(ex.NextKillDeadline());
  ASSERT_TRUE(WaitFor(
      [&] {
        ex.EnforceGracePeriods(std::chrono::steady_clock::now());
        ex.Reap();
        return ex.pods().empty();
      },
      seconds(10)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  EXPECT_TRUE(WaitFor([&] { return !GroupExists(pgid); }, seconds(5)));
}

// Whether `pid` is stopped (state T in /proc/<pid>/stat).
bool Stopped(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
}

// A pod whose whole process group is frozen (SIGSTOP), as a hung node or a debugger leaves it.
// Once it wrote its pid it forks nothing: a child stopped between vfork and exec would leave the
// shell waiting uninterruptibly (state D, never T). It blocks opening a FIFO no one writes.
struct FrozenPod {
  TempDir dir;
  api::DDPJob job = ShellJob("mkfifo " + dir.path() + "/fifo; echo $$$$ > " + dir.path() +
                                 "/pid; while true; do read x < " + dir.path() + "/fifo; done",
                             1);
  pid_t pgid = -1;

  void Start(LocalExecutor* ex) {
    ex->Apply(CreatePods(job, 0, 1), plan::TimePoint());
    ASSERT_TRUE(WaitFor([&] { return !ReadFile(dir.path() + "/pid").empty(); }, seconds(10)));
    pgid = ex->pods().at("ex-worker-0").pid;
    ASSERT_EQ(kill(-pgid, SIGSTOP), 0);
    ASSERT_TRUE(WaitFor([&] { return Stopped(pgid); }, seconds(5)));
  }
  static plan::Plan Delete(std::optional<int64_t> grace) {
    plan::Plan del;
    del.deletes.push_back({"Pod", "ex-worker-0", "", grace});
    return del;
  }
};

// A stopped process holds a SIGTERM until it is continued, so only the SIGKILL at the end of the
// grace period ends it: a frozen pod never holds its name for longer than its grace.
TEST(LocalExecutor, FrozenPodIsKilledWhenItsGraceEnds) {
  FrozenPod frozen;
  LocalExecutor ex({frozen.dir.path(), {}, 1});
  frozen.Start(&ex);
  const auto t0 = std::chrono::steady_clock::now();
  ex.Apply(FrozenPod::Delete(std::nullopt), plan::TimePoint());
  ASSERT_TRUE(WaitFor(
      [&] {
        ex.EnforceGracePeriods(std::chrono::steady_clock::now());
        ex.Reap();
        return ex.pods().empty();
      },
      seconds(10)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  EXPECT_TRUE(WaitFor([&] { return !GroupExists(frozen.pgid); }, seconds(5)));
}

// The planner's force delete (grace 0) kills a frozen pod at once, with no timer left to fire:
// only Reap() runs here, never EnforceGracePeriods().
TEST(LocalExecutor, ForceDeleteKillsAFrozenPodAtOnce) {
  FrozenPod frozen;
  LocalExecutor ex({frozen.dir.path(), {}, 30});
  frozen.Start(&ex);
  ex.Apply(FrozenPod::Delete(0), plan::TimePoint());
  EXPECT_FALSE(ex.NextKillDeadline().has_value());
  ASSERT_TRUE(WaitFor(
      [&] {
        ex.Reap();
        return ex.pods().empty();
      },
      seconds(5)));
}

// A force delete after a graceful one cuts its grace short (30 s here), as in Kubernetes.
TEST(LocalExecutor, ForceDeleteShortensAGracefulDelete) {
  FrozenPod frozen;
  LocalExecutor ex({frozen.dir.path(), {}, 30});
  frozen.Start(&ex);
  ex.Apply(FrozenPod::Delete(std::nullopt), plan::TimePoint());
  ASSERT_TRUE(ex.NextKillDeadline().has_value());
  ex.Reap();
  ASSERT_EQ(ex.pods().size(), 1u);  // frozen: the SIGTERM waits
  ex.Apply(FrozenPod::Delete(0), plan::TimePoint());
  ASSERT_TRUE(WaitFor(
      [&] {
        ex.Reap();
        return ex.pods().empty();
      },
      seconds(5)));
}

TEST(LocalExecutor, UnstartableCommandIsAFailedPod) {
  TempDir dir;
  std::string yaml = testing_local::ShellJob("x", 1, "true");
  yaml.replace(yaml.find("[sh, -c,"), 8, "[no-such-command-xyz,");
  StatusOr<api::DDPJob> job = ParseLocalManifest(yaml, "t");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  LocalExecutor ex({dir.path(), {}, std::nullopt});
  std::vector<std::string> messages = ex.Apply(CreatePods(job.value(), 0, 1), plan::TimePoint());
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("no-such-command-xyz"), std::string::npos);
  plan::Observed seen = ex.Observe();
  ASSERT_EQ(seen.pods.size(), 1u);
  EXPECT_EQ(seen.pods[0].phase, "Failed");
  EXPECT_EQ(seen.pods[0].exit_code, 127);
  EXPECT_EQ(seen.pods[0].reason, "StartError");
}

// Local "pods" are this host's processes: a job that asks for a NetworkPolicy gets one planned,
// and the executor records it without running or enforcing anything, so the planner's next
// pass sees it and plans it no more.
TEST(LocalExecutor, ANetworkPolicyIsRecordedNotRun) {
  TempDir dir;
  api::DDPJob job = ShellJob("exit 0", 1);
  job.spec.run_policy.network_policy = true;
  LocalExecutor ex({dir.path(), {}, std::nullopt});
  plan::Plan first = plan::PlanReconcile(job, ex.Observe(), plan::TimePoint());
  ASSERT_FALSE(first.creates.empty());
  EXPECT_EQ(first.creates.front()["kind"], plan::kNetworkPolicyKind);
  EXPECT_TRUE(ex.Apply(first, plan::TimePoint()).empty());
  EXPECT_TRUE(ex.Observe().network_policy_exists);
  EXPECT_EQ(ex.pods().size(), 1u);  // the worker pod only
  if (first.status) job.status = *first.status;
  plan::Plan again = plan::PlanReconcile(job, ex.Observe(), plan::TimePoint());
  for (const auto& obj : again.creates) EXPECT_NE(obj["kind"], plan::kNetworkPolicyKind);
  plan::Plan off;
  off.deletes.push_back({plan::kNetworkPolicyKind, "ex", ""});
  EXPECT_TRUE(ex.Apply(off, plan::TimePoint()).empty());
  EXPECT_FALSE(ex.Observe().network_policy_exists);
  ex.StopAll(seconds(1));
}

TEST(LocalExecutor, StopAllLeavesNoProcessGroup) {
  TempDir dir;
  api::DDPJob job = ShellJob("sleep 60 & sleep 60; wait");
  std::vector<pid_t> groups;
  {
    LocalExecutor ex({dir.path(), {}, 1});
    ex.Apply(CreatePods(job, 0, 2), plan::TimePoint());
    for (const auto& [name, pod] : ex.pods()) groups.push_back(pod.pid);
    ex.StopAll(seconds(1));
    EXPECT_TRUE(ex.pods().empty());
  }
  ASSERT_EQ(groups.size(), 2u);
  // A killed grandchild is a zombie for a moment, until init reaps it.
  for (pid_t g : groups) EXPECT_TRUE(WaitFor([&] { return !GroupExists(g); }, seconds(5))) << g;
}

}  // namespace
}  // namespace ddp::controller::local
