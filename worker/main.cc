// ddp-worker: config -> rendezvous -> communicator -> trainer -> exit code (DESIGN.md).
// `ddp-worker launch ...` starts one trainer per local rank instead (worker/launch/).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/utils.h>

#include "common/fd_limit.h"
#include "common/group_contract.h"
#include "common/logging.h"
#include "common/version.h"
#include "worker/comm/factory.h"
#include "worker/comm/rendezvous.h"
#include "worker/group/membership.h"
#include "worker/group/pod_client.h"
#include "worker/group/settings.h"
#include "worker/launch/rendezvous_pod.h"
#include "worker/launch/launch_plan.h"
#include "worker/launch/launcher.h"
#include "worker/launch/standby.h"
#include "worker/launch/supervise.h"
#include "worker/launch/supervisor.h"
#include "worker/train/batch_config.h"
#include "worker/train/config.h"
#include "worker/train/exit_codes.h"
#include "worker/train/fault.h"
#include "worker/train/filesystem.h"
#include "worker/train/trainer.h"
#include "worker/train/trainer_setup.h"
#include "worker/train/worker_metrics.h"

namespace {

using ddp::Status;
using ddp::StatusOr;
using namespace ddp::worker;

std::atomic<bool> g_stop{false};
extern "C" void OnStopSignal(int) { g_stop.store(true); }

// Flushes and leaves without running destructors: after a failed collective, tearing down
// Gloo/NCCL state can block, and the exit code must reach the operator promptly.
[[noreturn]] void Exit(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

[[noreturn]] void Fail(const Status& s, const char* what) {
  const int code = ExitCodeFor(s);
  std::cerr << "ddp-worker: " << what << ": " << s.ToString() << " (exit " << code << ")" << std::endl;
  Exit(code);
}

void PrintHelp() {
  std::cout << "usage: ddp-worker [--config cfg.yaml] [--flag value ...]\n"
               "       ddp-worker launch [same flags]   (one trainer per local rank)\n"
               "       ddp-worker rendezvous            (an InPlace job's rendezvous pod)\n"
               "options (YAML key, flag, env; flags win over env over YAML):\n";
  for (const auto& k : ConfigKeys()) std::cout << "  " << k << "\n";
  std::cout << "exit codes: 0 done, 2 invalid configuration, 3 invalid data, 75 retryable\n"
               "ddp-worker --version prints the release.\n";
}

// A spare's standby makes its device's context while it waits (its GPU is idle): the rank it
// takes later then starts without CUDA's initialisation. Nothing on a CPU-only build or machine.
void WarmDevice() {
  const char* warm = std::getenv(kEnvStandbyWarmDevice);
  if (warm == nullptr || std::string(warm) != "1" || !torch::cuda::is_available()) return;
  const char* local = std::getenv(kEnvLocalRank);
  const int index = local ? std::atoi(local) : 0;
  if (index < 0 || index >= static_cast<int>(torch::cuda::device_count())) return;
  try {
    (void)at::empty({1}, at::TensorOptions().device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index))));
  } catch (const std::exception& e) {
    DDP_LOG(WARNING) << "standby: could not warm CUDA device " << index << ": " << e.what();
  }
}

