// The controller's view of nodes: which pods sit on a lost node (ObservedPod::node_lost), and
// re-queueing the jobs concerned when a node is lost or comes back. The decision to force-delete
// is the planner's (operator/plan/lost_nodes.h).
#include <chrono>
#include <mutex>
#include <set>

#include "common/logging.h"
#include "operator/controller/controller.h"

namespace ddp::controller {

void Controller::OnNodeChange(const std::string& node, const plan::NodeHealth* old,
                              const plan::NodeHealth* now) {
  const bool was_lost = old != nullptr && old->lost;
  // A deleted Node is gone for good: its pods are on no node at all.
  const bool is_lost = now == nullptr || now->lost;
  if (!is_lost || now == nullptr || !was_lost) {
    // Back, gone, or newly lost: a new loss is timed from its first sight (ObserveNodes).
    std::lock_guard<std::mutex> l(node_lost_mu_);
    node_lost_seen_.erase(node);
  }
  if (old == nullptr && now != nullptr && !now->lost) return;  // a healthy node appears
  if (old != nullptr && now != nullptr && was_lost == is_lost) return;  // a heartbeat, a label
  std::set<std::string> jobs;
  pods_.ForEachWithIndex([&](const std::string& job, const plan::ObservedPod& pod) {
    if (pod.node_name == node) jobs.insert(job);
  });
  for (const std::string& job : jobs) queue_.Add(job);
  if (jobs.empty()) return;
  const std::string what =
      now == nullptr ? "deleted" : is_lost ? "lost: " + now->why : "ready again";
  if (is_lost) {
    DDP_LOG(WARNING) << "node " << node << " " << what << "; " << jobs.size()
                     << " job(s) have pods on it";
  } else {
    DDP_LOG(INFO) << "node " << node << " " << what << "; " << jobs.size()
                  << " job(s) have pods on it";
  }
}

void Controller::ObserveSuspectNodes(const api::DDPJob& job, plan::Observed* seen) const {
  if (!node_informer_->HasSynced()) return;
  for (const api::SuspectNode& s : job.status.suspect_nodes) {
    if (std::optional<plan::NodeHealth> health = nodes_.Get(s.name)) seen->nodes[s.name] = *health;
  }
}

void Controller::ObserveNodes(plan::Observed* seen) const {
  if (!node_informer_->HasSynced()) return;
  for (plan::ObservedPod& pod : seen->pods) {
    if (pod.node_name.empty()) continue;
    const std::optional<plan::NodeHealth> health = nodes_.Get(pod.node_name);
    pod.node_lost = !health || health->lost;
    if (!health || !health->lost) continue;
    std::lock_guard<std::mutex> l(node_lost_mu_);
    pod.node_lost_since =
        node_lost_seen_.emplace(pod.node_name, std::chrono::system_clock::now()).first->second;
  }
}

}  // namespace ddp::controller
