// The store's server over real sockets on 127.0.0.1: every request answered with c10d's
// semantics, parked requests released by any writer (another connection or the process itself)
// or at their deadline, and every way a hostile or broken peer can misbehave bounded: it loses
// its own connection, and the store goes on serving the others.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "worker/store/net.h"
#include "worker/store/server.h"
#include "worker/store/wire.h"

namespace ddp::store {
namespace {

using std::chrono::milliseconds;

Bytes B(const std::string& s) { return {s.begin(), s.end()}; }
std::string S(const Bytes& b) { return {b.begin(), b.end()}; }

// A bare protocol client: one socket, one request at a time, 5 s per reply.
class Peer {
 public:
  explicit Peer(int port, bool greet = true, milliseconds within = milliseconds(5000))
      : within_(within) {
    auto fd = ConnectWithin("127.0.0.1", port, Clock::now() + within_);
    EXPECT_TRUE(fd.ok()) << fd.status().ToString();
    fd_ = fd.ok() ? *fd : -1;
    if (greet) {
      Request h;
      h.op = Op::kHello;
      h.number = kVersion;
      greeting_ = Call(h);
    }
  }
  ~Peer() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  const Reply& greeting() const { return greeting_; }

  void Send(const std::string& bytes) {
    ASSERT_TRUE(SendAll(fd_, bytes.data(), bytes.size(), Clock::now() + std::chrono::seconds(5)).ok());
  }
  Reply Read() {
    const milliseconds within = within_;
    uint8_t prefix[4];
    Reply r;
    if (!RecvAll(fd_, prefix, 4, Clock::now() + within).ok()) {
      r.code = Code::kError;
      r.value = B("<no reply>");
      return r;
    }
    uint32_t len = 0;
    EXPECT_TRUE(FrameLength(prefix, &len).ok());
    Bytes body(len);
    EXPECT_TRUE(RecvAll(fd_, body.data(), len, Clock::now() + within).ok());
    EXPECT_TRUE(DecodeReply(body.data(), len, &r).ok());
    return r;
  }
  Reply Call(const Request& q) {
    Send(EncodeRequest(q));
    return Read();
  }
  // True once the server closed the connection (EOF within `within`).
  bool ClosedWithin(milliseconds within) {
    const auto deadline = Clock::now() + within;
    char buf[4096];
    while (Clock::now() < deadline) {
      const Status s = RecvAll(fd_, buf, 1, deadline);
      if (!s.ok()) return s.code() != StatusCode::kDeadlineExceeded;
    }
    return false;
  }

