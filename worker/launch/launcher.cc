// The launcher's process handling: fork/exec, signal forwarding, stop-on-failure, metrics merge.
#include "worker/launch/launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "common/exposition.h"
#include "common/http_server.h"
#include "common/logging.h"
#include "worker/launch/launch_plan.h"
#include "worker/launch/spawn.h"
#include "worker/launch/standby.h"
#include "worker/launch/supervise.h"
#include "worker/launch/supervisor_store.h"
#include "worker/comm/rendezvous.h"
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
  int incarnation = 0;  // starts of this local rank so far, minus one
};

pid_t Spawn(const char* self, const ChildSpec& c) {
  return SpawnProcess(self, c.args, c.env);
}

std::string MergedMetrics(const std::vector<Child>& children, const std::string& port_dir) {
  std::vector<std::pair<metrics::LabelPairs, std::string>> sources;
  for (const auto& c : children) {
    auto port = PosixFileSystem()->ReadFile(port_dir + "/rank-" + std::to_string(c.spec.local_rank) + ".port");
    if (!port.ok()) continue;  // not serving yet
    auto body = HttpGet("127.0.0.1", std::atoi(port->c_str()), "/metrics", 1000);
    if (!body.ok()) continue;  // exited or busy: its series are absent from this scrape
    sources.push_back({{{"rank", std::to_string(c.spec.rank)},
                        {"local_rank", std::to_string(c.spec.local_rank)}},
                       *body});
  }
  return metrics::MergeExpositions(sources);
}

