// The group's adapters on real stores and sockets: the failure budget under concurrent charges,
// a communicator's set-up store that gives up with its generation, presence connections that
// tell a process's end (at once) from its silence (after the timeout), and what the authority
// reports of the pods it fenced.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <atomic>
#include <thread>

#include "worker/comm/deadline.h"
#include "worker/comm/gloo_communicator.h"
#include "worker/group/authority_loop.h"
#include "worker/group/budget.h"
#include "worker/group/fenced_store.h"
#include "worker/group/keys.h"
#include "worker/group/pod_client.h"
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
  store->set("k", std::vector<uint8_t>{'v'});
  FencedStore fenced(store, [] { return std::string(); });
  EXPECT_EQ(fenced.get("k"), (std::vector<uint8_t>{'v'}));
  EXPECT_THROW(fenced.wait({"absent"}, std::chrono::milliseconds(50)), std::runtime_error);
}

// clone() (LibTorch 2.x calls it; pure virtual in its Store): the same keys and the same
// cancellation, with the timeout carried over.
TEST(FencedStoreTest, AClonePollsTheSameKeysAndIsCancelledAlike) {
  auto store = NewStore();
  std::string why;
  auto fenced = c10::make_intrusive<FencedStore>(store, [&] { return why; });
  fenced->setTimeout(std::chrono::milliseconds(2000));
  c10::intrusive_ptr<c10d::Store> copy = fenced->clone();
  EXPECT_EQ(copy->getTimeout(), std::chrono::milliseconds(2000));
  copy->set("from-clone", std::vector<uint8_t>{'c'});
  EXPECT_EQ(fenced->get("from-clone"), (std::vector<uint8_t>{'c'}));
  why = "generation 4 moved on";
  try {
    copy->get("never");
    ADD_FAILURE() << "a cancelled clone still waited";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "generation 4 moved on");
  }
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

// Registers pod `name` (as its supervisor does) holding node rank `node`.
void Register(c10d::Store& s, const std::string& name, int node) {
  s.set(PodKey(name, "id"), Bytes(name + "/uid-" + name));
  s.set(PodKey(name, "home"), Bytes(std::to_string(node)));
  s.set(PodAtKey(s.add(kPodsKey, 1) - 1), Bytes(name));
  s.add(kRegistrationsKey, 1);
}

// Both pods are fenced, but the operator is told only of the silent one (it may still run: force
// it away); the one whose process ended reports its own exit, which says failure or disruption.
// Otherwise a crash seen by the group before its pod's status would count as a disruption.
// A frozen rendezvous pod still reached through a stale route: the kernel accepts the
// connection, nobody answers. A reconnecting pod gives up within kFirstReadBound (and tries
// again), not after the store's timeout.
TEST(OpenGroupStoreTest, AStoreThatAcceptsAndNeverAnswersIsGivenUpWithinTheFirstReadBound) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 8), 0);  // never accepted: the handshake completes, nothing answers
  socklen_t len = sizeof(a);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  GroupSettings settings;
  settings.store_addr = "127.0.0.1";
  settings.rendezvous.master_port = ntohs(a.sin_port);
  const auto t0 = Clock::now();
  auto s = OpenGroupStore(settings, std::chrono::seconds(10));
  const auto took = Clock::now() - t0;
  EXPECT_FALSE(s.ok());
  EXPECT_GE(took, kFirstReadBound - std::chrono::milliseconds(50));
  EXPECT_LT(took, std::chrono::seconds(5)) << "waited for the store's timeout";
  ::close(fd);
}

TEST(AuthorityLoopTest, ReportsASilentPodAsFencedButNotOneWhoseProcessEnded) {
  auto store = NewStore();
  ASSERT_TRUE(InitBudget(*store, 3).ok());
  auto server = PresenceServer::Start(0);
  ASSERT_TRUE(server.ok());
  Register(*store, "ended", 0);
  Register(*store, "silent", 1);
  auto ended = PresenceClient::Connect("127.0.0.1", (*server)->port(), "ended/uid-ended",
                                       std::chrono::milliseconds(50));
  auto silent = PresenceClient::Connect("127.0.0.1", (*server)->port(), "silent/uid-silent",
                                        std::chrono::hours(1));  // one byte, then nothing
  ASSERT_TRUE(ended.ok() && silent.ok());
  AuthoritySettings as;
  as.nodes = 2;
  as.liveness_seconds = 1;
  AuthorityLoop loop(store, server->get(), as, 2, std::chrono::milliseconds(20));
  // It held its node rank before it ended (on a busy machine the loop's first tick may come after
  // the reset below: then it never held one).
  ASSERT_EQ(PollUntil(Clock::now() + std::chrono::seconds(10), std::chrono::milliseconds(5),
                      [&] { return store->check({NodeKey(0)}); }),
            PollOutcome::kDone);
  ended->reset();  // its process ended: the kernel closes the connection
  // The report is published at the end of the tick that wrote the fence keys: wait for it, not
  // for the keys (read between the two, the report is a tick old).
  ASSERT_EQ(PollUntil(Clock::now() + std::chrono::seconds(10), std::chrono::milliseconds(20),
                      [&] { return !loop.Report().fenced.empty(); }),
            PollOutcome::kDone);
  EXPECT_TRUE(store->check({FencedKey("silent/uid-silent")}));
  EXPECT_TRUE(store->check({FencedKey("ended/uid-ended")}));  // it can never rejoin either
  const GroupReport r = loop.Report();
  EXPECT_EQ(r.fenced, (std::vector<std::pair<std::string, std::string>>{{"silent", "uid-silent"}}));
  EXPECT_TRUE(r.members.empty());
  // The ended one is reported as such, with the node rank it held: what the operator counts by.
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].pod, "ended");
  EXPECT_EQ(r.ended[0].uid, "uid-ended");
  EXPECT_EQ(r.ended[0].node_rank, 0);
}

