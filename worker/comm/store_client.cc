// The store's client (see store_client.h; the protocol: worker/store/wire.h).
#include "worker/comm/store_client.h"

#include <unistd.h>

#include <mutex>
#include <stdexcept>
#include <thread>

#include "worker/comm/watch.h"
#include "worker/store/net.h"
#include "worker/store/wire.h"

namespace ddp::worker {
namespace {

using store::Clock;
using store::Code;
using store::Op;
using store::Reply;
using store::Request;
using std::chrono::milliseconds;

class StoreClient : public WatchableStore {
 public:
  StoreClient(std::string host, int port, milliseconds timeout, std::string prefix)
      : WatchableStore(timeout), host_(std::move(host)), port_(port),
        where_(host_ + ":" + std::to_string(port_)), prefix_(std::move(prefix)) {
    const auto deadline = Clock::now() + timeout;
    milliseconds pause(20);
    std::string last;
    while (true) {
      auto fd = store::ConnectWithin(host_, port_, deadline);
      if (fd.ok()) {
        fd_ = *fd;
        break;
      }
      last = fd.status().message();
      if (Clock::now() + pause >= deadline) {
        throw std::runtime_error("store " + where_ + ": cannot connect within " +
                                 std::to_string(timeout.count()) + " ms (timed out): " + last);
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, milliseconds(1000));
    }
    Request hello;
    hello.op = Op::kHello;
    hello.number = store::kVersion;
    std::lock_guard<std::mutex> lock(mu_);
    // A peer that closes or stays silent here is frozen, or is not a ddp store (c10d's TCPStore
    // closes on the greeting: it reads it as an unknown query).
    const Reply r = CallLocked(hello, deadline, "no greeting from a ddp store (frozen, or another program)");
    if (r.code != Code::kOk) Fail("not a ddp store: " + Text(r.value));
    id_ = Text(r.value);
  }

  ~StoreClient() override {
    if (fd_ >= 0) ::close(fd_);
  }

  const std::string& id() const { return id_; }

  // LibTorch 2.5+ declares this pure virtual (a thread-safe copy: a new connection); not marked
  // override, so that it also compiles against versions without it.
  c10::intrusive_ptr<c10d::Store> clone() {
    return c10::make_intrusive<StoreClient>(host_, port_, timeout_, prefix_);
  }

  WatchResult Watch(const std::vector<Condition>& conditions, milliseconds wait) override {
    Request q;
    q.op = Op::kWatch;
    q.wait_ms = wait.count() <= 0 ? 0 : WaitMs(wait);  // 0: a read of every key, at once
    q.conditions = conditions;
    for (Condition& c : q.conditions) c.key = Key(c.key);
    const Reply r = Call(q, milliseconds(std::max<uint32_t>(q.wait_ms, 1)));
    Expect(r, "watch");
    std::vector<std::optional<store::Bytes>> values;
    if (Status s = store::DecodeValues(r.value, conditions.size(), &values); !s.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      Fail("watch: a malformed reply: " + s.message());
    }
    WatchResult out;
    out.held = r.code == Code::kOk;
    for (auto& v : values) {
      out.values.push_back(v ? std::optional<std::string>(std::string(v->begin(), v->end()))
                             : std::nullopt);
    }
    return out;
  }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    Request q = Keyed(Op::kSet, key);
    q.value = value;
    Expect(Call(q), "set " + key);
  }

  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    Request q = Keyed(Op::kCompareSet, key);
    q.expected = expected;
    q.value = desired;
    return Expect(Call(q), "compareSet " + key).value;
  }

  // As c10d's: wait for the key (at most the store's timeout), then read it.
  std::vector<uint8_t> get(const std::string& key) override {
    Request q = Keyed(Op::kGet, key);
    q.wait_ms = WaitMs(timeout_);
    const Reply r = Call(q, timeout_);
    if (r.code == Code::kTimeout) {
      throw std::runtime_error("store " + where_ + ": get " + key + ": the key did not appear within " +
                               std::to_string(timeout_.count()) + " ms (timed out)");
    }
    return Expect(r, "get " + key).value;
  }

  int64_t add(const std::string& key, int64_t value) override {
    Request q = Keyed(Op::kAdd, key);
    q.number = value;
    return Expect(Call(q), "add " + key).number;
  }

  bool deleteKey(const std::string& key) override {
    return Expect(Call(Keyed(Op::kDelete, key)), "delete " + key).number == 1;
  }

