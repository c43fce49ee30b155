// A cancellable store for communicator creation (see fenced_store.h).
#include "worker/group/fenced_store.h"

#include <stdexcept>
#include <thread>

namespace ddp::worker::group {
namespace {

// inner->clone() where c10d::Store has it (LibTorch 2.x), else inner itself.
template <typename S>
auto CloneOrShare(const c10::intrusive_ptr<S>& inner, int) -> decltype(inner->clone()) {
  return inner->clone();
}
template <typename S>
c10::intrusive_ptr<c10d::Store> CloneOrShare(const c10::intrusive_ptr<S>& inner, long) {
  return inner;
}

}  // namespace

FencedStore::FencedStore(c10::intrusive_ptr<c10d::Store> inner,
                         std::function<std::string()> cancelled, std::chrono::milliseconds interval)
    : c10d::Store(inner->getTimeout()),
      inner_(std::move(inner)),
      cancelled_(std::move(cancelled)),
      interval_(interval) {}

void FencedStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  inner_->set(key, value);
}

std::vector<uint8_t> FencedStore::compareSet(const std::string& key,
                                             const std::vector<uint8_t>& current,
                                             const std::vector<uint8_t>& value) {
  return inner_->compareSet(key, current, value);
}

std::vector<uint8_t> FencedStore::get(const std::string& key) {
  wait({key}, timeout_);
  return inner_->get(key);
}

int64_t FencedStore::add(const std::string& key, int64_t value) { return inner_->add(key, value); }

bool FencedStore::deleteKey(const std::string& key) { return inner_->deleteKey(key); }

bool FencedStore::check(const std::vector<std::string>& keys) { return inner_->check(keys); }

int64_t FencedStore::getNumKeys() { return inner_->getNumKeys(); }

void FencedStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

c10::intrusive_ptr<c10d::Store> FencedStore::clone() {
  auto copy = c10::make_intrusive<FencedStore>(CloneOrShare(inner_, 0), cancelled_, interval_);
  copy->setTimeout(timeout_);
  return copy;
}

void FencedStore::wait(const std::vector<std::string>& keys,
                       const std::chrono::milliseconds& timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = timeout.count() > 0 ? Clock::now() + timeout : Clock::time_point::max();
  while (!inner_->check(keys)) {
    if (std::string why = cancelled_(); !why.empty()) throw std::runtime_error(why);
    if (Clock::now() >= deadline) {
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
      throw std::runtime_error("Wait timeout for key(s): " + names);
    }
    std::this_thread::sleep_for(interval_);
  }
}

}  // namespace ddp::worker::group