// A trainer's liveness clock starts at its first beat: one that takes longer than the timeout
// to start (loading LibTorch, creating a CUDA context, a busy machine) is not stalled; once it
// beat, silence past the timeout is.
TEST(AuthorityLoopTest, ATrainerIsSilentOnlyAfterItsFirstBeat) {
  auto store = NewStore();
  ASSERT_TRUE(InitBudget(*store, 3).ok());
  auto server = PresenceServer::Start(0);
  ASSERT_TRUE(server.ok());
  store->set(TrainerKey(0, "id"), Bytes("pod/uid-pod/t1"));
  Register(*store, "pod", 0);
  auto pod = PresenceClient::Connect("127.0.0.1", (*server)->port(), "pod/uid-pod",
                                     std::chrono::milliseconds(50));
  ASSERT_TRUE(pod.ok());
  AuthoritySettings as;
  as.nodes = 1;
  as.liveness_seconds = 0.5;
  AuthorityLoop loop(store, server->get(), as, 1, std::chrono::milliseconds(20));
  // Four liveness timeouts without a beat: still starting, not stalled.
  EXPECT_EQ(PollUntil(Clock::now() + std::chrono::seconds(2), std::chrono::milliseconds(20),
                      [&] { return store->check({StallKey(0)}); }),
            PollOutcome::kDeadline);
  store->add(TrainerKey(0, "hb"), 1);
  const auto beat = Clock::now();
  ASSERT_EQ(PollUntil(beat + std::chrono::seconds(10), std::chrono::milliseconds(20),
                      [&] { return store->check({StallKey(0)}); }),
            PollOutcome::kDone);
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - beat).count(), 0.5);
  EXPECT_EQ(Text(store->get(StallKey(0))), "pod/uid-pod/t1");
}

// A store that replaced a lost rendezvous pod: the group trains on in the generation it formed
// in the old store, so nobody arrives here; that is no formation to time out. Once a member
// arrives (a failure moved the group on), the rendezvous timeout runs from that arrival.
TEST(AuthorityLoopTest, TheRendezvousClockRunsFromTheFirstArrivalOnly) {
  auto store = NewStore();
  ASSERT_TRUE(InitBudget(*store, 3).ok());
  auto server = PresenceServer::Start(0);
  ASSERT_TRUE(server.ok());
  Register(*store, "w0", 0);
  auto w0 = PresenceClient::Connect("127.0.0.1", (*server)->port(), "w0/uid-w0",
                                    std::chrono::milliseconds(50));
  ASSERT_TRUE(w0.ok());
  AuthoritySettings as;
  as.nodes = 2;  // w1 re-registers later, or never
  as.liveness_seconds = 5;
  as.rendezvous_seconds = 0.3;
  AuthorityLoop loop(store, server->get(), as, 2, std::chrono::milliseconds(20));
  EXPECT_EQ(PollUntil(Clock::now() + std::chrono::seconds(2), std::chrono::milliseconds(20),
                      [&] { return store->check({kAbandonKey}); }),
            PollOutcome::kDeadline);
  store->set(ArrivedKey(0, 0), Bytes("10 w0/uid-w0/0/0"));
  store->add(ArrivalsKey(0), 1);
  const auto arrived = Clock::now();
  ASSERT_EQ(PollUntil(arrived + std::chrono::seconds(10), std::chrono::milliseconds(20),
                      [&] { return store->check({kAbandonKey}); }),
            PollOutcome::kDone);
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - arrived).count(), 0.3);
}

