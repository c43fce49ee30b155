// The group's adapters on real stores and sockets: the failure budget under concurrent charges,
// a communicator's set-up store that gives up with its generation, and presence connections
// that tell a process's end (at once) from its silence (after the timeout).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <atomic>
#include <thread>

#include "worker/comm/deadline.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/group/budget.h"
#include "worker/group/fenced_store.h"
#include "worker/group/keys.h"
#include "worker/group/presence.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;

c10::intrusive_ptr<c10d::Store> NewStore() { return c10::make_intrusive<c10d::HashStore>(); }

TEST(BudgetTest, ConcurrentChargesSucceedExactlyUpToTheBudget) {
  auto store = NewStore();
  ASSERT_TRUE(InitBudget(*store, 5).ok());
  ASSERT_TRUE(InitBudget(*store, 99).ok());  // a second init changes nothing
  std::atomic<int> charged{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 4; ++i) {
        auto c = ChargeFailure(*store, "");
        ASSERT_TRUE(c.ok());
        (c->outcome == Charge::kCharged ? charged : refused) += 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(charged.load(), 5);
  EXPECT_EQ(refused.load(), 27);
  auto b = ReadBudget(*store);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->recoveries, 5);
  EXPECT_EQ(b->left, 0);
}

TEST(BudgetTest, AKeyedChargeCountsOnceAndARefusalChangesNothing) {
  auto store = NewStore();
  ASSERT_TRUE(InitBudget(*store, 1).ok());
  auto first = ChargeFailure(*store, "uid-7");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->outcome, Charge::kCharged);
  auto again = ChargeFailure(*store, "uid-7");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, Charge::kAlreadyCharged);
  auto over = ChargeFailure(*store, "");
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->outcome, Charge::kRefused);
  EXPECT_EQ(over->recoveries, 1);
  EXPECT_EQ(ReadBudget(*store)->left, 0);
}

TEST(BudgetTest, LoweringTakesTheSmallerAndNeverRaises) {
  auto store = NewStore();
  ASSERT_TRUE(InitBudget(*store, 3).ok());
  ASSERT_TRUE(LowerBudget(*store, 5).ok());
  EXPECT_EQ(ReadBudget(*store)->left, 3);
  ASSERT_TRUE(LowerBudget(*store, 1).ok());  // a pod created after the operator charged two
  EXPECT_EQ(ReadBudget(*store)->left, 1);
  EXPECT_EQ(ChargeFailure(*store, "")->outcome, Charge::kCharged);
  EXPECT_EQ(ChargeFailure(*store, "")->outcome, Charge::kRefused);
}

// A member that never publishes its address: the others' communicator set-up ends when the
// generation moves on, not after the collective timeout.
TEST(FencedStoreTest, ACommunicatorWaitingForAGoneMemberGivesUpWithTheGeneration) {
  auto store = NewStore();
  // The generation moves on after ~30 polls (10 ms apart): the peer is never coming.
  int polls = 0;
  auto fenced = c10::make_intrusive<FencedStore>(
      store, [&]() -> std::string { return ++polls > 30 ? "generation 3 moved on" : ""; });
  const auto t0 = Clock::now();
  auto comm = GlooCommunicator::Create(fenced, 0, 2, std::chrono::seconds(30), {"lo", "", 1});
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("moved on"), std::string::npos) << comm.status().ToString();
  EXPECT_LT(took, 5.0);  // not the 30 s timeout
}

TEST(FencedStoreTest, AReadOfAPresentKeyDoesNotWaitAndATimeoutStillApplies) {
  auto store = NewStore();
  store->set("k", {'v'});
  FencedStore fenced(store, [] { return std::string(); });
  EXPECT_EQ(fenced.get("k"), (std::vector<uint8_t>{'v'}));
  EXPECT_THROW(fenced.wait({"absent"}, std::chrono::milliseconds(50)), std::runtime_error);
}

// A frozen process (SIGSTOP, as a silent node) keeps its socket open: only its bytes stop, and
// the liveness timeout decides. A process that ends has its socket closed by the kernel: seen
// within milliseconds.
TEST(PresenceTest, AFrozenProcessGoesQuietAndAnEndedOneIsSeenAtOnce) {
  auto server = PresenceServer::Start(0);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  const pid_t child = fork();
  if (child == 0) {
    auto c = PresenceClient::Connect("127.0.0.1", port, "pod", std::chrono::milliseconds(20));
    if (!c.ok()) _exit(1);
    while (true) pause();  // until SIGKILL
  }
  auto seen = [&]() {
    auto snap = (*server)->Snapshot();
    auto it = snap.find("pod");
    return it == snap.end() ? std::optional<PresenceServer::Seen>() : it->second;
  };
  ASSERT_EQ(PollUntil(Clock::now() + std::chrono::seconds(10), std::chrono::milliseconds(10),
                      [&] { return seen() && seen()->open; }),
            PollOutcome::kDone);
  kill(child, SIGSTOP);
  // Bytes in flight may still land: wait until the last one is older than a few beats.
  ASSERT_EQ(PollUntil(Clock::now() + std::chrono::seconds(5), std::chrono::milliseconds(20),
                      [&] { return Clock::now() - seen()->last > std::chrono::milliseconds(200); }),
            PollOutcome::kDone);
  const auto frozen_last = seen()->last;
  // What must NOT happen needs time: for 300 ms the connection stays open and silent.
  EXPECT_EQ(PollUntil(Clock::now() + std::chrono::milliseconds(300), std::chrono::milliseconds(20),
                      [&] { return !seen()->open || seen()->last != frozen_last; }),
            PollOutcome::kDeadline);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  const auto killed = Clock::now();
  ASSERT_EQ(PollUntil(killed + std::chrono::seconds(5), std::chrono::milliseconds(5),
                      [&] { return !seen()->open; }),
            PollOutcome::kDone);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - killed).count(), 1.0);
}

TEST(PresenceTest, AClientLearnsThatTheAuthorityWentAway) {
  auto server = PresenceServer::Start(0);
  ASSERT_TRUE(server.ok());
  auto client = PresenceClient::Connect("127.0.0.1", (*server)->port(), "p", std::chrono::milliseconds(50));
  ASSERT_TRUE(client.ok());
  EXPECT_FALSE((*client)->lost());
  server->reset();
  EXPECT_EQ(PollUntil(Clock::now() + std::chrono::seconds(5), std::chrono::milliseconds(10),
                      [&] { return (*client)->lost(); }),
            PollOutcome::kDone);
  EXPECT_FALSE(PresenceClient::Connect("127.0.0.1", 1, "p", std::chrono::milliseconds(50)).ok());
}

}  // namespace
}  // namespace ddp::worker::group
