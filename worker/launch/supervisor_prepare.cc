// A growth's newcomer prepares its trainers outside the group (see supervisor_impl.h; the rule:
// worker/group/authority.h rule 9).
#include "worker/launch/supervisor_impl.h"

#include <cstdlib>
#include <string>

#include "common/logging.h"
#include "worker/group/keys.h"

namespace ddp::worker::supervisor_internal {

StatusOr<LaunchPlan> Supervisor::PlanFor(int node) const {
  const std::string node_text = std::to_string(node);
  return PlanLaunch(
      [&](const char* n) -> const char* {
        if (std::string(n) == kEnvNodeRank) return node_text.c_str();
        return std::string(n) == kEnvRank ? nullptr : std::getenv(n);
      },
      args_, metrics_ != nullptr, port_dir_);
}

// A pod created for a node rank past the group's size (a growth's newcomer): its standbys start
// training for that node rank now, outside the group (its membership waits while the rank is
// past the size), so that the growth waits for a re-formation and a heal only. Only while the
// node rank is free: no live holder of its ranks can exist then.
void Supervisor::Prepare() {
  if (!warm_ || gs_.home_node < 0 || trainers_.empty()) return;
  for (const auto& t : trainers_) {
    if (!t.standby->running()) return;
  }
  bool free = false;
  auto world = client_->WorldIfFree(gs_.home_node, &free);
  auto plan = PlanFor(gs_.home_node);
  if (!world.ok() || !free || !plan.ok() || plan->children.size() != trainers_.size() ||
      gs_.home_node * static_cast<int>(trainers_.size()) < *world) {
    return;
  }
  if (!client_->SetPreparing(true).ok()) return;
  for (size_t i = 0; i < trainers_.size(); ++i) {
    Trainer& t = trainers_[i];
    t.spec = plan->children[i];
    t.id = group::TrainerIdentity(client_->identity(), t.spec.local_rank, t.incarnation);
    (void)client_->SetTrainer(t.spec.rank, t.id);
    t.pid = t.standby->Activate(t.incarnation, TrainerEnv(t, gs_.home_node));
    DDP_LOG(INFO) << "supervisor: rank " << t.spec.rank << " prepares outside the group (node rank "
                  << gs_.home_node << " is past its size " << *world << " rank(s)), pid " << t.pid;
  }
  prepared_ = true;
  standby_due_ = Clock::now() + kStandbyDelay;  // standbys again, for a rank it may get instead
  for (const auto& t : trainers_) {
    if (t.pid < 0) return DropPrepared();  // a standby that died: nothing half-prepared
  }
}

// The prepared trainers go (the pod got another node rank, one of them ended, or the pod ends):
// killed, and incarnations moved on so their identities are never reused.
void Supervisor::DropPrepared() {
  if (!prepared_) return;
  prepared_ = false;
  (void)client_->SetPreparing(false);
  for (auto& t : trainers_) {
    if (t.pid > 0) kill(t.pid, SIGKILL);  // reaped later, unmatched
    t.pid = -1;
    t.incarnation += 1;
  }
}

void Supervisor::OnPreparedExit(Trainer* t, int code) {
  DDP_LOG(WARNING) << "supervisor: rank " << t->spec.rank << " exited " << code
                   << " while it prepared outside the group: the pod joins unprepared";
  t->pid = -1;
  DropPrepared();
}

}  // namespace ddp::worker::supervisor_internal
