#include "worker/launch/launch_plan.h"

#include <gtest/gtest.h>

#include <map>

namespace ddp::worker {
namespace {

std::function<const char*(const char*)> EnvOf(const std::map<std::string, std::string>& m) {
  return [m](const char* n) -> const char* {
    auto it = m.find(n);
    return it == m.end() ? nullptr : it->second.c_str();
  };
}

TEST(LaunchPlanTest, RanksFromNodeRank) {
  auto p = PlanLaunch(EnvOf({{"NODE_RANK", "2"}, {"NPROC_PER_NODE", "4"}, {"NNODES", "3"},
                             {"WORLD_SIZE", "12"}}),
                      {"--steps", "5"}, /*metrics=*/true, "/tmp/x");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->children.size(), 4u);
  for (int local = 0; local < 4; ++local) {
    const ChildSpec& c = p->children[local];
    EXPECT_EQ(c.rank, 8 + local);  // node 2 of 4-process nodes starts at rank 8
    EXPECT_EQ(c.env.at("RANK"), std::to_string(8 + local));
    EXPECT_EQ(c.env.at("LOCAL_RANK"), std::to_string(local));
    EXPECT_EQ(c.env.at("LOCAL_WORLD_SIZE"), "4");
    EXPECT_EQ(c.env.at("WORLD_SIZE"), "12");
    EXPECT_EQ(c.args[0], "--steps");
    // The launcher's metrics flags come last, so they win.
    EXPECT_EQ(c.args.back(), "/tmp/x/rank-" + std::to_string(local) + ".port");
  }
}

TEST(LaunchPlanTest, DefaultsAndErrors) {
  auto one = PlanLaunch(EnvOf({}), {}, false, "");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->children.size(), 1u);
  EXPECT_EQ(one->world_size, 1);
  EXPECT_EQ(one->children[0].args, (std::vector<std::string>{"--metrics-port", "-1"}));
  struct Row { std::map<std::string, std::string> env; std::string names; };
  for (const Row& r : {Row{{{"NPROC_PER_NODE", "0"}}, "NPROC_PER_NODE"},
                       Row{{{"NODE_RANK", "x"}}, "NODE_RANK"},
                       Row{{{"NPROC_PER_NODE", "2"}, {"WORLD_SIZE", "3"}}, "WORLD_SIZE"},
                       Row{{{"NODE_RANK", "1"}, {"NNODES", "1"}}, "NODE_RANK"}}) {
    auto p = PlanLaunch(EnvOf(r.env), {}, false, "");
    ASSERT_FALSE(p.ok()) << r.names;
    EXPECT_NE(p.status().message().find(r.names), std::string::npos) << p.status().ToString();
  }
}

// The first failure's own code, so that restartPolicy ExitCode judges the code the trainer
// chose (a launcher that turned 1 into 75 made every failure retryable).
TEST(LaunchPlanTest, ExitCodeIsTheFirstFailuresOwn) {
  struct Row { std::vector<ChildExit> exits; int want; };
  for (const Row& r : {Row{{{0, 0}, {1, 0}}, 0},
                       Row{{{1, 137}, {0, 75}}, 137},  // killed child, the other stopped by us
                       Row{{{0, 0}, {1, 1}}, 1},
                       Row{{{1, 2}, {0, 75}}, 2},      // bad config is permanent
                       Row{{{0, 3}, {1, 143}}, 3},
                       Row{{{0, 75}, {1, 2}}, 75}}) {  // the 2 came after our SIGTERM
    EXPECT_EQ(LaunchExitCode(r.exits), r.want);
  }
}

}  // namespace
}  // namespace ddp::worker
