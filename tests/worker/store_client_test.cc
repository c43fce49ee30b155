// ConnectStore (the client, as a c10d::Store) against the project's own server, against a store
// that freezes, dies or answers nonsense, and against c10d's own TCPStore. The same code runs
// on every LibTorch the project builds against, so nothing here skips by version: every call
// returns or throws within its bound, and a store that dies costs an exception and nothing else.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "worker/comm/local_store.h"
#include "worker/comm/store_client.h"
#include "worker/store/wire.h"

namespace ddp::worker {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string Str(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

// A listening socket on a free port of 127.0.0.1; its port in *port.
int Listen(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Waits until `pid` is stopped (a SIGSTOP reaches every thread of a process, not at once).
bool WaitStopped(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    std::string stat;
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char buf[512] = {};
      stat = std::fgets(buf, sizeof(buf), f) ? buf : "";
      std::fclose(f);
    }
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T') return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return false;
}

// Reads one request frame off `fd` (blocking); false at EOF.
bool ReadFrame(int fd) {
  uint8_t prefix[4];
  if (::recv(fd, prefix, 4, MSG_WAITALL) != 4) return false;
  uint32_t len = 0;
  if (!store::FrameLength(prefix, &len).ok()) return false;
  std::vector<uint8_t> body(len);
  return ::recv(fd, body.data(), len, MSG_WAITALL) == static_cast<ssize_t>(len);
}

// Greets like the real server would, so that the client's constructor succeeds.
void Greet(int fd) {
  ASSERT_TRUE(ReadFrame(fd));
  store::Reply r;
  r.number = store::kVersion;
  r.value = Bytes("fake");
  const std::string frame = store::EncodeReply(r);
  ASSERT_EQ(::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL), static_cast<ssize_t>(frame.size()));
}

TEST(StoreClientTest, EveryQueryIsServedAndTheHostSeesTheSameKeys) {
  auto hosted = HostStore(0, milliseconds(5000));
  ASSERT_TRUE(hosted.ok()) << hosted.status().ToString();
  auto& local = hosted->local;
  auto client = ConnectStore("127.0.0.1", hosted->server->port(), milliseconds(5000));
  EXPECT_EQ(StoreServerId(*client), hosted->server->id());
  client->set("a", Bytes("one"));
  EXPECT_EQ(Str(local->get("a")), "one");
  local->set("b", Bytes("two"));
  EXPECT_EQ(Str(client->get("b")), "two");
  EXPECT_EQ(client->add("n", 3), 3);
  EXPECT_EQ(local->add("n", 4), 7);
  EXPECT_EQ(client->add("n", -2), 5);
  EXPECT_TRUE(client->check({"a", "b"}));
  EXPECT_FALSE(client->check({"a", "missing"}));
  EXPECT_EQ(Str(client->compareSet("a", Bytes("one"), Bytes("uno"))), "uno");
  EXPECT_EQ(Str(client->compareSet("a", Bytes("one"), Bytes("eins"))), "uno");  // no match
  EXPECT_EQ(Str(local->get("a")), "uno");
  EXPECT_TRUE(client->deleteKey("b"));
  EXPECT_FALSE(client->deleteKey("b"));
  EXPECT_FALSE(local->check({"b"}));
  EXPECT_EQ(client->getNumKeys(), 2);  // a, n
  EXPECT_EQ(local->getNumKeys(), 2);
  // A wait released by the host: the stimulus starts once the server counted the wait.
  std::thread later([&] {
    auto& st = hosted->server->state();
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (st.Stats().requests[static_cast<size_t>(store::Op::kWait)] == 0 &&
           Clock::now() < deadline) {
      std::this_thread::yield();
    }
    local->set("late", Bytes("x"));
  });
  client->wait({"late"}, milliseconds(5000));
  later.join();
  EXPECT_EQ(Str(client->get("late")), "x");
  const std::string big(1 << 20, 'z');
  client->set("big", Bytes(big));
  EXPECT_EQ(Str(local->get("big")), big);
  auto copy = ConnectStore("127.0.0.1", hosted->server->port(), milliseconds(5000));
  EXPECT_EQ(Str(copy->get("big")), big);
}

// Unlike c10d's client, a wait that times out leaves the connection usable: the server says so.
TEST(StoreClientTest, AWaitPastItsTimeoutThrowsWithinItsBoundAndTheConnectionGoesOn) {
  auto hosted = HostStore(0, milliseconds(5000));
  ASSERT_TRUE(hosted.ok());
  auto client = ConnectStore("127.0.0.1", hosted->server->port(), milliseconds(5000));
  for (auto call : std::vector<std::function<void()>>{
           [&] { client->wait({"never"}, milliseconds(300)); },
           [&] {
             client->setTimeout(milliseconds(300));
             client->get("never");
           }}) {
    const auto start = Clock::now();
    try {
      call();
      FAIL() << "a wait for a key nobody sets returned";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    }
    const auto took = Clock::now() - start;
    EXPECT_GE(took, milliseconds(300));
    // The server answers at 300 ms; the rest is slack for a loaded machine (a store that never
    // answered would hold the call for the store's 5 s timeout, or for good).
    EXPECT_LT(took, milliseconds(300) + kReplyGrace + milliseconds(1500));
    EXPECT_FALSE(client->check({"never"}));
  }
}

TEST(StoreClientTest, NoServerIsAnErrorNamingTheAddressAfterTheTimeout) {
  int port = 0;
  ::close(Listen(&port));  // a port nobody listens on
  const auto start = Clock::now();
  try {
    ConnectStore("127.0.0.1", port, milliseconds(400));
    FAIL() << "connected to a closed port";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
  const auto took = Clock::now() - start;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(2000));
}

// A store that accepts connections and never answers (a frozen process whose kernel still
// accepts): the connect gives up within its own bound; after a greeting, every call within the
// store's timeout, or a wait's own plus the grace.
TEST(StoreClientTest, AStoreThatStopsAnsweringCostsEveryCallItsBoundOnly) {
  int port = 0;
  const int lfd = Listen(&port);
  {
    const auto start = Clock::now();
    EXPECT_THROW(ConnectStore("127.0.0.1", port, milliseconds(400)), std::exception);
    EXPECT_LT(Clock::now() - start, milliseconds(2000));
    const int c = ::accept(lfd, nullptr, nullptr);  // the one that never got a greeting
    ::close(c);
  }
  std::vector<int> open;
  using Call = std::function<void(c10d::Store&)>;
  const std::vector<std::pair<const char*, Call>> calls = {
      {"set", [](c10d::Store& s) { s.set("k", Bytes("v")); }},
      {"get", [](c10d::Store& s) { s.get("k"); }},
      {"add", [](c10d::Store& s) { s.add("k", 1); }},
      {"check", [](c10d::Store& s) { s.check({"k"}); }},
      {"compareSet", [](c10d::Store& s) { s.compareSet("k", {}, Bytes("v")); }},
      {"deleteKey", [](c10d::Store& s) { s.deleteKey("k"); }},
      {"getNumKeys", [](c10d::Store& s) { s.getNumKeys(); }},
      {"wait", [](c10d::Store& s) { s.wait({"k"}, milliseconds(200)); }},
  };
  for (const auto& [name, call] : calls) {
    std::thread greeter([&] {
      const int c = ::accept(lfd, nullptr, nullptr);
      Greet(c);
      open.push_back(c);  // kept open, never answered again
    });
    // Connected with a generous bound (the greeter is a thread that a loaded machine may run
    // late), then each call's bound is 300 ms: what this test is about.
    c10::intrusive_ptr<c10d::Store> client;
    try {
      client = ConnectStore("127.0.0.1", port, milliseconds(20000));
    } catch (const std::exception& e) {
      greeter.join();
      FAIL() << name << ": connect: " << e.what();
    }
    greeter.join();
    client->setTimeout(milliseconds(300));
    const auto start = Clock::now();
    EXPECT_THROW(call(*client), std::exception) << name;
    const auto took = Clock::now() - start;
    EXPECT_GE(took, milliseconds(200)) << name;
    EXPECT_LT(took, milliseconds(300) + kReplyGrace + milliseconds(1500)) << name;
    EXPECT_THROW(client->check({"k"}), std::exception) << name << ": closed after the error";
  }
  for (int c : open) ::close(c);
  ::close(lfd);
}

// The store's process frozen (SIGSTOP) and then killed: calls fail within their bounds; no thread
// of the client spins on the closed socket meanwhile.
TEST(StoreClientTest, AFrozenThenKilledStoreCostsExceptionsAndNoSpinningThread) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    auto hosted = HostStore(0, milliseconds(5000));
    const int port = hosted.ok() ? hosted->server->port() : -1;
    (void)!::write(ready[1], &port, sizeof(port));
    ::pause();
    ::_exit(0);
  }
  int port = 0;
  ASSERT_EQ(::read(ready[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  ASSERT_GT(port, 0);
  auto client = ConnectStore("127.0.0.1", port, milliseconds(500));
  client->set("k", Bytes("v"));
  EXPECT_EQ(Str(client->get("k")), "v");
  ::kill(child, SIGSTOP);
  ASSERT_TRUE(WaitStopped(child));
  auto start = Clock::now();
  EXPECT_THROW(client->add("n", 1), std::exception);
  EXPECT_LT(Clock::now() - start, milliseconds(2000));
  start = Clock::now();
  EXPECT_THROW(ConnectStore("127.0.0.1", port, milliseconds(500)), std::exception);
  EXPECT_LT(Clock::now() - start, milliseconds(2500));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const double cpu0 = CpuSeconds();
  std::this_thread::sleep_for(milliseconds(500));  // the window the CPU time is measured over
  EXPECT_LT(CpuSeconds() - cpu0, 0.1) << "something spun while the store was gone";
  EXPECT_THROW(client->get("k"), std::exception);
  ::close(ready[0]);
  ::close(ready[1]);
}

// A peer that resets the connection, or answers with a length no reply has: an exception naming
// what happened, before anything is allocated.
TEST(StoreClientTest, AResetOrAnAbsurdReplyIsAnException) {
  int port = 0;
  const int lfd = Listen(&port);
  std::thread peer([&] {
    for (int i = 0; i < 2; ++i) {
      const int c = ::accept(lfd, nullptr, nullptr);
      Greet(c);
      ReadFrame(c);  // the first query
      if (i == 0) {
        linger l{1, 0};  // close with a reset
        ::setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      } else {
        const uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f};
        (void)!::send(c, huge, sizeof(huge), MSG_NOSIGNAL);  // read before the close's EOF
      }
      ::close(c);
    }
  });
  auto reset = ConnectStore("127.0.0.1", port, milliseconds(2000));
  try {
    reset->getNumKeys();
    FAIL() << "a reset connection answered";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("reset"), std::string::npos) << e.what();
  }
  auto absurd = ConnectStore("127.0.0.1", port, milliseconds(2000));
  try {
    absurd->compareSet("k", {}, Bytes("v"));
    FAIL() << "a 2 GiB reply was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("2147483647 bytes"), std::string::npos) << e.what();
  }
  peer.join();
  ::close(lfd);
}

// c10d's own TCPStore (whichever LibTorch this is) is not a store this client joins: a clear
// error within the bound, never a query misread.
TEST(StoreClientTest, C10dsTcpStoreIsRefusedWithAClearError) {
  c10d::TCPStoreOptions opts;
  opts.port = 0;
  opts.isServer = true;
  opts.waitWorkers = false;
  opts.timeout = std::chrono::seconds(10);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  // From 2.4 c10d asks for its libuv server by default; Debian's 2.6 is built without libuv
  // and refuses that. The classic server is the one every build has.
  opts.useLibUV = false;
#endif
  auto c10d_server = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
  const auto start = Clock::now();
  try {
    ConnectStore("127.0.0.1", c10d_server->getPort(), milliseconds(1000));
    FAIL() << "joined c10d's TCPStore";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("ddp store"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, milliseconds(3000));
  c10d_server->set("still", Bytes("serving"));  // and c10d's server is none the worse
  EXPECT_EQ(Str(c10d_server->get("still")), "serving");
}

}  // namespace
}  // namespace ddp::worker