  bool check(const std::vector<std::string>& keys) override {
    Request q;
    q.op = Op::kCheck;
    q.keys = Keys(keys);
    return Expect(Call(q), "check").number == 1;
  }

  int64_t getNumKeys() override {
    Request q;
    q.op = Op::kNumKeys;
    return Expect(Call(q), "numKeys").number;
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    Request q;
    q.op = Op::kWait;
    q.keys = Keys(keys);
    q.wait_ms = WaitMs(timeout);
    const Reply r = Call(q, timeout);
    if (r.code == Code::kTimeout) {
      throw std::runtime_error("store " + where_ + ": wait for " + std::to_string(keys.size()) +
                               " key(s) timed out after " + std::to_string(timeout.count()) + " ms");
    }
    Expect(r, "wait");
  }

  void watchKey(const std::string& key, c10d::WatchKeyCallback) override {
    throw std::runtime_error("store " + where_ + ": watchKey(" + key + ") is not supported");
  }

 private:
  static std::string Text(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

  static uint32_t WaitMs(milliseconds t) {
    // c10d's kNoTimeout (0) means no limit: the longest wait the protocol carries.
    if (t.count() <= 0 || t.count() > store::kMaxWaitMs) return store::kMaxWaitMs;
    return static_cast<uint32_t>(t.count());
  }

  std::string Key(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "/" + key;
  }

  Request Keyed(Op op, const std::string& key) const {
    Request q;
    q.op = op;
    q.keys.push_back(Key(key));
    return q;
  }

  std::vector<std::string> Keys(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const auto& k : keys) out.push_back(Key(k));
    return out;
  }

  const Reply& Expect(const Reply& r, const std::string& what) {
    if (r.code == Code::kError) {
      throw std::runtime_error("store " + where_ + ": " + what + ": " + Text(r.value));
    }
    return r;
  }

  // A call bounded by the store's timeout, or by `waits` + kReplyGrace for a request the server
  // parks for `waits`.
  Reply Call(const Request& q, milliseconds waits = milliseconds(-1)) {
    const milliseconds bound =
        waits.count() >= 0 ? milliseconds(WaitMs(waits)) + kReplyGrace : timeout_;
    std::lock_guard<std::mutex> lock(mu_);
    return CallLocked(q, Clock::now() + bound, store::OpName(q.op));
  }

  Reply CallLocked(const Request& q, Clock::time_point deadline, const std::string& what) {
    if (fd_ < 0) Fail("the connection was closed after an error");
    for (const auto& k : q.keys) {
      if (k.size() > store::kMaxKeyBytes) Fail(what + ": a key of " + std::to_string(k.size()) + " bytes");
    }
    if (q.value.size() > store::kMaxValueBytes) Fail(what + ": a value past 64 MiB");
    const std::string frame = store::EncodeRequest(q);
    if (Status s = store::SendAll(fd_, frame.data(), frame.size(), deadline); !s.ok()) {
      Fail(what + ": " + s.message());
    }
    uint8_t prefix[4];
    if (Status s = store::RecvAll(fd_, prefix, 4, deadline); !s.ok()) Fail(what + ": " + Said(s));
    uint32_t len = 0;
    if (Status s = store::FrameLength(prefix, &len); !s.ok()) Fail(what + ": " + s.message());
    std::vector<uint8_t> body(len);
    if (Status s = store::RecvAll(fd_, body.data(), len, deadline); !s.ok()) {
      Fail(what + ": " + Said(s));
    }
    Reply r;
    if (Status s = store::DecodeReply(body.data(), len, &r); !s.ok()) {
      Fail(what + ": a malformed reply: " + s.message());
    }
    return r;
  }

  std::string Said(const Status& s) const {
    if (s.code() == StatusCode::kDeadlineExceeded) return "no reply in time (timed out)";
    return s.message();
  }

  [[noreturn]] void Fail(const std::string& what) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("store " + where_ + ": " + what);
  }

  std::string host_;
  int port_;
  std::string where_;
  std::string prefix_;
  std::string id_;
  std::mutex mu_;
  int fd_ = -1;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> ConnectStore(const std::string& host, int port,
                                             std::chrono::milliseconds timeout,
                                             const std::string& prefix) {
  return c10::make_intrusive<StoreClient>(host, port, timeout, prefix);
}

std::string StoreServerId(const c10d::Store& store) {
  const auto* c = dynamic_cast<const StoreClient*>(&store);
  return c != nullptr ? c->id() : "";
}

}  // namespace ddp::worker