 private:
  milliseconds within_;
  int fd_ = -1;
  Reply greeting_;
};

Request Q(Op op, std::vector<std::string> keys = {}, Bytes value = {}) {
  Request q;
  q.op = op;
  q.keys = std::move(keys);
  q.value = std::move(value);
  return q;
}

std::unique_ptr<StoreServer> Serve(ServerLimits limits = {},
                                   std::shared_ptr<StoreState> state = nullptr) {
  if (!state) state = std::make_shared<StoreState>();
  auto s = StoreServer::Start(state, 0, "test-id", limits);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(StoreServerTest, TheGreetingSaysTheIdAndEveryRequestIsAnswered) {
  auto server = Serve();
  Peer p(server->port());
  EXPECT_EQ(p.greeting().code, Code::kOk);
  EXPECT_EQ(p.greeting().number, kVersion);
  EXPECT_EQ(S(p.greeting().value), "test-id");
  EXPECT_EQ(p.Call(Q(Op::kSet, {"a"}, B("one"))).code, Code::kOk);
  EXPECT_EQ(S(p.Call(Q(Op::kGet, {"a"})).value), "one");
  EXPECT_EQ(p.Call(Q(Op::kGet, {"missing"})).code, Code::kNotFound);  // no wait asked
  Request add = Q(Op::kAdd, {"n"});
  add.number = 5;
  EXPECT_EQ(p.Call(add).number, 5);
  EXPECT_EQ(p.Call(Q(Op::kCheck, {"a", "n"})).number, 1);
  EXPECT_EQ(p.Call(Q(Op::kCheck, {"a", "x"})).number, 0);
  Request cas = Q(Op::kCompareSet, {"a"}, B("uno"));
  cas.expected = B("one");
  EXPECT_EQ(S(p.Call(cas).value), "uno");
  EXPECT_EQ(p.Call(Q(Op::kNumKeys)).number, 2);
  EXPECT_EQ(p.Call(Q(Op::kDelete, {"a"})).number, 1);
  EXPECT_EQ(p.Call(Q(Op::kDelete, {"a"})).number, 0);
  Request text = Q(Op::kSet, {"t"}, B("text"));
  p.Call(text);
  add.keys = {"t"};
  const Reply bad = p.Call(add);  // an error reply; the connection goes on
  EXPECT_EQ(bad.code, Code::kError);
  EXPECT_NE(S(bad.value).find("does not hold a number"), std::string::npos);
  EXPECT_EQ(p.Call(Q(Op::kNumKeys)).number, 2);
  EXPECT_EQ(server->state().Stats().requests[static_cast<size_t>(Op::kNumKeys)], 2);
}

// A parked get or wait is answered as soon as its keys exist, whoever creates them: another
// connection, or the hosting process through the state (the authority writes in process).
TEST(StoreServerTest, AParkedRequestIsReleasedByAnyWriterAndTimesOutAtItsDeadline) {
  auto state = std::make_shared<StoreState>();
  auto server = Serve({}, state);
  Peer waiter(server->port());
  Peer writer(server->port());
  auto parked = [&](Op op) {
    // The request is parked once the server counted it: no sleep decides the order.
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (state->Stats().requests[static_cast<size_t>(op)] == 0 && Clock::now() < deadline) {
      std::this_thread::yield();
    }
  };
  Request get = Q(Op::kGet, {"late"});
  get.wait_ms = 10000;
  waiter.Send(EncodeRequest(get));
  parked(Op::kGet);
  writer.Call(Q(Op::kSet, {"late"}, B("by another connection")));
  EXPECT_EQ(S(waiter.Read().value), "by another connection");

  Request wait = Q(Op::kWait, {"x", "y"});
  wait.wait_ms = 10000;
  waiter.Send(EncodeRequest(wait));
  parked(Op::kWait);
  ASSERT_TRUE(state->Set("x", B("1")).ok());
  ASSERT_TRUE(state->Add("y", 1).ok());  // in process, as the authority writes
  EXPECT_EQ(waiter.Read().code, Code::kOk);

  Request never = Q(Op::kWait, {"never"});
  never.wait_ms = 300;
  const auto start = Clock::now();
  waiter.Send(EncodeRequest(never));
  EXPECT_EQ(waiter.Read().code, Code::kTimeout);
  const auto took = Clock::now() - start;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(3000));  // slack for a loaded machine; a lost timer never answers
  EXPECT_EQ(waiter.Call(Q(Op::kCheck, {"x"})).number, 1);  // the connection goes on after it
}

TEST(StoreServerTest, RequestsSentWhileOneIsParkedAreAnsweredInOrderAfterIt) {
  auto server = Serve();
  Peer p(server->port());
  Peer writer(server->port());
  Request get = Q(Op::kGet, {"k"});
  get.wait_ms = 10000;
  p.Send(EncodeRequest(get) + EncodeRequest(Q(Op::kNumKeys)) + EncodeRequest(Q(Op::kCheck, {"k"})));
  writer.Call(Q(Op::kSet, {"k"}, B("v")));
  EXPECT_EQ(S(p.Read().value), "v");
  EXPECT_EQ(p.Read().number, 1);  // numKeys, after the key existed
  EXPECT_EQ(p.Read().number, 1);  // check
}

// Each way a peer misbehaves loses it its connection, within bounds, and nothing else.
TEST(StoreServerTest, AHostilePeerLosesItsConnectionAndTheStoreServesTheOthers) {
  ServerLimits limits;
  limits.greeting = milliseconds(300);
  auto server = Serve(limits);
  Peer good(server->port());
  good.Call(Q(Op::kSet, {"kept"}, B("yes")));
  struct Row {
    const char* what;
    std::string bytes;  // sent right after connecting (no greeting of ours)
    const char* reply;  // words of the error reply, or nullptr for a plain close
  };
  Request hello2 = Q(Op::kHello, {}, Bytes(kMagic, kMagic + 8));
  hello2.number = 2;
  const std::string c10d_query = std::string("\x05\x00\x00\x00\x00\x00\x00\x00\x02", 9);
  const std::vector<Row> rows = {
      {"silent", "", nullptr},
      {"a request before the greeting", EncodeRequest(Q(Op::kNumKeys)), "greet first"},
      {"another protocol version", EncodeRequest(hello2), "protocol version 2"},
      {"c10d's TCPStore query", c10d_query, nullptr},
      {"a 4 GiB frame", std::string("\xff\xff\xff\xff", 4), nullptr},
      {"an unknown request", std::string("\x01\x00\x00\x00\x63", 5), "malformed request"},
  };
  for (const Row& r : rows) {
    Peer bad(server->port(), /*greet=*/false);
    if (!r.bytes.empty()) bad.Send(r.bytes);
    if (r.reply != nullptr) {
      const Reply reply = bad.Read();
      EXPECT_EQ(reply.code, Code::kError) << r.what;
      EXPECT_NE(S(reply.value).find(r.reply), std::string::npos) << r.what << ": " << S(reply.value);
    }
    EXPECT_TRUE(bad.ClosedWithin(milliseconds(3000))) << r.what;
  }
  EXPECT_GE(server->refused(), static_cast<int64_t>(rows.size()));
  EXPECT_EQ(S(good.Call(Q(Op::kGet, {"kept"})).value), "yes");
}

TEST(StoreServerTest, ConnectionsPastTheBoundAreClosedAtOnce) {
  ServerLimits limits;
  limits.max_connections = 3;
  auto server = Serve(limits);
  std::vector<std::unique_ptr<Peer>> peers;
  for (int i = 0; i < 3; ++i) peers.push_back(std::make_unique<Peer>(server->port()));
  Peer fourth(server->port(), /*greet=*/false);
  EXPECT_TRUE(fourth.ClosedWithin(milliseconds(3000)));
  peers.pop_back();  // room again: the store notices the close and takes a new one
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (server->open_connections() > 2 && Clock::now() < deadline) std::this_thread::yield();
  Peer fifth(server->port());
  EXPECT_EQ(fifth.greeting().code, Code::kOk);
}

TEST(StoreServerTest, APeerThatNeverReadsItsRepliesIsClosedPastTheBound) {
  ServerLimits limits;
  limits.max_unread_bytes = 1u << 20;
  auto state = std::make_shared<StoreState>();
  ASSERT_TRUE(state->Set("big", Bytes(256 * 1024, 'x')).ok());
  auto server = Serve(limits, state);
  Peer p(server->port());
  const std::string get = EncodeRequest(Q(Op::kGet, {"big"}));
  std::string many;
  for (int i = 0; i < 200; ++i) many += get;  // 50 MiB of replies asked for, none read
  ::send(p.fd(), many.data(), many.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (server->refused() == 0 && Clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(server->refused(), 1);
  Peer other(server->port());
  EXPECT_EQ(other.Call(Q(Op::kCheck, {"big"})).number, 1);
}

// Out of descriptors: accept() fails while a connection waits in the queue. The listener rests
// instead of spinning, and the waiting peer is served once descriptors free up. In a child
// process, whose descriptor limit the test lowers.
TEST(StoreServerTest, OutOfDescriptorsTheListenerRestsAndServesOnceTheyFreeUp) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    auto server = Serve();
    std::vector<int> hogs;
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    // Use up every descriptor but a few: the peer's socket below, then nothing for accept().
    // The limit leaves exactly the two lowest free descriptors usable (an inherited descriptor
    // may sit anywhere above them: ctest's log at 3, a shell's at 10).
    const int first = ::dup(0);
    const int second = ::dup(0);
    lim.rlim_cur = static_cast<rlim_t>(second + 1);
    ::close(first);
    ::close(second);
    ::setrlimit(RLIMIT_NOFILE, &lim);
    while (true) {
      const int fd = ::dup(0);
      if (fd < 0) break;
      hogs.push_back(fd);
    }
    ::close(hogs.back());  // one for the peer's own socket
    hogs.pop_back();
    std::atomic<bool> served{false};
    // A generous bound: on a loaded machine this process may wait seconds for the CPU.
    std::thread peer([&] {
      served = Peer(server->port(), true, milliseconds(60000)).greeting().code == Code::kOk;
    });
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    std::this_thread::sleep_for(milliseconds(500));  // the window the CPU time is measured over
    ::getrusage(RUSAGE_SELF, &after);
    const double cpu = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) +
                       (after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6 +
                       (after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
                       (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
    const bool early = served.load();
    for (int fd : hogs) ::close(fd);
    peer.join();
    const int code = (cpu < 0.2 ? 0 : 1) | (!early ? 0 : 2) | (served.load() ? 0 : 4);
    (void)!::write(report[1], &code, sizeof(code));
    ::_exit(0);
  }
  int code = -1;
  ASSERT_EQ(::read(report[0], &code, sizeof(code)), static_cast<ssize_t>(sizeof(code)));
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(code & 1, 0) << "the server spun while out of descriptors";
  EXPECT_EQ(code & 2, 0) << "served without a descriptor to accept with";
  EXPECT_EQ(code & 4, 0) << "not served once descriptors were free";
  ::close(report[0]);
  ::close(report[1]);
}

TEST(StoreServerTest, APeerGoneWhileParkedLeavesNothingBehind) {
  auto state = std::make_shared<StoreState>();
  auto server = Serve({}, state);
  {
    Peer p(server->port());
    Request w = Q(Op::kWait, {"k"});
    w.wait_ms = 60000;
    p.Send(EncodeRequest(w));
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (state->Stats().requests[static_cast<size_t>(Op::kWait)] == 0 && Clock::now() < deadline) {
      std::this_thread::yield();
    }
  }  // closed while parked
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (server->open_connections() > 0 && Clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(server->open_connections(), 0);
  ASSERT_TRUE(state->Set("k", B("v")).ok());  // releases nobody, crashes nothing
  Peer q(server->port());
  EXPECT_EQ(S(q.Call(Q(Op::kGet, {"k"})).value), "v");
}

Condition Cond(const std::string& key, Condition::Kind kind, const std::string& operand) {
  Condition c;
  c.key = key;
  c.kind = kind;
  c.operand = B(operand);
  return c;
}

std::vector<std::string> Values(const Reply& r, size_t count) {
  std::vector<std::optional<Bytes>> values;
  EXPECT_TRUE(DecodeValues(r.value, count, &values).ok());
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(v ? S(*v) : "<absent>");
  return out;
}

// A watch over the socket: answered at once when a condition holds, else parked until a write
// (by another connection or in process) makes one hold, or answered at its deadline with kTimeout;
// every answer carries the values of all its keys as they are.
TEST(StoreServerTest, AWatchParksUntilOneOfItsKeysChangesAndAnswersWithEveryValue) {
  auto state = std::make_shared<StoreState>();
  auto server = Serve({}, state);
  Peer watcher(server->port());
  Peer writer(server->port());
  ASSERT_TRUE(state->Set("gen", B("4")).ok());
  ASSERT_TRUE(state->Set("stop", B("no")).ok());
  Request w = Q(Op::kWatch);
  w.conditions = {Cond("stop", Condition::kChanged, "no"), Cond("gen", Condition::kAtLeast, "5"),
                  Cond("missing", Condition::kChanged, "x")};
  // "missing" is absent and was known as "x": that holds now.
  Reply now = watcher.Call(w);
  EXPECT_EQ(now.code, Code::kOk);
  EXPECT_EQ(Values(now, 3), (std::vector<std::string>{"no", "4", "<absent>"}));

  w.conditions.pop_back();
  w.wait_ms = 10000;
  watcher.Send(EncodeRequest(w));
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (state->Stats().requests[static_cast<size_t>(Op::kWatch)] < 2 && Clock::now() < deadline) {
    std::this_thread::yield();
  }
  writer.Call(Q(Op::kSet, {"other"}, B("1")));  // a key nobody watches releases nothing
  Request bump = Q(Op::kAdd, {"gen"});
  bump.number = 1;
  EXPECT_EQ(writer.Call(bump).number, 5);
  const Reply moved = watcher.Read();
  EXPECT_EQ(moved.code, Code::kOk);
  EXPECT_EQ(Values(moved, 2), (std::vector<std::string>{"no", "5"}));

  w.conditions = {Cond("gen", Condition::kAtLeast, "9")};
  w.wait_ms = 300;
  const auto start = Clock::now();
  const Reply late = watcher.Call(w);
  EXPECT_EQ(late.code, Code::kTimeout);
  EXPECT_GE(Clock::now() - start, milliseconds(300));
  EXPECT_EQ(Values(late, 1), (std::vector<std::string>{"5"}));
  w.wait_ms = 0;  // a read: the values at once, kTimeout when nothing holds
  EXPECT_EQ(Values(watcher.Call(w), 1), (std::vector<std::string>{"5"}));
}

// 64 conditions on one 1 MiB value would make a 64 MiB reply: an error, and nothing copied.
TEST(StoreServerTest, AWatchWhoseValuesPassTheBoundIsAnsweredWithAnError) {
  auto state = std::make_shared<StoreState>();
  auto server = Serve({}, state);
  ASSERT_TRUE(state->Set("big", Bytes(1u << 20, 7)).ok());
  Peer p(server->port());
  Request w = Q(Op::kWatch);
  for (int i = 0; i < 64; ++i) w.conditions.push_back(Cond("big", Condition::kChanged, "x"));
  const Reply r = p.Call(w);
  EXPECT_EQ(r.code, Code::kError);
  EXPECT_NE(S(r.value).find("a watch's values would take 67108864 bytes"), std::string::npos)
      << S(r.value);
  w.conditions.resize(2);  // under the bound: answered
  EXPECT_EQ(p.Call(w).code, Code::kOk);
  EXPECT_EQ(p.Call(Q(Op::kNumKeys)).number, 1);
}

// Requests not yet whole are bounded over every connection: the one that passes the bound is
// closed, the others are served.
// A peer that pipelines many small requests (the job's own code can reach the port) costs the
// loop thread time in proportion to what it sent, not its square: the server cut each frame
// from the front of the connection's buffer, moving the rest every time (4 MiB of 13-byte
// frames, a buffer of megabytes per read: minutes of memmove, every other peer waiting).
// Every reply comes, in order, well within a bound the quadratic cost passes many times over.
TEST(StoreServerTest, PipelinedSmallRequestsCostTheLoopLinearTime) {
  auto server = Serve();
  Peer flood(server->port());
  Peer other(server->port());
  ASSERT_EQ(other.Call(Q(Op::kSet, {"k"}, B("v"))).code, Code::kOk);
  const std::string frame = EncodeRequest(Q(Op::kNumKeys));
  const size_t frames = (4u << 20) / frame.size();
  std::string burst;
  burst.reserve(frames * frame.size());
  for (size_t i = 0; i < frames; ++i) burst += frame;
  const auto start = Clock::now();
  std::atomic<bool> sent{false};
  std::thread writer([&] {
    sent = SendAll(flood.fd(), burst.data(), burst.size(), Clock::now() + std::chrono::seconds(120)).ok();
  });
  size_t answered = 0;
  for (; answered < frames; ++answered) {
    const Reply r = flood.Read();
    if (r.code != Code::kOk || r.number != 1) break;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  writer.join();
  EXPECT_TRUE(sent);
  EXPECT_EQ(answered, frames);
  EXPECT_LT(seconds, 30.0) << frames << " frames of " << frame.size() << " bytes";
  EXPECT_EQ(S(other.Call(Q(Op::kGet, {"k"})).value), "v");
  std::printf("%zu of %zu pipelined requests answered in %.2f s\n", answered, frames, seconds);
}

// Parked requests' copies are bounded over every connection (review F7): each peer may park a
// wait on many long keys, and without a bound only the connection bound held them. Here the
// bound is 64 KiB; a wait on ten 4,000-byte keys holds over 40,000 bytes, so the second such
// wait passes the bound: that peer gets an error and loses its connection, the first stays
// parked and is released as before, and small requests still park.
TEST(StoreServerTest, ParkedRequestsBytesAreBoundedOverEveryConnection) {
  auto state = std::make_shared<StoreState>();
  ServerLimits limits;
  limits.max_parked_bytes = 64 << 10;
  auto server = Serve(limits, state);
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back(std::string(4000, static_cast<char>('a' + i)));
  Request big = Q(Op::kWait, keys);
  big.wait_ms = 20000;
  Peer first(server->port()), second(server->port()), small(server->port());
  auto parked = [&](uint64_t n) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (state->Stats().requests[static_cast<size_t>(Op::kWait)] < n && Clock::now() < deadline) {
      std::this_thread::yield();
    }
  };
  first.Send(EncodeRequest(big));
  parked(1);
  second.Send(EncodeRequest(big));
  const Reply refused = second.Read();
  EXPECT_EQ(refused.code, Code::kError);
  EXPECT_NE(S(refused.value).find("parked"), std::string::npos) << S(refused.value);
  EXPECT_TRUE(second.ClosedWithin(milliseconds(5000)));
  EXPECT_GE(server->refused(), 1);
  Request few = Q(Op::kWait, {"few"});
  few.wait_ms = 20000;
  small.Send(EncodeRequest(few));
  parked(3);
  for (const auto& k : keys) ASSERT_TRUE(state->Set(k, B("1")).ok());
  EXPECT_EQ(first.Read().code, Code::kOk);
  ASSERT_TRUE(state->Set("few", B("1")).ok());
  EXPECT_EQ(small.Read().code, Code::kOk);
  // Released, the first's bytes are free again: the same wait parks once more.
  Request again = Q(Op::kWait, {std::string(4000, 'z')});
  again.wait_ms = 20000;
  first.Send(EncodeRequest(again));
  ASSERT_TRUE(state->Set(std::string(4000, 'z'), B("1")).ok());
  EXPECT_EQ(first.Read().code, Code::kOk);
}

TEST(StoreServerTest, PartialRequestsOverEveryConnectionAreBounded) {
  ServerLimits limits;
  limits.max_buffered_bytes = 1u << 20;
  auto server = Serve(limits);
  const std::string first = EncodeRequest(Q(Op::kSet, {"a"}, Bytes(700u << 10, 1)));
  const std::string second = EncodeRequest(Q(Op::kSet, {"b"}, Bytes(700u << 10, 2)));
  Peer a(server->port());
  Peer b(server->port());
  a.Send(first.substr(0, 600u << 10));
  b.Send(second.substr(0, 600u << 10));
  // Whichever the server read last passed the bound.
  const bool a_closed = a.ClosedWithin(milliseconds(2000));
  const bool b_closed = b.ClosedWithin(milliseconds(a_closed ? 500 : 5000));
  ASSERT_NE(a_closed, b_closed) << "exactly one is closed";
  Peer& kept = a_closed ? b : a;
  kept.Send((a_closed ? second : first).substr(600u << 10));
  EXPECT_EQ(kept.Read().code, Code::kOk);
  EXPECT_EQ(server->state().Get(a_closed ? "b" : "a")->size(), 700u << 10);
}

}  // namespace
}  // namespace ddp::store
