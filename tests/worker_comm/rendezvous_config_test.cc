// RendezvousConfigFromLookup: torch's env names and defaults, and errors naming the variable.
#include <gtest/gtest.h>

#include <map>

#include "worker/comm/rendezvous.h"

namespace ddp::worker {
namespace {

StatusOr<RendezvousConfig> FromMap(const std::map<std::string, std::string>& env) {
  return RendezvousConfigFromLookup([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(RendezvousConfigTest, DefaultsAreTorchs) {
  auto c = FromMap({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->master_addr, "127.0.0.1");
  EXPECT_EQ(c->master_port, 29500);
  EXPECT_EQ(c->world_size, 1);
  EXPECT_EQ(c->rank, 0);
  EXPECT_EQ(c->round, 0);
  EXPECT_EQ(c->timeout, std::chrono::seconds(600));
  EXPECT_FALSE(c->agent_store);
}

TEST(RendezvousConfigTest, ReadsEverything) {
  auto c = FromMap({{"MASTER_ADDR", "job-worker-0.job.ns.svc"}, {"MASTER_PORT", "1234"},
                    {"WORLD_SIZE", "8"}, {"RANK", "5"}, {"LOCAL_RANK", "1"},
                    {"LOCAL_WORLD_SIZE", "4"}, {"DDP_ROUND", "3"},
                    {"DDP_RENDEZVOUS_TIMEOUT", "42"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->master_addr, "job-worker-0.job.ns.svc");
  EXPECT_EQ(c->master_port, 1234);
  EXPECT_EQ(c->world_size, 8);
  EXPECT_EQ(c->rank, 5);
  EXPECT_EQ(c->local_rank, 1);
  EXPECT_EQ(c->local_world_size, 4);
  EXPECT_EQ(c->round, 3);
  EXPECT_EQ(c->timeout, std::chrono::seconds(42));
  EXPECT_TRUE(c->agent_store);
}

TEST(RendezvousConfigTest, LocalDefaultsFollowGlobal) {
  auto c = FromMap({{"WORLD_SIZE", "3"}, {"RANK", "2"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->local_rank, 2);
  EXPECT_EQ(c->local_world_size, 3);
}

TEST(RendezvousConfigTest, BadValuesNameTheVariable) {
  struct Row {
    std::map<std::string, std::string> env;
    std::string want_in_message;
  };
  const std::vector<Row> rows = {
      {{{"RANK", "x"}}, "RANK"},
      {{{"RANK", "2"}, {"WORLD_SIZE", "2"}}, "RANK=2"},
      {{{"WORLD_SIZE", "0"}}, "WORLD_SIZE"},
      {{{"MASTER_PORT", "70000"}}, "MASTER_PORT"},
      {{{"MASTER_PORT", "12ab"}}, "MASTER_PORT"},
      {{{"DDP_RENDEZVOUS_TIMEOUT", "0"}}, "DDP_RENDEZVOUS_TIMEOUT"},
      {{{"DDP_ROUND", "-1"}}, "DDP_ROUND"},
      {{{"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}, "LOCAL_RANK"},
      {{{"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}}, "LOCAL_WORLD_SIZE"},
      {{{"TORCHELASTIC_USE_AGENT_STORE", "maybe"}}, "TORCHELASTIC_USE_AGENT_STORE"},
  };
  for (const Row& row : rows) {
    auto c = FromMap(row.env);
    ASSERT_FALSE(c.ok()) << row.want_in_message;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(row.want_in_message), std::string::npos)
        << c.status().ToString();
  }
}

}  // namespace
}  // namespace ddp::worker
