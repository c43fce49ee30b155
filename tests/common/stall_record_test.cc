// The trainers' stall records and the group's trainer incarnations as the operator reads them
// from a page (common/worker_progress.h): which record is the page's, and what refuses a page.
#include <gtest/gtest.h>

#include "common/worker_progress.h"

namespace ddp::metrics {
namespace {

std::string Stall(const std::string& rank, double start, double detected, double end, int step) {
  const std::string l = rank.empty() ? "" : "rank=\"" + rank + "\",";
  std::string out;
  if (start >= 0) out += "ddp_worker_last_stall_timestamp_seconds{" + l + "edge=\"start\"} " + std::to_string(start) + "\n";
  if (detected >= 0) out += "ddp_worker_last_stall_timestamp_seconds{" + l + "edge=\"detected\"} " + std::to_string(detected) + "\n";
  out += "ddp_worker_last_stall_timestamp_seconds{" + l + "edge=\"end\"} " + std::to_string(end) + "\n";
  out += "ddp_worker_last_stall_step" + (rank.empty() ? std::string() : "{rank=\"" + rank + "\"}") +
         " " + std::to_string(step) + "\n";
  return out;
}

TEST(StallRecord, OnePageOneRecord) {
  auto s = ReadWorkerPage("ddp_worker_steps_total 160\n" + Stall("", 1000.25, 1000.5, 1001.75, 150));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s->last_stall);
  EXPECT_TRUE(s->stall_series);
  EXPECT_EQ(s->last_stall->start, 1000.25);
  EXPECT_EQ(s->last_stall->detected, 1000.5);
  EXPECT_EQ(s->last_stall->end, 1001.75);
  EXPECT_EQ(s->last_stall->step, 150);
}

TEST(StallRecord, ANewcomersRecordDefersToASurvivorsOfTheSameStall) {
  // Under launch: rank 0 was the restarted trainer (no start), rank 1 survived the same stall.
  auto s = ReadWorkerPage(Stall("0", -1, -1, 2000.9, 300) + Stall("1", 1998.0, 1998.1, 2000.8, 300));
  ASSERT_TRUE(s.ok() && s->last_stall);
  EXPECT_EQ(s->last_stall->rank, 1);
  EXPECT_EQ(s->last_stall->start, 1998.0);
  // A survivor's record of an older stall (ended more than kSameStall before) is not this one.
  auto t = ReadWorkerPage(Stall("0", -1, -1, 2000.9, 300) + Stall("1", 1500.0, 1500.1, 1501.0, 90));
  ASSERT_TRUE(t.ok() && t->last_stall);
  EXPECT_EQ(t->last_stall->rank, 0);
  EXPECT_FALSE(t->last_stall->start);
}

// The rendezvous pod relays node rank 1's records (ddp_group_peer_last_stall_*): when rank 0's
// own trainer was the one restarted, the survivor's record is the page's.
TEST(StallRecord, APeersRelayedRecordStandsInForANewRankZero) {
  std::string peer = Stall("1", 3000.0, 3000.2, 3001.5, 500);
  for (size_t at; (at = peer.find("ddp_worker_last_stall")) != std::string::npos;) {
    peer.replace(at, std::string("ddp_worker_last_stall").size(), "ddp_group_peer_last_stall");
  }
  auto s = ReadWorkerPage(Stall("0", -1, -1, 3001.52, 500) + peer);
  ASSERT_TRUE(s.ok() && s->last_stall) << s.status().ToString();
  EXPECT_EQ(s->last_stall->rank, 1);
  EXPECT_EQ(s->last_stall->start, 3000.0);
  EXPECT_EQ(s->last_stall->end, 3001.5);
}

TEST(StallRecord, HostileValuesRefuseThePageAndDisorderIsIgnored) {
  EXPECT_FALSE(ReadWorkerPage(Stall("", 5, 6, -7, 1)).ok());
  EXPECT_FALSE(ReadWorkerPage("ddp_worker_last_stall_timestamp_seconds{edge=\"end\"} NaN\n").ok());
  EXPECT_FALSE(ReadWorkerPage("ddp_worker_last_stall_timestamp_seconds{edge=\"start\"} +Inf\n"
                              "ddp_worker_last_stall_timestamp_seconds{edge=\"end\"} 5\n").ok());
  EXPECT_FALSE(ReadWorkerPage(Stall("", 1, 2, 3, -4)).ok());
  auto s = ReadWorkerPage(Stall("", 10, 11, 9, 4));  // start after end: no measurement
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->last_stall);
  EXPECT_TRUE(s->stall_series);
  auto old = ReadWorkerPage("ddp_worker_steps_total 3\n");  // an older worker: no records
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->stall_series);
}

TEST(StallRecord, TrainerIncarnationsNameTheirRanks) {
  auto s = ReadWorkerPage(
      "ddp_group_generation 3\n"
      "ddp_group_trainer_incarnation{rank=\"0\",pod=\"a-worker-0\"} 0\n"
      "ddp_group_trainer_incarnation{rank=\"1\",pod=\"a-worker-1\"} 2\n"
      "ddp_group_trainer_incarnation{rank=\"x\",pod=\"a-worker-9\"} 1\n"
      "ddp_group_trainer_incarnation{rank=\"2\",pod=\"a-worker-2\"} 1.5\n"
      "ddp_group_trainer_incarnation{rank=\"3\",pod=\"a-worker-3\"} -1\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->group.trainers.size(), 2u) << "a rank that is none, or a count that is none, is left out";
  EXPECT_EQ(s->group.trainers.at(0), (std::pair<std::string, int>{"a-worker-0", 0}));
  EXPECT_EQ(s->group.trainers.at(1), (std::pair<std::string, int>{"a-worker-1", 2}));
}

}  // namespace
}  // namespace ddp::metrics
