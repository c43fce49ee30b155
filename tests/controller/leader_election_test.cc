// The lease decisions, with the clock as an argument.
#include "operator/kube/leader_election.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

LeaderConfig Config(const std::string& id) {
  LeaderConfig c;
  c.identity = id;
  return c;  // 15 s lease, 10 s renew deadline, 2 s retry
}

LeaseRecord HeldBy(const std::string& holder, int duration_s = 15, int transitions = 0) {
  LeaseRecord r;
  r.holder = holder;
  r.lease_duration_seconds = duration_s;
  r.transitions = transitions;
  r.renew_time = WallTime{} + seconds(100);
  return r;
}

TEST(LeaseDeciderTest, DefaultsMatchTheIssue) {
  LeaderConfig c;
  EXPECT_EQ(c.lease_duration, seconds(15));
  EXPECT_EQ(c.renew_deadline, seconds(10));
  EXPECT_EQ(c.retry_period, seconds(2));
}

TEST(LeaseDeciderTest, FreeOrReleasedLeaseCanBeTaken) {
  LeaseDecider d(Config("b"));
  LeaseClock::time_point t0{};
  EXPECT_TRUE(d.CanAcquire(t0)) << "nothing observed yet (lease absent)";
  d.Observe(HeldBy(""), t0);
  EXPECT_TRUE(d.CanAcquire(t0));
}

TEST(LeaseDeciderTest, OtherHoldersLeaseExpiresOnOurClockFromLastChange) {
  LeaseDecider d(Config("b"));
  LeaseClock::time_point t0{};
  d.Observe(HeldBy("a"), t0);
  EXPECT_FALSE(d.CanAcquire(t0 + seconds(14)));
  // The holder renewed at t0+10: the record changed, the 15 s restart from there.
  LeaseRecord renewed = HeldBy("a");
  renewed.renew_time = *renewed.renew_time + seconds(10);
  d.Observe(renewed, t0 + seconds(10));
  EXPECT_FALSE(d.CanAcquire(t0 + seconds(24)));
  d.Observe(renewed, t0 + seconds(20));  // same record again: the clock does not restart
  EXPECT_TRUE(d.CanAcquire(t0 + seconds(25)));
}

TEST(LeaseDeciderTest, ClaimCountsTransitionsOnlyWhenTheHolderChanges) {
  LeaseDecider d(Config("b"));
  LeaseClock::time_point t0{};
  WallTime w{};
  d.Observe(HeldBy("a", 15, 4), t0);
  LeaseRecord taken = d.Claim(w + seconds(50));
  EXPECT_EQ(taken.holder, "b");
  EXPECT_EQ(taken.transitions, 5);
  EXPECT_EQ(taken.acquire_time, w + seconds(50));
  EXPECT_EQ(taken.lease_duration_seconds, 15);
  d.Observe(taken, t0 + seconds(1));
  LeaseRecord renewed = d.Claim(w + seconds(52));
  EXPECT_EQ(renewed.transitions, 5);
  EXPECT_EQ(renewed.acquire_time, w + seconds(50)) << "a renewal keeps the acquire time";
  EXPECT_EQ(renewed.renew_time, w + seconds(52));
}

TEST(LeaseDeciderTest, FirstClaimOfAnAbsentLeaseIsNotATransition) {
  LeaseDecider d(Config("a"));
  EXPECT_EQ(d.Claim(WallTime{}).transitions, 0);
}

TEST(LeaseDeciderTest, SubSecondTestLeaseRoundsUp) {
  LeaderConfig c = Config("a");
  c.lease_duration = milliseconds(1500);
  EXPECT_EQ(LeaseDecider(c).Claim(WallTime{}).lease_duration_seconds, 2);
}

TEST(LeaseDeciderTest, ReleaseEmptiesHolderAndKeepsTransitions) {
  LeaseDecider d(Config("a"));
  d.Observe(HeldBy("a", 15, 3), LeaseClock::time_point{});
  LeaseRecord r = d.Release(WallTime{} + seconds(7));
  EXPECT_EQ(r.holder, "");
  EXPECT_EQ(r.lease_duration_seconds, 1);
  EXPECT_EQ(r.transitions, 3);
}

TEST(LeaseDeciderTest, RenewDeadline) {
  LeaseDecider d(Config("a"));
  LeaseClock::time_point t0{};
  EXPECT_FALSE(d.RenewExpired(t0, t0 + milliseconds(9999)));
  EXPECT_TRUE(d.RenewExpired(t0, t0 + seconds(10)));
}

TEST(LeaseSpecTest, RoundTripsThroughJson) {
  LeaseRecord r = HeldBy("op-1_42", 15, 2);
  r.acquire_time = WallTime{} + seconds(1700000000);
  r.renew_time = WallTime{} + seconds(1700000005);
  nlohmann::json spec = LeaseSpecToJson(r);
  EXPECT_EQ(spec["holderIdentity"], "op-1_42");
  EXPECT_EQ(spec["renewTime"], "2023-11-14T22:13:25.000000Z");
  EXPECT_EQ(ParseLeaseSpec(spec), r);
}

TEST(LeaseSpecTest, MalformedFieldsAreIgnored) {
  LeaseRecord r = ParseLeaseSpec({{"holderIdentity", "a"}, {"leaseDurationSeconds", "x"},
                                  {"renewTime", "yesterday"}});
  EXPECT_EQ(r.holder, "a");
  EXPECT_EQ(r.lease_duration_seconds, 0);
  EXPECT_FALSE(r.renew_time.has_value());
}

}  // namespace
}  // namespace ddp::controller
