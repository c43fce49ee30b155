// Reaper: background destruction, bounded in number (see reaper.h).
#include "worker/comm/reaper.h"

#include <thread>

namespace ddp::worker {

Reaper::~Reaper() {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
}

bool Reaper::Adopt(std::function<void()> destroy) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_ >= max_pending_) return false;
    ++pending_;
  }
  std::thread([this, destroy = std::move(destroy)]() mutable {
    destroy();
    destroy = nullptr;  // whatever the closure still owns goes before the count drops
    std::lock_guard<std::mutex> lock(mu_);
    --pending_;
    done_.notify_all();
  }).detach();
  return true;
}

size_t Reaper::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

Reaper& GroupReaper() {
  static Reaper* reaper = new Reaper(kMaxGroupsBeingDestroyed);  // never destroyed: see reaper.h
  return *reaper;
}

}  // namespace ddp::worker
