// The rendezvous pod's own series (the group's, worker/group/report_page.cc, and the store's,
// worker/launch/store_page.cc), written by prometheus-cpp, read back by the operator's reader
// (common/worker_progress.h), our parser and promtool.
#include <gtest/gtest.h>

#include <memory>

#include "common/exposition.h"
#include "common/worker_progress.h"
#include "tests/common/promtool.h"
#include "worker/group/report_page.h"
#include "worker/launch/store_page.h"
#include "worker/store/wire.h"

namespace ddp::worker::group {
namespace {

GroupReport Report() {
  GroupReport r;
  r.generation = 3;
  r.world_size = 4;
  r.resizes = 1;
  r.shrunk_nodes = 1;
  r.recoveries = 2;
  r.budget_left = 5;
  r.members = {{0, "j-worker-0"}, {1, "j-worker-1"}};
  r.spares = {"j-worker-3"};
  r.fenced = {{"j-worker-2", "uid-2"}};
  r.ended = {{"j-worker-2", "uid-2", 2}};
  r.trainers = {{0, {"j-worker-0", 0}}, {1, {"j-worker-1", 2}}};
  return r;
}

TEST(GroupReportPage, ReadsBackAsTheReport) {
  const std::string page = RenderGroupReport(Report(), "ml/j \"q\"", 7);
  auto fams = metrics::ParseExposition(page);
  ASSERT_TRUE(fams.ok()) << fams.status().ToString() << "\n" << page;
  const metrics::GroupScrape g = metrics::ReadWorkerScrape(*fams).group;
  ASSERT_TRUE(g.present) << page;
  EXPECT_EQ(g.generation, 3);
  EXPECT_EQ(g.world_size, 4);
  EXPECT_EQ(g.resizes, 1);
  EXPECT_EQ(g.shrunk_nodes, 1);
  EXPECT_EQ(g.recoveries, 2);
  EXPECT_EQ(g.budget_left, 5);
  EXPECT_EQ(g.members, (std::map<std::string, int>{{"j-worker-0", 0}, {"j-worker-1", 1}}));
  EXPECT_EQ(g.spares, std::vector<std::string>{"j-worker-3"});
  ASSERT_EQ(g.fenced.size(), 1u);
  EXPECT_EQ(g.fenced[0], std::make_pair(std::string("j-worker-2"), std::string("uid-2")));
  ASSERT_EQ(g.ended.size(), 1u);
  EXPECT_EQ(g.ended[0].node_rank, 2);
  EXPECT_EQ(g.trainers.at(1), std::make_pair(std::string("j-worker-1"), 2));
  EXPECT_FALSE(g.abandoned);
  // The job and round labels, escaped on the way out and unescaped on the way in.
  EXPECT_EQ(metrics::FindSample(*fams, "ddp_group_generation", {{"job", "ml/j \"q\""}, {"round", "7"}}), 3);
}

TEST(GroupReportPage, PromtoolAcceptsItEmptyOrFull) {
  if (!ddp::testing::HavePromtool()) GTEST_SKIP() << "promtool not installed";
  std::string out;
  EXPECT_EQ(ddp::testing::PromtoolCheck(RenderGroupReport(Report(), "j", 0), &out), 0) << out;
  EXPECT_EQ(ddp::testing::PromtoolCheck(RenderGroupReport(GroupReport{}, "j", 0), &out), 0) << out;
}

TEST(StorePage, EveryOpTwiceAndTheServersGauges) {
  auto server = store::StoreServer::Start(std::make_shared<store::StoreState>(), 0, "test-id");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string page = RenderStorePage(**server, "j", 2);
  auto fams = metrics::ParseExposition(page);
  ASSERT_TRUE(fams.ok()) << fams.status().ToString() << "\n" << page;
  size_t requests = 0;
  for (const auto& f : *fams) {
    if (f.name == kStoreRequests) requests = f.samples.size();
  }
  EXPECT_EQ(requests, 2u * (store::kOpCount - 1)) << page;  // from="network" and from="process"
  const std::string get = store::OpName(static_cast<store::Op>(1));
  EXPECT_EQ(metrics::FindSample(*fams, kStoreRequests, {{"op", get}, {"from", "process"}, {"round", "2"}}), 0);
  EXPECT_EQ(metrics::FindSample(*fams, kStoreConnections, {{"job", "j"}}), 0);
  EXPECT_EQ(metrics::FindSample(*fams, kStoreKeys), 0);
  if (!ddp::testing::HavePromtool()) return;
  std::string out;
  EXPECT_EQ(ddp::testing::PromtoolCheck(page, &out), 0) << out;
}

}  // namespace
}  // namespace ddp::worker::group
