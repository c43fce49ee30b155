// The in-place pod supervisor (see supervisor.h for the protocol).
#include "worker/launch/supervisor.h"

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
#include <optional>
#include <thread>

#include "common/failure_policy.h"
#include "common/group_contract.h"
#include "common/logging.h"
#include "worker/group/keys.h"
#include "worker/group/pod_client.h"
#include "worker/group/settings.h"
#include "worker/launch/launch_plan.h"
#include "worker/launch/launcher.h"
#include "worker/launch/pod_metrics.h"
#include "worker/launch/spawn.h"
#include "worker/launch/standby.h"
#include "worker/launch/supervise.h"
#include "worker/launch/supervisor_impl.h"
#include "worker/train/config.h"
#include "worker/train/exit_codes.h"
#include "worker/train/filesystem.h"

namespace ddp::worker {
namespace {

std::atomic<int> g_signal{0};
extern "C" void OnSupervisorSignal(int sig) { g_signal.store(sig); }

}  // namespace

namespace supervisor_internal {

int Supervisor::End(int code, std::optional<EndReason> reason, const std::string& text) {
  if (reason) {
    const std::string msg = ddp::group::FormatEnd(*reason, text);
    (void)WriteTerminationLog(gs_.termination_log, msg);
    DDP_LOG(INFO) << "supervisor: " << msg << " (exit " << code << ")";
  }
  if (metrics_) metrics_->Stop();
  if (!port_dir_.empty()) (void)PosixFileSystem()->RemoveAll(port_dir_);
  return code;
}

std::map<std::string, std::string> Supervisor::TrainerEnv(const Trainer& t, int node) const {
  std::map<std::string, std::string> env = t.spec.env;
  env[kEnvUseAgentStore] = "True";
  env[kEnvSupervised] = "1";
  env[kEnvMasterAddr] = gs_.store_addr;
  env[kEnvNodeRank] = std::to_string(node);
  env[kEnvTrainerId] = t.id;
  env[kEnvPodIdentity] = client_->identity();
  env[kEnvIncarnation] = std::to_string(t.incarnation);
  return env;
}

void Supervisor::StartTrainers(int node) {
  if (prepared_ && node == prepared_node_) {  // the growth it prepared for
    prepared_ = false;
    node_ = node;
    std::vector<std::pair<int, int>> ranks;
    for (const auto& t : trainers_) ranks.push_back({t.spec.rank, t.spec.local_rank});
    if (metrics_) metrics_->SetRanks(ranks);
    DDP_LOG(INFO) << "supervisor: node rank " << node << ": its prepared trainers join the group";
    return;
  }
  DropPrepared();
  node_ = node;
  const std::string node_text = std::to_string(node);
  auto plan = PlanFor(node);
  if (!plan.ok()) {  // validated at start-up; only a node rank out of range could fail here
    DDP_LOG(ERROR) << "supervisor: " << plan.status().ToString();
    failed_code_ = kExitRetryable;  // the pod's own failure: the operator charges it
    reason_text_ = "cannot start node rank " + node_text + ": " + plan.status().ToString();
    return;
  }
  std::vector<std::pair<int, int>> ranks;
  const bool had = !trainers_.empty();
  if (!had) trainers_.resize(plan->children.size());
  for (size_t i = 0; i < plan->children.size(); ++i) {
    Trainer& t = trainers_[i];
    t.spec = plan->children[i];
    t.id = group::TrainerIdentity(client_->identity(), t.spec.local_rank, t.incarnation);
    ranks.push_back({t.spec.rank, t.spec.local_rank});
    (void)client_->SetTrainer(t.spec.rank, t.id);
    const pid_t warm = t.standby->Activate(t.incarnation, TrainerEnv(t, node_));
    t.pid = warm > 0 ? warm : SpawnProcess(self_, t.spec.args, TrainerEnv(t, node_));
    if (t.pid < 0) {  // never reaped: done now, and the pod fails (the operator charges it)
      t.done = true;
      t.code = kExitRetryable;
      failed_code_ = kExitRetryable;
      reason_text_ = "cannot start rank " + std::to_string(t.spec.rank);
      DDP_LOG(ERROR) << "supervisor: " << reason_text_ << ": the pod ends";
      KillAll(SIGKILL);
      kill_at_ = Clock::now();
      continue;
    }
    DDP_LOG(INFO) << "supervisor: node rank " << node << ": rank " << t.spec.rank << " (local "
                  << t.spec.local_rank << ") pid " << t.pid << (warm > 0 ? ", a warm standby" : "");
  }
  if (metrics_) metrics_->SetRanks(ranks);
  standby_due_ = Clock::now() + kStandbyDelay;
}

bool Supervisor::Restart(Trainer* t) {
  t->incarnation += 1;
  t->id = group::TrainerIdentity(client_->identity(), t->spec.local_rank, t->incarnation);
  if (!client_->SetTrainer(t->spec.rank, t->id).ok()) return false;
  const pid_t warm = t->standby->Activate(t->incarnation, TrainerEnv(*t, node_));
  t->pid = warm > 0 ? warm : SpawnProcess(self_, t->spec.args, TrainerEnv(*t, node_));
  if (t->pid < 0) return false;
  if (warm > 0) standby_due_ = Clock::now() + kStandbyDelay;
  DDP_LOG(INFO) << "supervisor: restarted rank " << t->spec.rank << " in place (incarnation "
                << t->incarnation << ", pid " << t->pid << (warm > 0 ? ", its warm standby)" : ")");
  return true;
}

void Supervisor::KillAll(int sig) {
  for (auto& t : trainers_) {
    if (!t.done && t.pid > 0) kill(t.pid, sig);
    if (sig == SIGKILL) t.standby->Discard();
  }
}

bool Supervisor::AllDone() const {
  if (trainers_.empty()) return false;
  for (const auto& t : trainers_) {
    if (!t.done) return false;
  }
  return true;
}

void Supervisor::OnExit(Trainer* t, int code) {
  DDP_LOG(INFO) << "supervisor: rank " << t->spec.rank << " exited " << code;
  if (code == kExitOk) {
    (void)client_->MarkDone(t->spec.rank);
    t->done = true;
    return;
  }
  // The group may have ended while this trainer left (its exit raced with our poll): read again,
  // so that no trainer is restarted into a group that stops or cannot form.
  if (!stopping_ && !abandoned_ && !failed_code_) {
    group::PodPoll p = client_->PollNow(node_, {});
    if (!p.store_ok || client_->lost()) {
      // The store went away with the trainer's exit (a replaced rendezvous pod, or this pod's
      // node back from a freeze): register again first, so that a pod the group declared lost
      // or replaced meanwhile learns it here instead of charging its trainers' exits.
      const Status again = client_->Reconnect(node_, Clock::now() + std::chrono::seconds(2));
      if (again.code() == StatusCode::kFailedPrecondition) {
        failed_code_ = kExitRetryable;
        reason_ = EndReason::kFenced;
        reason_text_ = again.message();
        KillAll(SIGKILL);
        kill_at_ = Clock::now();
        t->done = true;
        t->code = code;
        return;
      }
      if (again.ok()) p = client_->PollNow(node_, {});
    }
    if (p.stop || p.verdict == group::kVerdictStop) stopping_ = true;
    if (!p.abandon.empty()) {
      abandoned_ = true;
      abandon_why_ = p.abandon;
    }
    // Its pod departed or lost its place as it exited: the group's doing, nothing to charge.
    const bool departed = p.verdict == group::kVerdictDepart;
    if (p.verdict == group::kVerdictResized) {  // the group shrank without it: not a failure
      failed_code_ = kExitOk;
      reason_ = EndReason::kResized;
      reason_text_ = "the group shrank in place without pod " + gs_.pod_name + " (node rank " +
                     std::to_string(node_) + ")";
      KillAll(SIGKILL);
      kill_at_ = Clock::now();
    } else if (departed || p.verdict == group::kVerdictFenced || p.fenced ||
        (node_ >= 0 && !p.holder.empty() && p.holder != client_->identity() && !p.stop)) {
      failed_code_ = kExitRetryable;
      reason_ = departed ? EndReason::kDeparted : EndReason::kFenced;
      reason_text_ = departed ? "SIGTERM reached pod " + gs_.pod_name + " and not the whole job: it left the group"
                              : "the group declared pod " + gs_.pod_name + " lost and gave its place to another";
      KillAll(SIGKILL);
      kill_at_ = Clock::now();
    }
  }
  if (stopping_ || departing_ || abandoned_ || failed_code_) {
    t->done = true;
    t->code = code;
    if (stopping_ || abandoned_) kill_at_ = std::min(kill_at_, Clock::now() + std::chrono::seconds(grace_));
    return;
  }
  const std::string what = "rank " + std::to_string(t->spec.rank) + " exited " + std::to_string(code);
  if (failure::Decide(gs_.rules, code) != failure::Verdict::kRetry) {
    failed_code_ = code;
    reason_ = EndReason::kNotRetryable;
    reason_text_ = what + ": not retried under restartPolicy " + failure::PolicyName(gs_.rules.policy);
  } else if (auto c = client_->ChargeOnce(""); !c.ok()) {
    // No store to charge it in: the pod ends with the trainer's code, a failure the operator
    // charges when it replaces the pod (no group reason: it was not counted anywhere).
    failed_code_ = code;
    reason_ = std::nullopt;
    reason_text_ = what + "; cannot heal it: " + c.status().ToString();
  } else if (c->outcome == group::Charge::kRefused) {
    failed_code_ = code;
    reason_ = EndReason::kBudgetSpent;
    reason_text_ = what + "; the budget is spent: no heal left of maxRestarts (" +
                   std::to_string(c->recoveries) + " healed in place this round)";
  } else if (Restart(t)) {
    return;
  } else {
    failed_code_ = code;
    reason_ = EndReason::kGroupAbandoned;  // charged in the store already: not again
    reason_text_ = what + "; the restart failed";
  }
  t->done = true;
  t->code = code;
  DDP_LOG(WARNING) << "supervisor: " << reason_text_ << ": the pod ends";
  KillAll(SIGKILL);
  kill_at_ = Clock::now();
}

int Supervisor::Run(PodMetrics* metrics, const std::string& port_dir) {
  metrics_ = metrics;
  port_dir_ = port_dir;
  const std::string metrics_addr =
      metrics ? gs_.pod_ip + ":" + std::to_string(metrics->port()) : std::string();
  const auto deadline = Clock::now() + gs_.rendezvous.timeout;
  // Warm standbys and a node rank of its own: it may prepare outside the group, and registers
  // undecided until its first Prepare() says (keys.h prepare/).
  gs_.decides_prepare = warm_ && gs_.home_node >= 0;
  auto client = group::PodClient::Connect(gs_, metrics_addr, deadline);
  if (!client.ok() && client.status().code() == StatusCode::kFailedPrecondition) {
    // Declared lost before it could register (a process that came back): a disruption.
    return End(kExitRetryable, EndReason::kFenced, client.status().message());
  }
  if (!client.ok()) return End(kExitRetryable, EndReason::kGroupAbandoned, client.status().ToString());
  client_ = std::move(*client);
  undecided_ = client_->undecided();
  DDP_LOG(INFO) << "supervisor: pod " << client_->identity() << " registered with the group"
                << (gs_.home_node >= 0 ? " (created for node rank " + std::to_string(gs_.home_node) +
                                             "; the group assigns it, or keeps the pod as a spare)"
                                       : " as a spare");
  // Until the group gives the pod a node rank, its trainers wait as warm standbys (LibTorch
  // loaded, the device's context made: the pod's accelerators are idle until then). A spare's,
  // and a replacement's whose rank a spare took, then start warm when they get a rank.
  if (warm_) {
    auto plan = PlanLaunch([](const char* n) { return std::getenv(n); }, args_, metrics != nullptr, port_dir);
    if (plan.ok()) {
      trainers_.resize(plan->children.size());
      for (size_t i = 0; i < plan->children.size(); ++i) {
        Trainer placeholder;  // its rank is not known yet: activation gives it
        placeholder.spec = plan->children[i];
        auto env = TrainerEnv(placeholder, node_);
        env[kEnvStandbyWarmDevice] = "1";
        if (Status s = trainers_[i].standby->Start(self_, plan->children[i].args, env); !s.ok()) {
          DDP_LOG(WARNING) << "supervisor: no warm standby: " << s.ToString();
        }
      }
    }
    Prepare();
  }
  auto next_poll = Clock::now();
  while (true) {
    const auto now = Clock::now();
    if (int sig = g_signal.exchange(0); sig != 0 && !leaving_) {
      leaving_ = true;
      leaving_at_ = now;
      DDP_LOG(INFO) << "supervisor: signal " << sig << ": leaving the group";
      if (!client_->SetLeaving().ok()) {
        // No store: the rendezvous pod was lost too (a whole-job stop keeps it up through its
        // stop window). Stopping now would stop every member's trainers with this pod's
        // (the stop is agreed in the collectives) and charge the survivors; say it to the new
        // store once registered there (below). No verdict by the deadline: the trainers stop.
        const auto wait = std::chrono::duration_cast<std::chrono::seconds>(gs_.liveness + kVerdictWait);
        DDP_LOG(WARNING) << "supervisor: no store to say it is leaving: it says so to the new one "
                         << "if one answers within " << wait.count()
                         << " s, else the trainers stop with a checkpoint";
      }
    }
    if (now >= next_poll) {
      next_poll = now + kPollInterval;
      std::vector<int> ranks;
      for (const auto& t : trainers_) if (node_ >= 0) ranks.push_back(t.spec.rank);
      group::PodPoll p = client_->Poll(node_, ranks);
      if (!p.store_ok || client_->lost()) {
        // The rendezvous pod was replaced: register again, keeping the node rank. Training goes on.
        // A pod the group declared lost meanwhile, or replaced under its name (a frozen node
        // that thawed, a partition that healed), ends: the group's doing, never charged.
        const Status again = client_->Reconnect(node_, Clock::now() + std::chrono::milliseconds(500));
        if (again.code() == StatusCode::kFailedPrecondition) {
          KillAll(SIGKILL);
          return End(kExitRetryable, EndReason::kFenced, again.message());
        }
        if (again.ok()) {
          DDP_LOG(INFO) << "supervisor: registered again with a new store";
          for (auto& t : trainers_) if (node_ >= 0 && !t.done) (void)client_->SetTrainer(t.spec.rank, t.id);
          if (leaving_ && !stopping_ && client_->SetLeaving().ok()) {
            DDP_LOG(INFO) << "supervisor: told the new store it is leaving";
          }
        }
      } else if (node_ >= 0 && p.node >= 0 && p.node != node_ && p.verdict.empty() && !p.fenced) {
        FollowMove(p.node);  // given a lost member's node rank in place of its own (rule 10)
      } else if (p.verdict == group::kVerdictResized) {
        KillAll(SIGKILL);  // they hold nothing the group needs: it re-formed without them
        return End(kExitOk, EndReason::kResized,
                   "the group shrank in place without pod " + gs_.pod_name + " (node rank " +
                       std::to_string(node_) + ")");
      } else if (p.verdict == group::kVerdictDepart) {
        KillAll(SIGKILL);
        return End(kExitRetryable, EndReason::kDeparted,
                   "SIGTERM reached pod " + gs_.pod_name + " and not the whole job: it left the group");
      } else if (p.verdict == group::kVerdictFenced || p.fenced ||
                 (node_ >= 0 && !p.holder.empty() && p.holder != client_->identity() && !p.stop)) {
        // Fenced, or our node rank given to another. (Not holding it yet after registering with a
        // new store is no fencing: the authority gives it back to the pod that held it.)
        KillAll(SIGKILL);
        return End(kExitRetryable, EndReason::kFenced,
                   "the group declared pod " + gs_.pod_name + " lost and gave its place to another");
      } else {
        if ((p.stop || p.verdict == group::kVerdictStop) && !stopping_) {
          stopping_ = true;
          kill_at_ = now + std::chrono::seconds(grace_);
          DDP_LOG(INFO) << "supervisor: the job stops: the trainers checkpoint and exit";
        }
        if (!p.abandon.empty() && !abandoned_) {
          abandoned_ = true;
          abandon_why_ = p.abandon;
          kill_at_ = now + std::chrono::seconds(grace_);
        }
        if (node_ < 0 && p.node >= 0 && !stopping_ && !abandoned_) StartTrainers(p.node);
        if (node_ < 0 && !prepared_ && now >= next_prepare_) {
          next_prepare_ = now + std::chrono::seconds(1);
          Prepare();  // what it may prepare for can change while it waits (rule 10)
        }
        // A pod holding no rank (a spare, or a replacement not placed yet) has nothing to hand
        // over. Only a finished job lets it exit 0, and as Released, never as a finish: a
        // replacement that came to a stopped group ends as Stopped, so that the operator
        // resumes the job from the stop's checkpoint (a whole-job stop nobody asked for is not
        // the end of training).
        if (node_ < 0 && p.finished) {
          DropPrepared();
          trainers_.clear();
          return End(kExitOk, EndReason::kReleased,
                     "the job finished; pod " + gs_.pod_name + " held no rank");
        }
        if (node_ < 0 && (stopping_ || abandoned_)) {
          DropPrepared();
          trainers_.clear();
          return End(kExitRetryable, stopping_ ? EndReason::kStopped : EndReason::kGroupAbandoned,
                     "the group " + std::string(stopping_ ? "had stopped" : "was abandoned") +
                         " before pod " + gs_.pod_name + " held a rank");
        }
        for (auto& t : trainers_) {
          auto it = p.stalls.find(t.spec.rank);
          if (node_ >= 0 && !t.done && it != p.stalls.end() && it->second == t.id && t.pid > 0) {
            DDP_LOG(WARNING) << "supervisor: rank " << t.spec.rank << " declared stalled: killing it";
            kill(t.pid, SIGKILL);
          }
        }
      }
    }
    if (leaving_ && !stopping_ && now - leaving_at_ > gs_.liveness + kVerdictWait) {
      if (node_ < 0) {
        // No verdict and no rank: nothing to save, no trainer in a group to stop with. (Waiting
        // for a store to say "stopped" would hold it until the kubelet's SIGKILL.)
        DropPrepared();
        trainers_.clear();
        return End(kExitRetryable, EndReason::kDeparted,
                   "SIGTERM reached pod " + gs_.pod_name +
                       ", which held no rank, and no verdict came: it left");
      }
      stopping_ = true;  // no verdict came: stop the old way, all together
      KillAll(kStopSignal);
      kill_at_ = now + std::chrono::seconds(grace_);
    }
    // Reap.
    int status = 0;
    pid_t pid = 0;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (auto& t : trainers_) {
        if (t.standby->Reaped(pid)) t.standby_off = true;
        if (t.pid == pid && !t.done && node_ < 0) OnPreparedExit(&t, ExitCodeOfStatus(status));
        if (t.pid == pid && !t.done) OnExit(&t, ExitCodeOfStatus(status));
      }
    }
    if (trainers_.empty() && failed_code_) return End(*failed_code_, reason_, reason_text_);
    if (AllDone()) {
      int code = kExitOk;
      for (const auto& t : trainers_) if (code == kExitOk && t.code != kExitOk) code = t.code;
      if (failed_code_) return End(*failed_code_, reason_, reason_text_);
      if (abandoned_) {
        return End(kExitRetryable, EndReason::kGroupAbandoned,
                   abandon_why_ == "never-formed"
                       ? "the group never formed within the rendezvous timeout"
                       : "the group could not re-form in place after a loss: a new round");
      }
      // A trainer exits 0 only once it trained to the last step (a stop is 75), so a stop that
      // raced with the end is still a finish.
      if (code != kExitOk) {
        return End(kExitRetryable, stopping_ ? EndReason::kStopped : EndReason::kNotRetryable,
                   stopping_ ? "the job stopped together with a checkpoint"
                             : "a trainer exited " + std::to_string(code));
      }
      // This pod's ranks trained to the end, past every charge made before the last step: the
      // store's count goes to the operator with this pod's end (a failure in a run's last
      // seconds may never reach a scrape of the rendezvous pod; the operator takes the highest).
      ddp::group::FinishedReport report{steps_, std::nullopt};
      if (auto b = client_->Budget(); b.ok()) report.recoveries = b->recoveries;
      const std::string msg = ddp::group::FormatFinished(report);
      (void)WriteTerminationLog(gs_.termination_log, msg);
      DDP_LOG(INFO) << "supervisor: " << msg;
      return End(kExitOk, std::nullopt, "");
    }
    if (now >= kill_at_) {
      KillAll(SIGKILL);
      kill_at_ = Clock::time_point::max();
    }
    if ((node_ >= 0 || prepared_) && warm_ && now >= standby_due_ && !stopping_ && !leaving_) {
      for (auto& t : trainers_) {
        if (t.done || t.standby->running() || t.standby_off) continue;
        if (Status s = t.standby->Start(self_, t.spec.args, TrainerEnv(t, node_)); !s.ok()) t.standby_off = true;
      }
      standby_due_ = Clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace supervisor_internal

using supervisor_internal::Supervisor;

int SuperviseMain(const char* self, const std::vector<std::string>& args) {
  auto cfg = LoadConfig(args, [](const char* n) { return std::getenv(n); },
                        [](const std::string& p) { return PosixFileSystem()->ReadFile(p); });
  if (!cfg.ok()) {
    std::cerr << "ddp-worker: invalid configuration: " << cfg.status().ToString() << std::endl;
    return ExitCodeFor(cfg.status());
  }
  auto gs = group::ReadGroupSettings([](const char* n) { return std::getenv(n); });
  if (!gs.ok()) {
    std::cerr << "ddp-worker: " << gs.status().ToString() << std::endl;
    return kExitInvalidConfig;
  }
  auto recovery = RecoverySettingsFromLookup([](const char* n) { return std::getenv(n); });
  if (!recovery.ok()) {
    std::cerr << "ddp-worker: " << recovery.status().ToString() << std::endl;
    return kExitInvalidConfig;
  }
  int grace = 30;
  if (const char* g = std::getenv(kEnvLaunchGrace)) grace = std::max(0, std::atoi(g));
  struct sigaction sa = {};
  sa.sa_handler = OnSupervisorSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::string port_dir;
  std::unique_ptr<PodMetrics> metrics;
  if (cfg->metrics_port >= 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ddp-launch-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::cerr << "ddp-worker: mkdtemp: " << std::strerror(errno) << std::endl;
      return kExitRetryable;
    }
    port_dir = tmpl;
    metrics = std::make_unique<PodMetrics>(port_dir);
    if (Status s = metrics->Start(cfg->metrics_addr, static_cast<int>(cfg->metrics_port)); !s.ok()) {
      std::cerr << "ddp-worker: metrics endpoint: " << s.ToString() << std::endl;
      return kExitRetryable;
    }
  }
  Supervisor sup(self, args, *gs, recovery->warm_standby, grace, cfg->steps);
  return sup.Run(metrics.get(), port_dir);
}

}  // namespace ddp::worker