int TrainMain(const std::vector<std::string>& args) {
  // A warm standby (the supervisor started it ahead of a failure) waits here, LibTorch loaded.
  if (Status s = AwaitActivation(WarmDevice); !s.ok()) Fail(s, "standby");
  const char* supervised_env = std::getenv(kEnvSupervised);
  const bool supervised = supervised_env != nullptr && std::string(supervised_env) == "1";
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  // A supervised trainer stops when its group decides (a SIGTERM to one pod is a departure, not
  // a stop; local mode signals a pod's whole process group): its supervisor says so through the
  // store, or with SIGUSR1 when the store is gone. Unsupervised: SIGTERM/SIGINT stop it.
  if (supervised) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    sigaction(SIGUSR1, &sa, nullptr);
  } else {
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
  }

  auto cfg = LoadConfig(args, [](const char* n) { return std::getenv(n); },
                        [](const std::string& p) { return PosixFileSystem()->ReadFile(p); });
  if (!cfg.ok()) Fail(cfg.status(), "invalid configuration");
  ddp::LogLevel level;
  if (!ddp::ParseLogLevel(cfg->log_level, &level)) {
    Fail(Status::InvalidArgument("train.log_level: want debug, info, warning or error"), "invalid configuration");
  }
  ddp::SetLogLevel(level);
  const char* fault_env = std::getenv(kEnvFault);
  auto fault = ParseFault(fault_env ? fault_env : "");
  if (!fault.ok()) Fail(fault.status(), "invalid configuration");
  if (*fault && (*fault)->incarnation >= 0) {
    const char* inc = std::getenv(kEnvIncarnation);
    if ((*fault)->incarnation != std::atoi(inc ? inc : "0")) fault->reset();
  }
  auto recovery = RecoverySettingsFromLookup([](const char* n) { return std::getenv(n); });
  if (!recovery.ok()) Fail(recovery.status(), "invalid configuration");
  if (cfg->threads > 0) torch::set_num_threads(static_cast<int>(cfg->threads));

  auto rdzv_cfg = RendezvousConfigFromEnv();
  if (!rdzv_cfg.ok()) Fail(rdzv_cfg.status(), "invalid rendezvous environment");
  // Before any peer is waited for: a rank whose peers found the same error and left would
  // otherwise fail its rendezvous or communicator first (exit 75, not 2).
  if (Status s = CheckBatchAtWorld(*cfg, rdzv_cfg->world_size); !s.ok()) {
    Fail(s, "invalid configuration");
  }
  auto device = ChooseDevice(cfg->device, rdzv_cfg->local_rank);
  if (!device.ok()) Fail(device.status(), "device");

  const char* job = std::getenv("DDP_JOB_NAME");
  WorkerMetrics metrics({job ? job : "", rdzv_cfg->rank, rdzv_cfg->local_rank,
                         rdzv_cfg->world_size, rdzv_cfg->round,
                         /*launched=*/!cfg->metrics_port_file.empty()});
  std::unique_ptr<ddp::HttpServer> server;
  if (cfg->metrics_port >= 0) {
    auto s = ServeMetrics(&metrics, cfg->metrics_addr, static_cast<int>(cfg->metrics_port),
                          cfg->metrics_port_file);
    if (!s.ok()) Fail(s.status(), "metrics endpoint");
    server = std::move(*s);
  }

  const auto collective_timeout = std::chrono::seconds(cfg->collective_timeout_seconds);
  TrainContext ctx;
  ctx.config = &*cfg;
  std::unique_ptr<Communicator> fixed;     // recovery: Restart
  std::unique_ptr<group::GroupMembership> membership;  // InPlace: the rendezvous pod hosts the store
  if (recovery->in_place) {
    if (!rdzv_cfg->agent_store || !supervised) {
      Fail(Status::FailedPrecondition(std::string(kEnvRecovery) + "=InPlace needs the pod's "
                                      "supervisor: run `ddp-worker` (it supervises itself) or "
                                      "`ddp-worker launch`"),
           "invalid configuration");
    }
    const char* trainer_id = std::getenv(kEnvTrainerId);
    const char* pod_id = std::getenv(kEnvPodIdentity);
    const char* node = std::getenv(kEnvNodeRank);
    group::MemberIdentity id{trainer_id ? trainer_id : "", pod_id ? pod_id : "",
                             node ? std::atoi(node) : 0, rdzv_cfg->local_rank,
                             rdzv_cfg->local_world_size};
    // Each connection's calls wait at most 10 s, its connect and first read 2 s (a route to a lost
    // rendezvous pod: its watcher tries again soon and finds the new one); Join bounds the whole
    // wait.
    const auto store_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min<std::chrono::seconds>(rdzv_cfg->timeout, std::chrono::seconds(10)));
    const RendezvousConfig store_cfg = *rdzv_cfg;
    const c10::Device dev = *device;
    membership = std::make_unique<group::GroupMembership>(
        [store_cfg, store_timeout] {
          return group::OpenBoundedStore(store_cfg.master_addr, store_cfg.master_port,
                                         store_cfg.round, store_timeout);
        },
        rdzv_cfg->rank, rdzv_cfg->world_size,
        id, std::chrono::duration_cast<std::chrono::milliseconds>(rdzv_cfg->timeout),
        [dev, collective_timeout](c10::intrusive_ptr<c10d::Store> s, int rank, int size) {
          return MakeCommunicator(std::move(s), rank, size, dev, collective_timeout);
        },
        group::TrainerHeartbeat([](const char* n) { return std::getenv(n); }));
    if (Status s = membership->Connect(); !s.ok()) Fail(s, "rendezvous");
    ctx.group = membership.get();
  } else {
    auto rdzv = JoinRendezvous(*rdzv_cfg);
    if (!rdzv.ok()) Fail(rdzv.status(), "rendezvous");
    auto comm = MakeCommunicator(rdzv->store, rdzv_cfg->rank, rdzv_cfg->world_size, *device,
                                 collective_timeout);
    if (!comm.ok()) Fail(comm.status(), "communicator");
    fixed = std::move(*comm);
    ctx.comm = fixed.get();
  }
  ctx.device = *device;
  ctx.metrics = &metrics;
  ctx.fs = WithCheckpointFault(PosixFileSystem(), *fault, rdzv_cfg->rank);
  ctx.fault = *fault;
  ctx.stop = &g_stop;
  StatusOr<TrainResult> result = Status::Internal("not run");
  try {
    result = Train(ctx);
  } catch (const std::exception& e) {
    std::string what = e.what();
    result = Status::Internal("training: " + what.substr(0, what.find('\n')));
  }
  if (!result.ok()) {
    if (fixed) fixed->Abort();
    Fail(result.status(), ("rank " + std::to_string(rdzv_cfg->rank)).c_str());
  }
  // The size the group ended at: a resize in place changes it under a running trainer.
  const int world = result->world_size > 0 ? result->world_size : rdzv_cfg->world_size;
  std::cout << SummaryLine(*result, result->rank >= 0 ? result->rank : rdzv_cfg->rank, world)
            << std::endl;
  if (result->preempted) {
    if (cfg->checkpoint_dir.empty()) {
      DDP_LOG(WARNING) << "stopped by signal at step " << result->step
                       << " without a checkpoint (no --checkpoint-dir); the next round starts"
                          " from step 0 (exit 75)";
    } else if (result->checkpoint_error.empty()) {
      DDP_LOG(INFO) << "stopped by signal after checkpointing step " << result->step << " (exit 75)";
    } else {
      DDP_LOG(ERROR) << "stopped by signal; checkpoint of step " << result->step
                     << " failed: " << result->checkpoint_error << "; the next round resumes from step "
                     << result->resume_step << " (exit 75)";
    }
    Exit(kExitRetryable);
  }
  if (server) server->Stop();
  // Trained to the last step: the pod says so (under a launcher or a supervisor, they do).
  if (!supervised) {
    (void)WriteTerminationLog(TerminationLogPath(),
                              ddp::group::FormatFinished({result->step, std::nullopt}));
  }
  Exit(kExitOk);
}

}  // namespace

