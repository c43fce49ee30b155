// `ddp-worker launch` without in-place recovery: fork/exec, signal forwarding, stop-on-failure,
// the pod's merged metrics. (With DDP_RECOVERY=InPlace, supervisor.h runs the pod instead.)
#include "worker/launch/launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "common/group_contract.h"
#include "common/logging.h"
#include "worker/launch/launch_plan.h"
#include "worker/launch/pod_metrics.h"
#include "worker/launch/spawn.h"
#include "worker/train/config.h"
#include "worker/train/exit_codes.h"
#include "worker/train/filesystem.h"

namespace ddp::worker {
namespace {

std::atomic<int> g_signal{0};
extern "C" void OnLauncherSignal(int sig) { g_signal.store(sig); }

struct Child {
  ChildSpec spec;
  pid_t pid = -1;
  bool done = false;
};

}  // namespace

int LaunchMain(const char* self, const std::vector<std::string>& args) {
  // 1. Validate as the children will, so a bad config fails once, here.
  auto cfg = LoadConfig(args, [](const char* n) { return std::getenv(n); },
                        [](const std::string& p) { return PosixFileSystem()->ReadFile(p); });
  if (!cfg.ok()) {
    std::cerr << "ddp-worker launch: invalid configuration: " << cfg.status().ToString() << std::endl;
    return ExitCodeFor(cfg.status());
  }
  const bool serve = cfg->metrics_port >= 0;
  std::string port_dir;
  if (serve) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ddp-launch-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::cerr << "ddp-worker launch: mkdtemp: " << std::strerror(errno) << std::endl;
      return kExitRetryable;
    }
    port_dir = tmpl;
  }
  auto plan = PlanLaunch([](const char* n) { return std::getenv(n); }, args, serve, port_dir);
  if (!plan.ok()) {
    std::cerr << "ddp-worker launch: " << plan.status().ToString() << std::endl;
    return ExitCodeFor(plan.status());
  }
  int grace_s = 30;
  if (const char* g = std::getenv(kEnvLaunchGrace)) grace_s = std::max(0, std::atoi(g));

  struct sigaction sa = {};
  sa.sa_handler = OnLauncherSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  // 2. Children, and 5. the pod's one /metrics.
  std::vector<Child> children;
  std::vector<std::pair<int, int>> ranks;
  for (const auto& spec : plan->children) {
    children.push_back({spec, -1, false});
    ranks.push_back({spec.rank, spec.local_rank});
  }
  PodMetrics metrics(port_dir);
  metrics.SetRanks(ranks);
  if (serve) {
    if (Status s = metrics.Start(cfg->metrics_addr, static_cast<int>(cfg->metrics_port)); !s.ok()) {
      std::cerr << "ddp-worker launch: metrics endpoint: " << s.ToString() << std::endl;
      return kExitRetryable;
    }
  }
  for (auto& c : children) {
    c.pid = SpawnProcess(self, c.spec.args, c.spec.env);
    if (c.pid < 0) {
      std::cerr << "ddp-worker launch: fork: " << std::strerror(errno) << std::endl;
      for (auto& o : children) if (o.pid > 0) kill(o.pid, SIGKILL);
      return kExitRetryable;
    }
    DDP_LOG(INFO) << "launch: local rank " << c.spec.local_rank << " (rank " << c.spec.rank
                  << ") pid " << c.pid;
  }

  // 3-4. Supervise.
  using SteadyClock = std::chrono::steady_clock;
  std::vector<ChildExit> exits;
  bool stopping = false;
  auto kill_deadline = SteadyClock::time_point::max();
  auto stop_all = [&](int sig) {
    for (auto& c : children) if (!c.done) kill(c.pid, sig);
  };
  size_t running = children.size();
  while (running > 0) {
    if (int sig = g_signal.exchange(0)) {
      DDP_LOG(INFO) << "launch: forwarding signal " << sig << " to " << running << " children";
      stop_all(sig);
      if (!stopping) kill_deadline = SteadyClock::now() + std::chrono::seconds(grace_s);
      stopping = true;
    }
    // Every exit since the last look is one batch: a trainer that fails takes its peers down
    // within milliseconds (they exit 75, "peer lost"), so within a batch the failures that are
    // not 75 come first: the root cause, not its consequence, decides the pod's exit code.
    std::vector<ChildExit> batch;
    int status = 0;
    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
      for (auto& c : children) {
        if (c.pid != pid || c.done) continue;
        const int code = ExitCodeOfStatus(status);
        DDP_LOG(INFO) << "launch: local rank " << c.spec.local_rank << " exited " << code;
        c.done = true;
        --running;
        batch.push_back({c.spec.local_rank, code});
      }
    }
    if (!batch.empty()) {
      std::stable_partition(batch.begin(), batch.end(),
                            [](const ChildExit& e) { return e.code != kExitRetryable; });
      exits.insert(exits.end(), batch.begin(), batch.end());
      const bool failed = std::any_of(batch.begin(), batch.end(),
                                      [](const ChildExit& e) { return e.code != kExitOk; });
      if (failed && !stopping) {
        stopping = true;
        stop_all(SIGTERM);
        kill_deadline = SteadyClock::now() + std::chrono::seconds(grace_s);
      }
      continue;
    }
    if (SteadyClock::now() > kill_deadline) {
      DDP_LOG(WARNING) << "launch: children still running after " << grace_s << "s grace: SIGKILL";
      stop_all(SIGKILL);
      kill_deadline = SteadyClock::time_point::max();
    }
    // Supervision poll; a signal interrupts the sleep early.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  metrics.Stop();
  if (!port_dir.empty()) (void)PosixFileSystem()->RemoveAll(port_dir);
  // Every child exiting 0 means training finished, even if a signal raced with the end: the
  // pod says so (the operator takes an exit 0 as a finish only with it).
  const int code = LaunchExitCode(exits);
  if (code == kExitOk) {
    (void)WriteTerminationLog(TerminationLogPath(),
                              ddp::group::FormatFinished({cfg->steps, std::nullopt}));
  }
  return code;
}

}  // namespace ddp::worker
