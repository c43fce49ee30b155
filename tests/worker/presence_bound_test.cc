// The presence table and its connections are bounded: anything that reaches the port may
// connect, so new identities cannot grow the authority's memory without end.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "worker/comm/deadline.h"
#include "worker/group/presence.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;
using Client = std::unique_ptr<PresenceClient>;

std::set<std::string> Names(const PresenceServer& s) {
  std::set<std::string> out;
  for (const auto& [name, seen] : s.Snapshot()) out.insert(name);
  return out;
}

bool IsOpen(const PresenceServer& s, const std::string& name) {
  auto snap = s.Snapshot();
  auto it = snap.find(name);
  return it != snap.end() && it->second.open;
}

bool IsClosed(const PresenceServer& s, const std::string& name) {
  auto snap = s.Snapshot();
  auto it = snap.find(name);
  return it != snap.end() && !it->second.open;
}

Client Join(const PresenceServer& s, const std::string& name) {
  auto c = PresenceClient::Connect("127.0.0.1", s.port(), name, std::chrono::milliseconds(20));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

bool Until(const std::function<bool()>& cond) {
  return PollUntil(Clock::now() + std::chrono::seconds(10), std::chrono::milliseconds(10), cond) ==
         PollOutcome::kDone;
}

// A plain TCP connection that sends nothing (-1 when it cannot connect).
int SilentConnection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True once the server closed `fd` (EOF) within `within`.
bool ClosedByServer(int fd, std::chrono::seconds within) {
  pollfd p{fd, POLLIN, 0};
  char c;
  return poll(&p, 1, static_cast<int>(within.count() * 1000)) > 0 && recv(fd, &c, 1, 0) == 0;
}

TEST(PresenceBoundTest, OldestClosedIdentityIsEvictedAndANewOneBeyondOpenOnesRefused) {
  auto server = PresenceServer::Start(0, /*capacity=*/3);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const PresenceServer& s = **server;
  Client a = Join(s, "a"), b = Join(s, "b"), c = Join(s, "c");
  ASSERT_TRUE(Until([&] { return IsOpen(s, "a") && IsOpen(s, "b") && IsOpen(s, "c"); }));

  // Full of open identities: a fourth is refused, its connection closed, nothing evicted.
  Client d = Join(s, "d");
  ASSERT_TRUE(Until([&] { return d->lost(); }));
  EXPECT_EQ(Names(s), (std::set<std::string>{"a", "b", "c"}));
  EXPECT_GE(s.refused(), 1);

  // b ends first, then a: b has been closed longest, so it goes first.
  b.reset();
  ASSERT_TRUE(Until([&] { return IsClosed(s, "b"); }));
  a.reset();
  ASSERT_TRUE(Until([&] { return IsClosed(s, "a"); }));
  d = Join(s, "d");
  ASSERT_TRUE(Until([&] { return IsOpen(s, "d"); }));
  EXPECT_EQ(Names(s), (std::set<std::string>{"a", "c", "d"}));
  Client e = Join(s, "e");
  ASSERT_TRUE(Until([&] { return IsOpen(s, "e"); }));
  EXPECT_EQ(Names(s), (std::set<std::string>{"c", "d", "e"}));
  EXPECT_FALSE(d->lost());

  // A known identity reconnecting takes no room: c again, beside its first connection.
  Client c2 = Join(s, "c");
  const int64_t refused_before = s.refused();
  Client f = Join(s, "f");
  ASSERT_TRUE(Until([&] { return f->lost(); }));
  EXPECT_EQ(s.refused(), refused_before + 1);
  EXPECT_FALSE(c2->lost());
  EXPECT_EQ(Names(s), (std::set<std::string>{"c", "d", "e"}));
}

TEST(PresenceBoundTest, ConnectionsBeyondTheBoundAndSilentOnesAreClosed) {
  auto server = PresenceServer::Start(0, /*capacity=*/2);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const PresenceServer& s = **server;
  Client a = Join(s, "a");
  ASSERT_TRUE(Until([&] { return IsOpen(s, "a"); }));
  // Four connections (twice the capacity) are the bound: a fifth is closed at once, unheard.
  const auto t0 = Clock::now();
  const int silent1 = SilentConnection(s.port()), silent2 = SilentConnection(s.port()),
            silent3 = SilentConnection(s.port());
  ASSERT_TRUE(silent1 >= 0 && silent2 >= 0 && silent3 >= 0);
  const int extra = SilentConnection(s.port());
  ASSERT_GE(extra, 0);
  EXPECT_TRUE(ClosedByServer(extra, std::chrono::seconds(3)));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  // Connections that never name themselves are closed after the naming deadline (5 s); the
  // named one is untouched.
  for (int fd : {silent1, silent2, silent3}) {
    EXPECT_TRUE(ClosedByServer(fd, std::chrono::seconds(9)));
    EXPECT_GE(Clock::now() - t0, std::chrono::seconds(5));
  }
  for (int fd : {silent1, silent2, silent3, extra}) close(fd);
  EXPECT_GE(s.refused(), 4);
  EXPECT_FALSE(a->lost());
  EXPECT_TRUE(IsOpen(s, "a"));
}

// A reconnect overlaps its old connection: the old one closing (a late FIN) after the new one
// named itself must not read as the pod's end (the authority would fence a live pod).
TEST(PresenceBoundTest, AnOldConnectionClosingAfterItsIdentityReconnectedLeavesItOpen) {
  auto server = PresenceServer::Start(0, 8);
  ASSERT_TRUE(server.ok());
  Client old_one = Join(**server, "pod/uid");
  ASSERT_TRUE(Until([&] { return IsOpen(**server, "pod/uid"); }));
  Client new_one = Join(**server, "pod/uid");
  ASSERT_TRUE(Until([&] {
    auto snap = (*server)->Snapshot();
    return snap.count("pod/uid") && snap.at("pod/uid").connections == 2;
  }));
  old_one.reset();  // the old connection closes after the new one is open
  ASSERT_TRUE(Until([&] { return (*server)->Snapshot().at("pod/uid").connections == 1; }));
  EXPECT_TRUE(IsOpen(**server, "pod/uid"));
  new_one.reset();
  EXPECT_TRUE(Until([&] { return IsClosed(**server, "pod/uid"); }));
}

}  // namespace
}  // namespace ddp::worker::group
