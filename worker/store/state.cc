// The store's keys and values (see state.h).
#include "worker/store/state.h"

#include <cerrno>
#include <cstdlib>

namespace ddp::store {
namespace {

int64_t Size(const std::string& key, const Bytes& value) {
  return static_cast<int64_t>(key.size() + value.size());
}

// A counter's text as c10d writes it (std::to_string), and back.
bool ParseCounter(const Bytes& v, int64_t* out) {
  if (v.empty() || v.size() > 20) return false;
  const std::string s(v.begin(), v.end());
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = n;
  return true;
}

}  // namespace

StoreState::StoreState(int64_t max_bytes) : max_bytes_(max_bytes) {}

Status StoreState::Room(int64_t more) {
  if (more <= 0 || stats_.bytes + more <= max_bytes_) return Status::OK();
  ++stats_.refused;
  return Status::Unavailable("the store is full: " + std::to_string(stats_.bytes) + " of " +
                             std::to_string(max_bytes_) + " bytes held");
}

void StoreState::OnChange(std::function<void(const std::string&)> hook) {
  std::lock_guard<std::mutex> lock(hook_mu_);
  on_change_ = std::move(hook);
}

void StoreState::Changed(const std::string& key) {
  changed_.notify_all();
  std::lock_guard<std::mutex> lock(hook_mu_);
  if (on_change_) on_change_(key);
}

Status StoreState::Set(const std::string& key, Bytes value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kv_.find(key);
    const int64_t before = it == kv_.end() ? 0 : Size(key, it->second);
    const int64_t after = Size(key, value);
    if (Status s = Room(after - before); !s.ok()) return s;
    stats_.bytes += after - before;
    if (it == kv_.end()) {
      kv_.emplace(key, std::move(value));
      ++stats_.keys;
    } else {
      it->second = std::move(value);
    }
  }
  Changed(key);
  return Status::OK();
}

std::optional<Bytes> StoreState::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  return it->second;
}

StatusOr<int64_t> StoreState::Add(const std::string& key, int64_t delta) {
  int64_t now = 0;
  bool created_now = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kv_.find(key);
    int64_t was = 0;
    if (it != kv_.end() && !ParseCounter(it->second, &was)) {
      return Status::InvalidArgument("add: key " + key + " does not hold a number");
    }
    // Wraps like c10d's (int64 arithmetic), without the undefined behaviour.
    now = static_cast<int64_t>(static_cast<uint64_t>(was) + static_cast<uint64_t>(delta));
    const std::string text = std::to_string(now);
    Bytes value(text.begin(), text.end());
    const int64_t before = it == kv_.end() ? 0 : Size(key, it->second);
    if (Status s = Room(Size(key, value) - before); !s.ok()) return s;
    stats_.bytes += Size(key, value) - before;
    created_now = it == kv_.end();
    if (it == kv_.end()) {
      kv_.emplace(key, std::move(value));
      ++stats_.keys;
    } else {
      it->second = std::move(value);
    }
  }
  if (delta != 0 || created_now) Changed(key);
  return now;
}

StatusOr<Bytes> StoreState::CompareSet(const std::string& key, const Bytes& expected,
                                       Bytes desired) {
  Bytes now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kv_.find(key);
    if (it == kv_.end() && !expected.empty()) return expected;
    if (it != kv_.end() && it->second != expected) return it->second;
    const int64_t before = it == kv_.end() ? 0 : Size(key, it->second);
    if (Status s = Room(Size(key, desired) - before); !s.ok()) return s;
    stats_.bytes += Size(key, desired) - before;
    now = desired;
    if (it == kv_.end()) {
      kv_.emplace(key, std::move(desired));
      ++stats_.keys;
    } else {
      it->second = std::move(desired);
    }
  }
  Changed(key);
  return now;
}

bool StoreState::Check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : keys) {
    if (kv_.count(k) == 0) return false;
  }
  return true;
}

bool StoreState::Delete(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kv_.find(key);
    if (it == kv_.end()) return false;
    stats_.bytes -= Size(key, it->second);
    --stats_.keys;
    kv_.erase(it);
  }
  Changed(key);
  return true;
}

int64_t StoreState::NumKeys() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(kv_.size());
}

bool StoreState::Wait(const std::vector<std::string>& keys,
                      std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto all = [&] {
    for (const auto& k : keys) {
      if (kv_.count(k) == 0) return false;
    }
    return true;
  };
  return changed_.wait_until(lock, deadline, all);
}

bool StoreState::EvaluateLocked(const std::vector<Condition>& conditions,
                                std::vector<std::optional<Bytes>>* values) {
  values->clear();
  bool any = false;
  for (const Condition& c : conditions) {
    auto it = kv_.find(c.key);
    const Bytes* v = it == kv_.end() ? nullptr : &it->second;
    any = any || Holds(c, v);
    values->push_back(v == nullptr ? std::nullopt : std::optional<Bytes>(*v));
  }
  return any;
}

size_t StoreState::ValueBytes(const std::vector<Condition>& conditions) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = 0;
  for (const Condition& c : conditions) {
    auto it = kv_.find(c.key);
    if (it != kv_.end()) total += it->second.size();
  }
  return total;
}

bool StoreState::Evaluate(const std::vector<Condition>& conditions,
                          std::vector<std::optional<Bytes>>* values) {
  std::lock_guard<std::mutex> lock(mu_);
  return EvaluateLocked(conditions, values);
}

bool StoreState::Watch(const std::vector<Condition>& conditions,
                       std::chrono::steady_clock::time_point deadline,
                       std::vector<std::optional<Bytes>>* values) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_until(lock, deadline, [&] { return EvaluateLocked(conditions, values); });
}

void StoreState::Count(Op op, bool in_process) {
  const auto i = static_cast<size_t>(op);
  if (i < requests_.size()) {
    (in_process ? in_process_ : requests_)[i].fetch_add(1, std::memory_order_relaxed);
  }
}

StoreStats StoreState::Stats() {
  StoreStats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = stats_;
  }
  for (size_t i = 0; i < requests_.size(); ++i) {
    s.requests[i] = requests_[i].load();
    s.in_process[i] = in_process_[i].load();
  }
  return s;
}

}  // namespace ddp::store
