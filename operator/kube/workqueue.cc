#include "operator/kube/workqueue.h"

#include <algorithm>

namespace ddp::controller {

QueueDuration KeyBackoff::NextDelay(const std::string& key) {
  int n = ++failures_[key];
  QueueDuration d = base_;
  // Doubling stops at the cap, so a key failing for days never overflows.
  for (int i = 1; i < n && d < cap_; ++i) d *= 2;
  return std::min(d, cap_);
}

int KeyBackoff::Failures(const std::string& key) const {
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void QueueCore::Add(const std::string& key) {
  // A ready key supersedes a delayed one: the pass will happen now anyway.
  auto w = waiting_by_key_.find(key);
  if (w != waiting_by_key_.end()) {
    waiting_.erase({w->second, key});
    waiting_by_key_.erase(w);
  }
  if (!dirty_.insert(key).second) return;
  if (processing_.count(key)) return;  // Done() re-queues it
  queue_.push_back(key);
}

void QueueCore::AddAt(const std::string& key, QueueTime when) {
  if (dirty_.count(key)) return;  // already due (queued, or re-queued at Done): sooner
  auto w = waiting_by_key_.find(key);
  if (w != waiting_by_key_.end()) {
    if (w->second <= when) return;
    waiting_.erase({w->second, key});
  }
  waiting_by_key_[key] = when;
  waiting_.insert({when, key});
}

void QueueCore::Promote(QueueTime now) {
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    std::string key = waiting_.begin()->second;
    waiting_.erase(waiting_.begin());
    waiting_by_key_.erase(key);
    Add(key);
  }
}

std::optional<std::string> QueueCore::Pop() {
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

void QueueCore::Done(const std::string& key) {
  processing_.erase(key);
  if (dirty_.count(key)) queue_.push_back(key);
}

std::optional<QueueTime> QueueCore::NextDelayed() const {
  if (waiting_.empty()) return std::nullopt;
  return waiting_.begin()->first;
}

void WorkQueue::Add(const std::string& key) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (shutting_down_) return;
    core_.Add(key);
  }
  cv_.notify_one();
}

void WorkQueue::AddAfter(const std::string& key, QueueDuration delay) {
  if (delay <= QueueDuration::zero()) return Add(key);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (shutting_down_) return;
    core_.AddAt(key, QueueClock::now() + delay);
  }
  // A sleeping Get may need to wake earlier than it planned.
  cv_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  QueueDuration d;
  {
    std::lock_guard<std::mutex> l(mu_);
    d = backoff_.NextDelay(key);
  }
  AddAfter(key, d);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  backoff_.Forget(key);
}

bool WorkQueue::Get(std::string* key) {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    if (shutting_down_) return false;
    core_.Promote(QueueClock::now());
    if (auto k = core_.Pop()) {
      *key = std::move(*k);
      return true;
    }
    if (auto next = core_.NextDelayed()) {
      cv_.wait_until(l, *next);
    } else {
      cv_.wait(l);
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  bool requeued;
  {
    std::lock_guard<std::mutex> l(mu_);
    size_t before = core_.ReadyLen();
    core_.Done(key);
    requeued = core_.ReadyLen() > before;
  }
  if (requeued) cv_.notify_one();
}

void WorkQueue::ShutDown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    shutting_down_ = true;
  }
  cv_.notify_all();
}

size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> l(mu_);
  return core_.ReadyLen();
}

}  // namespace ddp::controller
