#include "operator/kube/expectations.h"

namespace ddp::controller {

void Expectations::ExpectCreate(const std::string& job, const std::string& pod_name,
                                Clock::time_point now) {
  std::lock_guard<std::mutex> l(mu_);
  Pending& p = pending_[job];
  p.creates.insert(pod_name);
  p.since = now;
}

void Expectations::ExpectDelete(const std::string& job, const std::string& pod_uid,
                                Clock::time_point now) {
  if (pod_uid.empty()) return;  // no way to recognise it later; the planner tolerates a repeat
  std::lock_guard<std::mutex> l(mu_);
  Pending& p = pending_[job];
  p.deletes.insert(pod_uid);
  p.since = now;
}

void Expectations::CreationObserved(const std::string& job, const std::string& pod_name) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pending_.find(job);
  if (it == pending_.end()) return;
  it->second.creates.erase(pod_name);
  DropIfEmptyLocked(job);
}

void Expectations::DeletionObserved(const std::string& job, const std::string& pod_uid) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pending_.find(job);
  if (it == pending_.end()) return;
  it->second.deletes.erase(pod_uid);
  DropIfEmptyLocked(job);
}

bool Expectations::Satisfied(const std::string& job, Clock::time_point now,
                             Clock::duration* wait) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pending_.find(job);
  if (it == pending_.end()) return true;
  auto expires = it->second.since + timeout_;
  if (now >= expires) return true;
  if (wait) *wait = expires - now;
  return false;
}

void Expectations::Forget(const std::string& job) {
  std::lock_guard<std::mutex> l(mu_);
  pending_.erase(job);
}

size_t Expectations::PendingJobs() const {
  std::lock_guard<std::mutex> l(mu_);
  return pending_.size();
}

void Expectations::DropIfEmptyLocked(const std::string& job) {
  auto it = pending_.find(job);
  if (it != pending_.end() && it->second.creates.empty() && it->second.deletes.empty()) {
    pending_.erase(it);
  }
}

}  // namespace ddp::controller
