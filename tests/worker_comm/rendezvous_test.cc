// Rendezvous: env parsing (table), joining with 2 and 3 processes, rounds, agent store, and
// timeouts that name the ranks that never arrived.
#include "worker/comm/rendezvous.h"
#include "worker/comm/local_store.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/worker_comm/multiprocess.h"

namespace ddp::worker {
namespace {

using ddp::testing::CodesToString;
using ddp::testing::FreePort;
using ddp::testing::OtherRanksExited;
using ddp::testing::RunRanks;

RendezvousConfig Config(int port, int world, int rank, int round = 0, int timeout_s = 30) {
  RendezvousConfig c;
  c.master_addr = "127.0.0.1";
  c.master_port = port;
  c.world_size = world;
  c.rank = rank;
  c.local_world_size = world;
  c.local_rank = rank;
  c.round = round;
  c.timeout = std::chrono::seconds(timeout_s);
  return c;
}

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// Every rank joins, publishes a key and reads every other rank's: the store is shared.
int JoinAndExchange(const RendezvousConfig& config) {
  auto rv = JoinRendezvous(config);
  CHILD_CHECK_OK(rv.status());
  auto& store = rv->store;
  store->set("hello/" + std::to_string(config.rank), Bytes("from " + std::to_string(config.rank)));
  for (int r = 0; r < config.world_size; ++r) {
    const std::string key = "hello/" + std::to_string(r);
    store->wait({key}, std::chrono::seconds(20));
    CHILD_CHECK(store->get(key) == Bytes("from " + std::to_string(r)));
  }
  // Rank 0 hosts the store: it leaves last, after everyone has read.
  if (config.rank == 0 && !config.agent_store) CHILD_CHECK(OtherRanksExited(std::chrono::seconds(30)));
  return 0;
}

class RendezvousJoinTest : public ::testing::TestWithParam<int> {};

TEST_P(RendezvousJoinTest, RanksShareOneStore) {
  const int world = GetParam();
  const int port = FreePort();
  auto codes = RunRanks(world, [&](int rank) { return JoinAndExchange(Config(port, world, rank)); },
                        {std::chrono::seconds(60)});
  EXPECT_EQ(codes, std::vector<int>(world, 0)) << CodesToString(codes);
}

INSTANTIATE_TEST_SUITE_P(Worlds, RendezvousJoinTest, ::testing::Values(2, 3));

TEST(RendezvousTest, TimeoutNamesTheMissingRanks) {
  const int port = FreePort();
  const auto start = std::chrono::steady_clock::now();
  auto rv = JoinRendezvous(Config(port, 3, 0, /*round=*/0, /*timeout_s=*/1));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(rv.ok());
  EXPECT_EQ(rv.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(rv.status().message().find("rendezvous round 0: ranks 1, 2 of 3 never arrived within 1s"),
            std::string::npos)
      << rv.status().ToString();
  EXPECT_LT(took, 10.0);
}

// With a store hosted elsewhere (the rendezvous pod's, for supervised trainers), rank 0 is a
// client; rounds do not see each other's keys, so the arrivals of round 0 do not count for
// round 1.
TEST(RendezvousTest, AgentStoreAndRoundsAreSeparate) {
  auto agent = HostStore(0, std::chrono::seconds(10));
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  const int port = agent->server->port();
  auto codes = RunRanks(2, [&](int rank) {
    auto c = Config(port, 2, rank);
    c.agent_store = true;
    return JoinAndExchange(c);
  }, {std::chrono::seconds(60)});
  ASSERT_EQ(codes, std::vector<int>(2, 0)) << CodesToString(codes);

  // Round 1: only rank 1 shows up; rank 0's round-0 arrival must not count.
  auto c = Config(port, 2, 1, /*round=*/1, /*timeout_s=*/1);
  c.agent_store = true;
  auto rv = JoinRendezvous(c);
  ASSERT_FALSE(rv.ok());
  EXPECT_NE(rv.status().message().find("round 1: rank 0 of 2 never arrived"), std::string::npos)
      << rv.status().ToString();
}

// A world of one needs no port: two such "jobs" on one port both succeed.
TEST(RendezvousTest, WorldOfOneUsesNoPort) {
  const int port = FreePort();
  auto a = JoinRendezvous(Config(port, 1, 0));
  auto b = JoinRendezvous(Config(port, 1, 0));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  a->store->set("k", Bytes("a"));
  EXPECT_FALSE(b->store->check({"k"}));  // separate in-process stores
}

TEST(RendezvousTest, ClientThatCannotReachTheStoreTimesOut) {
  const int port = FreePort();  // nobody listens here
  const auto start = std::chrono::steady_clock::now();
  auto rv = JoinRendezvous(Config(port, 2, 1, 0, /*timeout_s=*/2));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(rv.ok());
  EXPECT_EQ(rv.status().code(), StatusCode::kDeadlineExceeded) << rv.status().ToString();
  EXPECT_NE(rv.status().message().find("could not reach the store"), std::string::npos)
      << rv.status().ToString();
  EXPECT_LT(took, 15.0);
}

}  // namespace
}  // namespace ddp::worker
