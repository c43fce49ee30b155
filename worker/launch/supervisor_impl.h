// Internal to the in-place pod supervisor (supervisor.h has the protocol): its state and steps,
// shared by supervisor.cc (registration, the trainers' lives, the main loop) and
// supervisor_prepare.cc (a growth's newcomer preparing its trainers outside the group).
#ifndef DDP_WORKER_LAUNCH_SUPERVISOR_IMPL_H_
#define DDP_WORKER_LAUNCH_SUPERVISOR_IMPL_H_

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/group_contract.h"
#include "common/status.h"
#include "worker/group/pod_client.h"
#include "worker/group/settings.h"
#include "worker/launch/launch_plan.h"
#include "worker/launch/pod_metrics.h"
#include "worker/launch/standby.h"

namespace ddp::worker::supervisor_internal {

using Clock = std::chrono::steady_clock;
using group::GroupSettings;
using ddp::group::EndReason;

constexpr auto kStandbyDelay = std::chrono::seconds(2);
constexpr auto kPollInterval = std::chrono::milliseconds(50);
// Longer than the authority's stop window (3 s) and a few of its ticks.
constexpr auto kVerdictWait = std::chrono::seconds(5);
// What stops a supervised trainer with a checkpoint when there is no store to say so (it ignores
// SIGTERM: main.cc; a SIGTERM to one pod is a departure, not a stop).
constexpr int kStopSignal = SIGUSR1;

struct Trainer {
  ChildSpec spec;
  pid_t pid = -1;
  int incarnation = 0;
  std::string id;  // its identity in the group
  bool done = false;
  int code = 0;
  std::unique_ptr<Standby> standby = std::make_unique<Standby>();
  bool standby_off = false;
};

class Supervisor {
 public:
  Supervisor(const char* self, std::vector<std::string> args, GroupSettings gs, bool warm, int grace,
             int64_t steps)
      : self_(self), args_(std::move(args)), gs_(std::move(gs)), warm_(warm), grace_(grace),
        steps_(steps) {}

  int Run(PodMetrics* metrics, const std::string& port_dir);

 private:
  int End(int code, std::optional<EndReason> reason, const std::string& text);
  StatusOr<LaunchPlan> PlanFor(int node) const;
  void StartTrainers(int node);
  void Prepare();
  bool TryPrepare();  // whether it started preparing (or tried, and said it prepares no more)
  void DropPrepared();
  void FollowMove(int node);
  void OnPreparedExit(Trainer* t, int code);
  std::map<std::string, std::string> TrainerEnv(const Trainer& t, int node) const;
  bool Restart(Trainer* t);
  void KillAll(int sig);
  void OnExit(Trainer* t, int code);
  bool AllDone() const;

  const char* self_;
  std::vector<std::string> args_;
  GroupSettings gs_;
  bool warm_;
  int grace_;
  int64_t steps_;  // the training's last step: what every trainer reached when it exits 0
  std::string port_dir_;
  PodMetrics* metrics_ = nullptr;
  std::unique_ptr<group::PodClient> client_;
  std::vector<Trainer> trainers_;
  int node_ = -1;
  // The trainers run for the node rank the pod was created for, ahead of the group's growth to it
  // (authority.h rule 9): they build their data and model and wait outside the group.
  bool prepared_ = false;
  int prepared_node_ = -1;          // the node rank they prepare for
  bool undecided_ = false;          // registered with prepare/<identity> "?": Prepare() says
  bool prepare_dropped_ = false;    // they ended before the growth: the pod prepares no more
  Clock::time_point next_prepare_{};  // an idle pod tries again (rule 10's replacement)
  bool leaving_ = false, stopping_ = false, departing_ = false, abandoned_ = false;
  std::string abandon_why_;
  Clock::time_point leaving_at_{}, kill_at_ = Clock::time_point::max(), standby_due_{};
  std::optional<int> failed_code_;  // the first failure the pod ends with
  std::optional<EndReason> reason_;
  std::string reason_text_;
};

}  // namespace ddp::worker::supervisor_internal

#endif  // DDP_WORKER_LAUNCH_SUPERVISOR_IMPL_H_