// Invariant I4 (authority.h), the review's F1 B: the group shrank 4 -> 3 on a loss (w3 moved to
// node rank 1) before the rendezvous pod was lost. The new one starts at the size asked (4); the
// first pod back hands over the old membership, which says 3: the store trains at 3, says it
// runs one node rank below the size asked (the status's BelowSize), and gives w3 node rank 1.
// Fails on the code before it (the copy had no size: `world` stayed 4, shrunk_nodes 0).
TEST(AuthorityLoopTest, ANewStoreTrainsAtTheSizeTheLostOneHad) {
  auto store = NewStore();
  ASSERT_TRUE(InitBudget(*store, 3).ok());
  auto server = PresenceServer::Start(0);
  ASSERT_TRUE(server.ok());
  store->set(kWorldKey, Bytes("8"));  // 4 node ranks x 2, as the rendezvous pod writes it
  const std::string copy = "12:3;0=w0/uid-w0,1=w3/uid-w3,2=w2/uid-w2";
  for (const auto& [name, node] : {std::pair<const char*, int>{"w0", 0}, {"w3", 1}, {"w2", 2}}) {
    store->set(PodKey(name, "members"), Bytes(copy));
    Register(*store, name, node);
  }
  std::vector<std::unique_ptr<PresenceClient>> presence;
  for (const char* id : {"w0/uid-w0", "w3/uid-w3", "w2/uid-w2"}) {
    auto c = PresenceClient::Connect("127.0.0.1", (*server)->port(), id, std::chrono::milliseconds(50));
    ASSERT_TRUE(c.ok());
    presence.push_back(std::move(*c));
  }
  AuthoritySettings as;
  as.nodes = 4;
  as.min_nodes = 2;
  as.liveness_seconds = 5;
  AuthorityLoop loop(store, server->get(), as, 8, std::chrono::milliseconds(20), 4);
  ASSERT_EQ(PollUntil(Clock::now() + std::chrono::seconds(10), std::chrono::milliseconds(20),
                      [&] { return loop.Report().members.size() == 3; }),
            PollOutcome::kDone);
  EXPECT_EQ(Text(store->get(kWorldKey)), "6");
  EXPECT_EQ(Text(store->get(NodeKey(1))), "w3/uid-w3");
  const GroupReport r = loop.Report();
  EXPECT_EQ(r.world_size, 6);
  EXPECT_EQ(r.shrunk_nodes, 1);
  EXPECT_TRUE(r.fenced.empty());
  EXPECT_EQ(store->add(kGenKey, 0), 0) << "nobody arrived here: the group trains on";
  // The copy this store hands on says the same size.
  EXPECT_EQ(Text(store->get(kMembersKey)), "0:3;0=w0/uid-w0,1=w3/uid-w3,2=w2/uid-w2");
}

// Rule 5b (authority.h), the review's F9: a store replaced a lost one and the group trains on in
// the generation it formed there (nobody arrives here). A trainer restarted in place by its
// supervisor (a new incarnation on its rank) moves the generation: its peers leave the old
// store's communicator, which holds the dead one. Fails on the code before it (the generation
// stayed 0: the new incarnation's predecessor never arrived here, and no rule read the change).
TEST(AuthorityLoopTest, ATrainerRestartedUnderTheLostStoresGenerationMovesIt) {
  auto store = NewStore();
  ASSERT_TRUE(InitBudget(*store, 3).ok());
  auto server = PresenceServer::Start(0);
  ASSERT_TRUE(server.ok());
  store->set(kWorldKey, Bytes("2"));
  const std::string copy = "7:2;0=w0/uid-w0,1=w1/uid-w1";
  std::vector<std::unique_ptr<PresenceClient>> presence;
  for (const auto& [name, node] : {std::pair<const char*, int>{"w0", 0}, {"w1", 1}}) {
    store->set(PodKey(name, "members"), Bytes(copy));
    store->set(TrainerKey(node, "id"), Bytes(std::string(name) + "/uid-" + name + "/0/0"));
    Register(*store, name, node);
    const std::string id = std::string(name) + "/uid-" + name;
    auto c =
        PresenceClient::Connect("127.0.0.1", (*server)->port(), id, std::chrono::milliseconds(50));
    ASSERT_TRUE(c.ok());
    presence.push_back(std::move(*c));
  }
  AuthoritySettings as;
  as.nodes = 2;
  as.liveness_seconds = 5;
  AuthorityLoop loop(store, server->get(), as, 2, std::chrono::milliseconds(20));
  ASSERT_EQ(PollUntil(Clock::now() + std::chrono::seconds(10), std::chrono::milliseconds(20),
                      [&] { return loop.Report().trainers.size() == 2; }),
            PollOutcome::kDone);
  EXPECT_EQ(store->add(kGenKey, 0), 0) << "nobody arrived here: the group trains on";
  // w1's supervisor restarts its trainer: the new identity, then the registrations counter (I1).
  store->set(TrainerKey(1, "id"), Bytes("w1/uid-w1/0/1"));
  store->add(kRegistrationsKey, 1);
  ASSERT_EQ(PollUntil(Clock::now() + std::chrono::seconds(10), std::chrono::milliseconds(20),
                      [&] { return store->add(kGenKey, 0) > 0; }),
            PollOutcome::kDone);
  EXPECT_EQ(store->add(kGenKey, 0), 1) << "one move for one restart";
  EXPECT_FALSE(store->check({FencedKey("w1/uid-w1")})) << "a restart in place is no loss";
}

}  // namespace
}  // namespace ddp::worker::group
