#include "operator/kube/client_cancel.h"

#include <vector>

namespace ddp::controller {

void Cancellation::Cancel() {
  std::vector<std::function<void()>> to_run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    for (auto& [id, cb] : callbacks_) to_run.push_back(std::move(cb));
    callbacks_.clear();
  }
  // Run outside the lock; RemoveCallback of a running callback cannot find it any more, which is
  // why the contract says "not running" only for callbacks removed before Cancel.
  for (auto& cb : to_run) cb();
}

bool Cancellation::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

int Cancellation::AddCallback(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cancelled_) {
      int id = next_id_++;
      callbacks_[id] = std::move(callback);
      return id;
    }
  }
  callback();
  return -1;
}

void Cancellation::RemoveCallback(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_.erase(id);
}

}  // namespace ddp::controller
