// The store in its host's process (see local_store.h).
#include "worker/comm/local_store.h"

#include <stdexcept>

#include "worker/store/net.h"

namespace ddp::worker {
namespace {

using store::Op;
using std::chrono::milliseconds;

class InProcessStore : public c10d::Store {
 public:
  InProcessStore(std::shared_ptr<store::StoreState> state, milliseconds timeout,
                 std::shared_ptr<void> keep)
      : c10d::Store(timeout), state_(std::move(state)), keep_(std::move(keep)) {}

  // LibTorch 2.5+ declares this pure virtual; not marked override (see store_client.cc).
  c10::intrusive_ptr<c10d::Store> clone() {
    return c10::make_intrusive<InProcessStore>(state_, timeout_, keep_);
  }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    state_->Count(Op::kSet);
    Check(state_->Set(key, value), "set " + key);
  }

  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    state_->Count(Op::kCompareSet);
    auto v = state_->CompareSet(key, expected, desired);
    Check(v.status(), "compareSet " + key);
    return *v;
  }

  std::vector<uint8_t> get(const std::string& key) override {
    state_->Count(Op::kGet);
    if (!state_->Wait({key}, Deadline(timeout_))) {
      throw std::runtime_error("store: get " + key + ": the key did not appear within " +
                               std::to_string(timeout_.count()) + " ms (timed out)");
    }
    auto v = state_->Get(key);
    if (!v) throw std::runtime_error("store: get " + key + ": deleted while read");
    return *v;
  }

  int64_t add(const std::string& key, int64_t value) override {
    state_->Count(Op::kAdd);
    auto v = state_->Add(key, value);
    Check(v.status(), "add " + key);
    return *v;
  }

  bool deleteKey(const std::string& key) override {
    state_->Count(Op::kDelete);
    return state_->Delete(key);
  }

  bool check(const std::vector<std::string>& keys) override {
    state_->Count(Op::kCheck);
    return state_->Check(keys);
  }

  int64_t getNumKeys() override {
    state_->Count(Op::kNumKeys);
    return state_->NumKeys();
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    state_->Count(Op::kWait);
    if (!state_->Wait(keys, Deadline(timeout))) {
      throw std::runtime_error("store: wait for " + std::to_string(keys.size()) +
                               " key(s) timed out after " + std::to_string(timeout.count()) + " ms");
    }
  }

  void watchKey(const std::string& key, c10d::WatchKeyCallback) override {
    throw std::runtime_error("store: watchKey(" + key + ") is not supported");
  }

 private:
  static store::Clock::time_point Deadline(milliseconds t) {
    // c10d's kNoTimeout (0): no limit (a day: time_point::max() overflows in the wait).
    if (t.count() <= 0) t = std::chrono::hours(24);
    return store::Clock::now() + t;
  }

  static void Check(const Status& s, const std::string& what) {
    if (!s.ok()) throw std::runtime_error("store: " + what + ": " + s.message());
  }

  std::shared_ptr<store::StoreState> state_;
  std::shared_ptr<void> keep_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> LocalStore(std::shared_ptr<store::StoreState> state,
                                           milliseconds timeout, std::shared_ptr<void> keep) {
  return c10::make_intrusive<InProcessStore>(std::move(state), timeout, std::move(keep));
}

StatusOr<HostedStore> HostStore(int port, milliseconds timeout, store::ServerLimits limits) {
  auto state = std::make_shared<store::StoreState>();
  auto server = store::StoreServer::Start(state, port, store::NewStoreId(), limits);
  if (!server.ok()) return server.status();
  HostedStore h;
  h.server = std::shared_ptr<store::StoreServer>(std::move(*server));
  h.local = LocalStore(state, timeout, h.server);
  return h;
}

}  // namespace ddp::worker
