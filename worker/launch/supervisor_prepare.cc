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
// node rank is free: no live holder of its ranks can exist then. A replacement whose own node
// rank another pod holds, moved there when the group shrank on the loss (authority.h rule 10),
// prepares the same way for the node rank that pod left: the one the group grows back by.
// The first call says "0" for a pod that registered undecided and does not prepare (keys.h).
void Supervisor::Prepare() {
  const bool prepared = TryPrepare();
  if (!prepared && undecided_) (void)client_->SetPreparing(false);
  undecided_ = false;
}

bool Supervisor::TryPrepare() {
  if (!warm_ || gs_.home_node < 0 || trainers_.empty() || prepared_ || prepare_dropped_) return false;
  for (const auto& t : trainers_) {
    if (!t.standby->running()) return false;
  }
  int node = gs_.home_node;
  bool free = false;
  auto world = client_->WorldIfFree(node, &free);
  if (world.ok() && !free) {
    auto left = client_->HomeOfHolder(node);
    if (!left.ok() || *left == node) return false;
    node = *left;
    world = client_->WorldIfFree(node, &free);
  }
  auto plan = PlanFor(node);
  if (!world.ok() || !free || !plan.ok() || plan->children.size() != trainers_.size() ||
      node * static_cast<int>(trainers_.size()) < *world) {
    return false;
  }
  if (!client_->SetPreparing(true, node).ok()) return false;
  for (size_t i = 0; i < trainers_.size(); ++i) {
    Trainer& t = trainers_[i];
    t.spec = plan->children[i];
    t.id = group::TrainerIdentity(client_->identity(), t.spec.local_rank, t.incarnation);
    (void)client_->SetTrainer(t.spec.rank, t.id);
    t.pid = t.standby->Activate(t.incarnation, TrainerEnv(t, node));
    DDP_LOG(INFO) << "supervisor: rank " << t.spec.rank << " prepares outside the group (node rank "
                  << node << " is past its size " << *world << " rank(s)"
                  << (node != gs_.home_node ? "; its own, " + std::to_string(gs_.home_node) +
                                                  ", is held by the pod that left it"
                                            : std::string())
                  << "), pid " << t.pid;
  }
  prepared_ = true;
  prepared_node_ = node;
  standby_due_ = Clock::now() + kStandbyDelay;  // standbys again, for a rank it may get instead
  for (const auto& t : trainers_) {
    if (t.pid < 0) {
      DropPrepared();  // a standby that died: nothing half-prepared (it said "0")
      return true;
    }
  }
  return true;
}

// The prepared trainers go (the pod got another node rank, one of them ended, or the pod ends):
// killed, and incarnations moved on so their identities are never reused.
void Supervisor::DropPrepared() {
  if (!prepared_) return;
  prepared_ = false;
  prepare_dropped_ = true;
  (void)client_->SetPreparing(false);
  for (auto& t : trainers_) {
    if (t.pid > 0) kill(t.pid, SIGKILL);  // reaped later, unmatched
    t.pid = -1;
    t.incarnation += 1;
  }
}

// Rule 10 (authority.h): the group gave this pod a lost member's node rank in place of its own
// (ranks stay dense). Its trainers keep running and take that node rank's ranks, with their
// state, at their next Join (membership.h); their specs follow here, so that a restart, a done
// mark, a stall and the pod's metrics name the new ranks.
void Supervisor::FollowMove(int node) {
  auto plan = PlanFor(node);
  DDP_LOG(INFO) << "supervisor: the group moved pod " << gs_.pod_name << " from node rank " << node_
                << " to " << node << " (it shrank without a lost member); its trainers follow";
  node_ = node;
  if (!plan.ok() || plan->children.size() != trainers_.size()) {
    DDP_LOG(ERROR) << "supervisor: cannot plan node rank " << node << ": "
                   << (plan.ok() ? "another number of ranks" : plan.status().ToString());
    return;
  }
  std::vector<std::pair<int, int>> ranks;
  for (size_t i = 0; i < trainers_.size(); ++i) {
    Trainer& t = trainers_[i];
    t.spec = plan->children[i];
    ranks.push_back({t.spec.rank, t.spec.local_rank});
    if (!t.done) (void)client_->SetTrainer(t.spec.rank, t.id);
  }
  if (metrics_) metrics_->SetRanks(ranks);
}

void Supervisor::OnPreparedExit(Trainer* t, int code) {
  DDP_LOG(WARNING) << "supervisor: rank " << t->spec.rank << " exited " << code
                   << " while it prepared outside the group: the pod joins unprepared";
  t->pid = -1;
  DropPrepared();
}

}  // namespace ddp::worker::supervisor_internal
