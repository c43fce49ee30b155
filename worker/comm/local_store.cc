// The store in its host's process (see local_store.h).
#include "worker/comm/local_store.h"

#include <stdexcept>

#include "worker/comm/watch.h"
#include "worker/store/net.h"

namespace ddp::worker {
namespace {

using store::Op;
using std::chrono::milliseconds;

class InProcessStore : public WatchableStore {
 public:
  InProcessStore(std::shared_ptr<store::StoreState> state, milliseconds timeout,
                 std::shared_ptr<void> keep, std::string prefix)
      : WatchableStore(timeout), state_(std::move(state)), keep_(std::move(keep)),
        prefix_(std::move(prefix)) {}

  // LibTorch 2.5+ declares this pure virtual; not marked override (see store_client.cc).
  c10::intrusive_ptr<c10d::Store> clone() {
    return c10::make_intrusive<InProcessStore>(state_, timeout_, keep_, prefix_);
  }

  WatchResult Watch(const std::vector<Condition>& conditions, milliseconds wait) override {
    state_->Count(Op::kWatch, /*in_process=*/true);
    std::vector<Condition> mine = conditions;
    for (Condition& c : mine) c.key = K(c.key);
    std::vector<std::optional<store::Bytes>> values;
    WatchResult r;
    r.held = wait.count() <= 0 ? state_->Evaluate(mine, &values)
                               : state_->Watch(mine, Deadline(wait), &values);
    for (auto& v : values) {
      r.values.push_back(v ? std::optional<std::string>(std::string(v->begin(), v->end()))
                           : std::nullopt);
    }
    return r;
  }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    state_->Count(Op::kSet, /*in_process=*/true);
    Check(state_->Set(K(key), value), "set " + key);
  }

  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    state_->Count(Op::kCompareSet, /*in_process=*/true);
    auto v = state_->CompareSet(K(key), expected, desired);
    Check(v.status(), "compareSet " + key);
    return *v;
  }

  std::vector<uint8_t> get(const std::string& key) override {
    state_->Count(Op::kGet, /*in_process=*/true);
    if (!state_->Wait({K(key)}, Deadline(timeout_))) {
      throw std::runtime_error("store: get " + key + ": the key did not appear within " +
                               std::to_string(timeout_.count()) + " ms (timed out)");
    }
    auto v = state_->Get(K(key));
    if (!v) throw std::runtime_error("store: get " + key + ": deleted while read");
    return *v;
  }

  int64_t add(const std::string& key, int64_t value) override {
    state_->Count(Op::kAdd, /*in_process=*/true);
    auto v = state_->Add(K(key), value);
    Check(v.status(), "add " + key);
    return *v;
  }

  bool deleteKey(const std::string& key) override {
    state_->Count(Op::kDelete, /*in_process=*/true);
    return state_->Delete(K(key));
  }

  bool check(const std::vector<std::string>& keys) override {
    state_->Count(Op::kCheck, /*in_process=*/true);
    return state_->Check(Ks(keys));
  }

  int64_t getNumKeys() override {
    state_->Count(Op::kNumKeys, /*in_process=*/true);
    return state_->NumKeys();
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    state_->Count(Op::kWait, /*in_process=*/true);
    if (!state_->Wait(Ks(keys), Deadline(timeout))) {
      throw std::runtime_error("store: wait for " + std::to_string(keys.size()) +
                               " key(s) timed out after " + std::to_string(timeout.count()) + " ms");
    }
  }

  void watchKey(const std::string& key, c10d::WatchKeyCallback) override {
    throw std::runtime_error("store: watchKey(" + key + ") is not supported");
  }

 private:
  std::string K(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "/" + key; }
  std::vector<std::string> Ks(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const auto& k : keys) out.push_back(K(k));
    return out;
  }

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
  std::string prefix_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> LocalStore(std::shared_ptr<store::StoreState> state,
                                           milliseconds timeout, std::shared_ptr<void> keep,
                                           const std::string& prefix) {
  return c10::make_intrusive<InProcessStore>(std::move(state), timeout, std::move(keep), prefix);
}

StatusOr<HostedStore> HostStore(int port, milliseconds timeout, store::ServerLimits limits) {
  auto state = std::make_shared<store::StoreState>();
  auto server = store::StoreServer::Start(state, port, store::NewStoreId(), limits);
  if (!server.ok()) return server.status();
  HostedStore h;
  h.server = std::shared_ptr<store::StoreServer>(std::move(*server));
  h.state = state;
  h.local = LocalStore(state, timeout, h.server);
  return h;
}

}  // namespace ddp::worker
