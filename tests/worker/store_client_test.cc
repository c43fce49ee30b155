// ConnectStore against a real c10d TCPStore server and against raw sockets that misbehave: every
// query agrees with c10d's own client on the same server, a timeout is an exception in the
// caller's thread, and a store that dies (closed, reset, or answering nonsense) costs the client
// an exception and nothing else: no crash, no spinning thread.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "worker/comm/store_client.h"

namespace ddp::worker {
namespace {

using std::chrono::milliseconds;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string Str(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

c10::intrusive_ptr<c10d::TCPStore> Server() {
  c10d::TCPStoreOptions opts;
  opts.port = 0;  // any free port
  opts.isServer = true;
  opts.waitWorkers = false;
  opts.timeout = std::chrono::seconds(10);
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
}

// A listening socket on a free port of 127.0.0.1; its port in *port.
int Listen(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(::listen(fd, 4), 0);
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

TEST(StoreClientTest, EveryQueryAgreesWithC10dsOwnClientOnTheSameServer) {
  auto server = Server();
  auto client = ConnectStore("127.0.0.1", server->getPort(), milliseconds(5000));
  client->set("a", Bytes("one"));
  EXPECT_EQ(Str(server->get("a")), "one");  // the same key on the wire (c10d's "/" prefix)
  server->set("b", Bytes("two"));
  EXPECT_EQ(Str(client->get("b")), "two");
  EXPECT_EQ(client->add("n", 3), 3);
  EXPECT_EQ(server->add("n", 4), 7);
  EXPECT_EQ(client->add("n", -2), 5);
  EXPECT_TRUE(client->check({"a", "b"}));
  EXPECT_FALSE(client->check({"a", "missing"}));
  EXPECT_EQ(Str(client->compareSet("a", Bytes("one"), Bytes("uno"))), "uno");
  EXPECT_EQ(Str(client->compareSet("a", Bytes("one"), Bytes("eins"))), "uno");  // no match
  EXPECT_EQ(Str(server->get("a")), "uno");
  EXPECT_TRUE(client->deleteKey("b"));
  EXPECT_FALSE(client->deleteKey("b"));
  EXPECT_FALSE(server->check({"b"}));
  // Keys a, n, plus c10d's own bookkeeping if any: the server's count, read both ways, agrees.
  EXPECT_EQ(client->getNumKeys(), server->getNumKeys());
  std::thread later([&] {
    // The stimulus: the key appears after the wait began (a wait that did not block would
    // still pass, but one that returned early without the key fails the get below).
    std::this_thread::sleep_for(milliseconds(100));
    server->set("late", Bytes("x"));
  });
  client->wait({"late"}, milliseconds(5000));  // returns once another client set the key
  later.join();
  EXPECT_EQ(Str(client->get("late")), "x");
  const std::string big(1 << 20, 'z');
  client->set("big", Bytes(big));
  EXPECT_EQ(Str(server->get("big")), big);
}

TEST(StoreClientTest, AWaitPastItsTimeoutThrowsInTheCallersThreadAndClosesTheConnection) {
  auto server = Server();
  auto client = ConnectStore("127.0.0.1", server->getPort(), milliseconds(5000));
  const auto start = std::chrono::steady_clock::now();
  try {
    client->wait({"never"}, milliseconds(300));
    FAIL() << "a wait for a key nobody sets returned";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(3000));
  // The server's late answer to that wait must never be read as another query's reply.
  if (StoreClientIsOwn()) {
    EXPECT_THROW(client->check({"never"}), std::exception);
  }
}

TEST(StoreClientTest, NoServerIsAnErrorNamingTheAddressAfterTheTimeout) {
  int port = 0;
  ::close(Listen(&port));  // a port nobody listens on
  const auto start = std::chrono::steady_clock::now();
  try {
    ConnectStore("127.0.0.1", port, milliseconds(400));
    FAIL() << "connected to a closed port";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(300));
}

// The store's process killed: the next query throws; no thread of the client spins on the
// closed socket meanwhile (c10d 1.13's callback thread burns a core until the store object goes).
TEST(StoreClientTest, AKilledServerCostsAnExceptionAndNoSpinningThread) {
  if (!StoreClientIsOwn()) GTEST_SKIP() << "LibTorch 2.x: c10d's client is used as is";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    auto server = Server();
    const int port = server->getPort();
    (void)!::write(ready[1], &port, sizeof(port));
    ::pause();
    ::_exit(0);
  }
  int port = 0;
  ASSERT_EQ(::read(ready[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  auto client = ConnectStore("127.0.0.1", port, milliseconds(5000));
  client->set("k", Bytes("v"));
  EXPECT_EQ(Str(client->get("k")), "v");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const double cpu0 = CpuSeconds();
  std::this_thread::sleep_for(milliseconds(500));  // the window the CPU time is measured over
  EXPECT_LT(CpuSeconds() - cpu0, 0.1) << "something spun while the store was gone";
  EXPECT_THROW(client->get("k"), std::exception);
  EXPECT_THROW(client->set("k", Bytes("w")), std::exception);  // closed after the error
  ::close(ready[0]);
  ::close(ready[1]);
}

// A peer that resets the connection, or answers with a length no store value has: an exception
// naming what happened, before anything is allocated.
TEST(StoreClientTest, AResetOrAnAbsurdReplyIsAnException) {
  if (!StoreClientIsOwn()) GTEST_SKIP() << "LibTorch 2.x: c10d's client is used as is";
  int port = 0;
  const int lfd = Listen(&port);
  std::thread peer([&] {
    for (int i = 0; i < 2; ++i) {
      const int c = ::accept(lfd, nullptr, nullptr);
      char buf[256];
      (void)!::recv(c, buf, sizeof(buf), 0);  // the first query
      if (i == 0) {
        linger l{1, 0};  // close with a reset
        ::setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      } else {
        const uint64_t huge = 1ull << 40;
        (void)!::send(c, &huge, sizeof(huge), MSG_NOSIGNAL);  // read before the close's EOF
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
    FAIL() << "a 1 TiB reply was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("1099511627776 bytes"), std::string::npos) << e.what();
  }
  peer.join();
  ::close(lfd);
}

}  // namespace
}  // namespace ddp::worker