// Heals a failed trainer by starting its rank again, when the group's budget allows. False: the
// pod must fail (budget spent, a permanent exit code, the store lost, or fork failed).
// A warm standby of the rank, when one runs, becomes the new trainer.
bool RestartInPlace(const char* self, Child* c, int code, const RecoverySettings& settings,
                    SupervisorStore* store, Standby* standby) {
  int64_t count = settings.max_recoveries + 1;
  if (DecideTrainerExit(code, settings, 0) == OnTrainerExit::kRestart) {
    auto n = store->CountRecovery(std::chrono::seconds(5));
    if (!n.ok()) {
      DDP_LOG(WARNING) << "launch: cannot heal rank " << c->spec.rank << ": "
                       << n.status().ToString();
      return false;
    }
    count = *n;
  }
  if (DecideTrainerExit(code, settings, count) != OnTrainerExit::kRestart) {
    if (code != kExitInvalidConfig && code != kExitInvalidData) {
      DDP_LOG(WARNING) << "launch: recovery budget spent (" << count - 1 << " of "
                       << settings.max_recoveries << "): not restarting rank " << c->spec.rank;
    }
    return false;
  }
  c->incarnation += 1;
  c->spec.env[kEnvIncarnation] = std::to_string(c->incarnation);
  const pid_t warm = standby != nullptr ? standby->Activate(c->incarnation) : -1;
  c->pid = warm > 0 ? warm : Spawn(self, c->spec);
  if (c->pid < 0) return false;
  DDP_LOG(INFO) << "launch: restarted rank " << c->spec.rank << " in place (recovery " << count
                << " of " << settings.max_recoveries << ", pid " << c->pid
                << (warm > 0 ? ", its warm standby)" : ")");
  return true;
}

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
  auto recovery = RecoverySettingsFromLookup([](const char* n) { return std::getenv(n); });
  if (!recovery.ok()) {
    std::cerr << "ddp-worker launch: " << recovery.status().ToString() << std::endl;
    return kExitInvalidConfig;
  }
  // In place: this pod's supervisor outlives its trainers; pod 0's hosts the store for all.
  std::unique_ptr<SupervisorStore> store;
  if (recovery->in_place) {
    auto rdzv = RendezvousConfigFromEnv();
    if (!rdzv.ok()) {
      std::cerr << "ddp-worker launch: " << rdzv.status().ToString() << std::endl;
      return kExitInvalidConfig;
    }
    auto opened = SupervisorStore::Open(*rdzv, plan->node_rank == 0);
    if (!opened.ok()) {
      std::cerr << "ddp-worker launch: " << opened.status().ToString() << std::endl;
      return kExitRetryable;
    }
    store = std::move(*opened);
    for (auto& c : plan->children) {
      c.env[kEnvUseAgentStore] = "True";
      c.env[kEnvSupervised] = "1";
    }
    DDP_LOG(INFO) << "launch: in-place recovery (up to " << recovery->max_recoveries
                  << " recoveries this round)" << (plan->node_rank == 0 ? ", hosting the store" : "");
  }

  struct sigaction sa = {};
  sa.sa_handler = OnLauncherSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  // 2. Children.
  std::vector<Child> children;
  for (const auto& spec : plan->children) children.push_back({spec, -1, false});
  std::unique_ptr<HttpServer> server;
  if (serve) {
    server = std::make_unique<HttpServer>();
    const int64_t max_recoveries = recovery->max_recoveries;
    server->Handle("/metrics", [&children, port_dir, &store, max_recoveries] {
      std::string page = MergedMetrics(children, port_dir);
      // Pod 0's supervisor hosts the store: the group's in-place recoveries this round (an
      // attempt past the budget heals nothing and is not counted).
      if (auto n = store ? store->Recoveries() : std::nullopt) {
        page += "# HELP ddp_worker_inplace_recoveries Trainer processes restarted and healed in "
                "place this round (the group's count, from pod 0's supervisor).\n"
                "# TYPE ddp_worker_inplace_recoveries gauge\n"
                "ddp_worker_inplace_recoveries " +
                std::to_string(std::min(*n, max_recoveries)) + "\n";
      }
      return HttpResponse{200, kPrometheusContentType, page};
    });
    server->Handle("/healthz", [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; });
    Status s = server->Start(cfg->metrics_addr + ":" + std::to_string(cfg->metrics_port));
    if (!s.ok()) {
      std::cerr << "ddp-worker launch: metrics endpoint: " << s.ToString() << std::endl;
      return kExitRetryable;
    }
  }
  for (auto& c : children) {
    c.spec.env[kEnvIncarnation] = "0";
    c.pid = Spawn(self, c.spec);
    if (c.pid < 0) {
      std::cerr << "ddp-worker launch: fork: " << std::strerror(errno) << std::endl;
      for (auto& o : children) if (o.pid > 0) kill(o.pid, SIGKILL);
      return kExitRetryable;
    }
    DDP_LOG(INFO) << "launch: local rank " << c.spec.local_rank << " (rank " << c.spec.rank
                  << ") pid " << c.pid;
  }

  // 3-4. Supervise. In place, each local rank keeps a warm standby (standby.h), started
  // kStandbyDelay after the launch or after the last one was used, off the recovery's path.
  using SteadyClock = std::chrono::steady_clock;
  constexpr auto kStandbyDelay = std::chrono::seconds(2);
  std::vector<Standby> standbys(recovery->in_place && recovery->warm_standby ? children.size() : 0);
  std::vector<bool> standby_off(standbys.size(), false);  // one failed or exited on its own
  auto standby_due = SteadyClock::now() + kStandbyDelay;
  std::vector<ChildExit> exits;
  bool stopping = false;
  auto kill_deadline = SteadyClock::time_point::max();
  auto stop_all = [&](int sig) {
    for (auto& c : children) if (!c.done) kill(c.pid, sig);
    for (auto& s : standbys) s.Discard();
  };
  size_t running = children.size();
  while (running > 0) {
    if (int sig = g_signal.exchange(0)) {
      DDP_LOG(INFO) << "launch: forwarding signal " << sig << " to " << running << " children";
      stop_all(sig);
      if (!stopping) kill_deadline = SteadyClock::now() + std::chrono::seconds(grace_s);
      stopping = true;
    }
    if (!stopping && SteadyClock::now() >= standby_due) {
      for (size_t i = 0; i < standbys.size(); ++i) {
        if (standbys[i].running() || standby_off[i] || children[i].done) continue;
        Status s = standbys[i].Start(self, children[i].spec.args, children[i].spec.env);
        if (!s.ok()) {
          standby_off[i] = true;
          DDP_LOG(WARNING) << "launch: no warm standby for rank " << children[i].spec.rank << ": "
                           << s.ToString();
        }
      }
      standby_due = SteadyClock::time_point::max();
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t i = 0; i < standbys.size(); ++i) {
        if (!standbys[i].Reaped(pid)) continue;
        standby_off[i] = true;  // it never trained: a fault of the standby itself, not retried
        DDP_LOG(WARNING) << "launch: the warm standby of rank " << children[i].spec.rank
                         << " exited " << ExitCodeOfStatus(status) << "; no more standbys for it";
      }
      for (size_t i = 0; i < children.size(); ++i) {
        Child& c = children[i];
        if (c.pid != pid || c.done) continue;
        const int code = ExitCodeOfStatus(status);
        DDP_LOG(INFO) << "launch: local rank " << c.spec.local_rank << " exited " << code;
        Standby* standby = i < standbys.size() ? &standbys[i] : nullptr;
        const bool had_standby = standby != nullptr && standby->running();
        if (store && !stopping && code != kExitOk &&
            RestartInPlace(self, &c, code, *recovery, store.get(), standby)) {
          if (had_standby) standby_due = SteadyClock::now() + kStandbyDelay;
          continue;
        }
        c.done = true;
        --running;
        if (standby != nullptr) standby->Discard();
        exits.push_back({c.spec.local_rank, code});
        if (exits.back().code != kExitOk && !stopping) {
          stopping = true;
          stop_all(SIGTERM);
          kill_deadline = SteadyClock::now() + std::chrono::seconds(grace_s);
        }
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
  if (server) server->Stop();
  if (!port_dir.empty()) (void)PosixFileSystem()->RemoveAll(port_dir);
  // Every child exiting 0 means training finished, even if a signal raced with the end.
  return LaunchExitCode(exits);
}

}  // namespace ddp::worker
