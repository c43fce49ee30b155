// A pod's registration with the group's store (worker/group/pod_client.h), on a real store and
// presence listener: the dead that come back never displace the living. A process whose pod was
// replaced while it was away (a frozen node that thawed, a partition that healed) is told so and
// ends; a new pod whose name an older process still holds waits until the group declared that one
// lost; a pod the group fenced never registers again.
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <thread>

#include "worker/comm/local_store.h"
#include "worker/comm/rendezvous.h"
#include "worker/group/budget.h"
#include "worker/group/keys.h"
#include "worker/group/pod_client.h"
#include "worker/group/presence.h"
#include "worker/group/store_read.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What the rendezvous pod sets up before any pod registers (launch/rendezvous_pod.cc), on `port`.
struct FakeRendezvous {
  explicit FakeRendezvous(int port, store::ServerLimits limits = {}) {
    auto h = HostStore(port, std::chrono::seconds(5), limits);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    hosted = std::move(*h);
    store = c10::make_intrusive<c10d::PrefixStore>(RoundPrefix(0), hosted.local);
    auto p = PresenceServer::Start(0);
    EXPECT_TRUE(p.ok());
    presence = std::move(*p);
    EXPECT_TRUE(InitBudget(*store, 3).ok());
    store->set(kWorldKey, Bytes("2"));
    store->set(kEpochKey, Bytes(hosted.server->id()));
    store->set(kPresenceKey, Bytes(std::to_string(presence->port())));
  }
  int port() const { return hosted.server->port(); }
  std::string holder(const std::string& name) { return ValueOr(*store, PodKey(name, "id")); }

  HostedStore hosted;
  c10::intrusive_ptr<c10d::Store> store;
  std::unique_ptr<PresenceServer> presence;
};

GroupSettings Pod(const std::string& name, const std::string& uid, int port) {
  GroupSettings s;
  s.store_addr = "127.0.0.1";
  s.rendezvous.master_port = port;
  s.nodes = 2;
  s.pod_name = name;
  s.pod_uid = uid;
  s.home_node = 1;
  s.liveness = milliseconds(2000);
  s.beat = milliseconds(100);
  return s;
}

// A registration that fails after it reached the store must not have opened its presence
// connection: one that named itself and then closed reads to the authority as a process that
// ended, and it declares the live pod lost (seen on the kit: a loaded node's reconnect to a new
// store missed its 500 ms deadline in the pod's watch, which came after the presence connection,
// and the pod was fenced and replaced). Here the pod's watch cannot get a store connection.
TEST(RegisterTest, ARegistrationThatFailsNeverOpenedItsPresenceConnection) {
  store::ServerLimits one;
  one.max_connections = 1;  // the registration's connection; the watch's is refused
  FakeRendezvous r(0, one);
  auto c = PodClient::Connect(Pod("w1", "u1", r.port()), "", Clock::now() + std::chrono::seconds(2));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(r.presence->Snapshot().count("w1/u1"), 0u)
      << "the presence listener saw the pod come and go: " << c.status().ToString();
}

// The review's case: the store and worker w1 lost together; w1's replacement registers with the
// new store; then the old w1 process comes back and registers again. It must not take the name:
// it learns that it was replaced, and the replacement keeps its place.
TEST(RegisterTest, AProcessBackAfterItsReplacementRegisteredIsToldItWasReplaced) {
  std::unique_ptr<FakeRendezvous> first = std::make_unique<FakeRendezvous>(0);
  const int port = first->port();
  auto old_w1 = PodClient::Connect(Pod("w1", "u-old", port), "", Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(old_w1.ok()) << old_w1.status().ToString();
  EXPECT_EQ(first->holder("w1"), "w1/u-old");
  first.reset();  // the rendezvous pod lost; a new one on the same address
  FakeRendezvous second(port);
  auto new_w1 = PodClient::Connect(Pod("w1", "u-new", port), "", Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(new_w1.ok()) << new_w1.status().ToString();
  const Status back = (*old_w1)->Reconnect(1, Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(back.code(), StatusCode::kFailedPrecondition) << back.ToString();
  EXPECT_NE(back.message().find("replaced"), std::string::npos) << back.ToString();
  EXPECT_EQ(second.holder("w1"), "w1/u-new");
}

// The other order: the old process is back first. The new pod waits for the name (it never
// takes it from a process the group has not declared lost), and takes it once the group did.
TEST(RegisterTest, ANewPodWaitsForAnOlderProcessUntilTheGroupFencedIt) {
  FakeRendezvous r(0);
  auto old_w1 = PodClient::Connect(Pod("w1", "u-old", r.port()), "", Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(old_w1.ok());
  const auto t0 = Clock::now();
  auto early = PodClient::Connect(Pod("w1", "u-new", r.port()), "", Clock::now() + milliseconds(800));
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().code(), StatusCode::kDeadlineExceeded) << early.status().ToString();
  EXPECT_NE(early.status().message().find("held by w1/u-old"), std::string::npos)
      << early.status().ToString();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(r.holder("w1"), "w1/u-old");
  r.store->set(FencedKey("w1/u-old"), Bytes("silent for 2.1s"));  // the authority's word
  r.store->set(VerdictKey("w1/u-old"), Bytes(kVerdictFenced));
  auto later = PodClient::Connect(Pod("w1", "u-new", r.port()), "", Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(r.holder("w1"), "w1/u-new");
  // And the old one, polling, reads its own fence: it ends as Fenced (never charged).
  const PodPoll p = (*old_w1)->PollNow(1, {});
  EXPECT_TRUE(p.fenced);
  EXPECT_EQ(p.verdict, kVerdictFenced);
}

TEST(RegisterTest, APodTheGroupDeclaredLostNeverRegistersAgain) {
  FakeRendezvous r(0);
  r.store->set(FencedKey("w1/u-old"), Bytes("silent"));
  auto again = PodClient::Connect(Pod("w1", "u-old", r.port()), "", Clock::now() + std::chrono::seconds(5));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition) << again.status().ToString();
  EXPECT_EQ(r.holder("w1"), "");
  // A verdict (departed) says the same.
  r.store->set(VerdictKey("w0/u-0"), Bytes(kVerdictDepart));
  auto departed = PodClient::Connect(Pod("w0", "u-0", r.port()), "", Clock::now() + std::chrono::seconds(5));
  ASSERT_FALSE(departed.ok());
  EXPECT_EQ(departed.status().code(), StatusCode::kFailedPrecondition);
}

// A slow store (a store call timed out) while the rendezvous pod is up: the supervisor opens a
// new store connection and keeps its presence connection open whatever happens, so the
// authority never reads a healthy pod as ended.
TEST(RegisterTest, AReconnectToTheSameStoreKeepsThePresenceConnectionOpen) {
  FakeRendezvous r(0);
  auto w0 = PodClient::Connect(Pod("w0", "u-0", r.port()), "", Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(w0.ok());
  const Status again = (*w0)->Reconnect(0, Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_FALSE((*w0)->lost());
  // The presence listener reads the pod's first line on its own thread: wait for it.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && r.presence->Snapshot().count("w0/u-0") == 0) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  const auto seen = r.presence->Snapshot();
  ASSERT_EQ(seen.count("w0/u-0"), 1u);
  EXPECT_TRUE(seen.at("w0/u-0").open);
  EXPECT_EQ(seen.at("w0/u-0").connections, 1) << "a second presence connection was opened";
}

}  // namespace
}  // namespace ddp::worker::group