// The binary the supervisor re-executes for its trainers: argv[0] may be a bare name found on
// PATH (a pod's `command: [ddp-worker]`), which execve would not find.
std::string SelfPath(const char* argv0) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return argv0;
  buf[n] = '\0';
  return buf;
}

int main(int argc, char** argv) {
  // A write to a connection the peer reset (a peer killed or aborting its communicator) must be
  // an error of that write (EPIPE), not the death of the process: Gloo's TCP transport writes
  // with writev, which raises SIGPIPE. (Python ignores SIGPIPE at start-up; a C++ program must.)
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::string self = SelfPath(argv[0]);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      PrintHelp();
      return 0;
    }
    if (a == "--version") {
      std::printf("ddp-worker %s\n", ddp::Version());
      return 0;
    }
  }
  // In-place recovery: a pod's ddp-worker supervises itself (DESIGN.md): the process the pod
  // runs becomes the supervisor and the trainers are its children.
  const char* recovery = std::getenv(kEnvRecovery);
  const char* supervised = std::getenv(kEnvSupervised);
  const bool in_place = recovery != nullptr && std::string(recovery) == "InPlace" &&
                        (supervised == nullptr || std::string(supervised) != "1");
  const bool rendezvous = !args.empty() && args[0] == "rendezvous";
  const bool launch = !args.empty() && args[0] == "launch";
  // Every role, before it opens anything: the rendezvous pod holds sockets for every pod and
  // trainer of the group, a supervisor or launcher its trainers' pipes, a trainer Gloo's mesh.
  ddp::RaiseFileLimitAndLog(rendezvous ? "rendezvous"
                            : in_place ? "supervisor"
                            : launch   ? "launch"
                                       : "trainer");
  if (rendezvous) return RendezvousMain();
  if (launch) args.erase(args.begin());
  if (in_place) return SuperviseMain(self.c_str(), args);
  if (launch) return LaunchMain(self.c_str(), args);
  return TrainMain(args);
}
