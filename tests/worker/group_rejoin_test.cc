// A store that replaced a lost rendezvous pod (worker/group/rejoin.h): the membership copy the
// pods hand over, read as hostile input, and the authority's rows for old members that come back
// or do not. Expected actions are written from the rules in rejoin.h and authority.h.
#include <gtest/gtest.h>

#include "worker/group/authority.h"
#include "worker/group/keys.h"
#include "worker/group/rejoin.h"

namespace ddp::worker::group {
namespace {

using Strings = std::vector<std::string>;

std::string Id(const std::string& name) { return name + "/u-" + name; }

AuthoritySettings Settings() {
  AuthoritySettings s;
  s.nodes = 2;
  s.liveness_seconds = 10;  // the rejoin window is 3 s
  return s;
}

PodView Pod(const std::string& name, int home) {
  PodView p;
  p.identity = Id(name);
  p.home_node = home;
  p.silent_seconds = 0.5;
  return p;
}

// A new store: w0 registered again holding node rank 0; the old store said w0 held 0, w1 held 1.
GroupView NewStore(double since_first_copy) {
  GroupView v;
  v.world = 2;
  v.pods = {{"w0", Pod("w0", 0)}};
  v.node_holders = {"", ""};
  v.ever_held = {false, false};
  v.previous = {{0, Id("w0")}, {1, Id("w1")}};
  v.previous_seconds = since_first_copy;
  return v;
}

Strings Assigns(const Actions& a) {
  Strings out;
  for (const auto& [node, id] : a.assign) out.push_back(std::to_string(node) + "=" + id);
  return out;
}
Strings Fenced(const Actions& a) {
  Strings out;
  for (const auto& [id, why] : a.fence) out.push_back(id);
  return out;
}

TEST(RejoinTest, MembersRoundTripAndLeaveFreeRanksOut) {
  const std::string text = FormatMembers(7, {Id("w0"), "", Id("s0")}, 3);
  EXPECT_EQ(text, "7:3;0=w0/u-w0,2=s0/u-s0");
  auto m = ParseMembers(text, 3);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->generation, 7);
  EXPECT_EQ(m->holders, (std::map<int, std::string>{{0, Id("w0")}, {2, Id("s0")}}));
  EXPECT_EQ(FormatMembers(0, {"", ""}, 2), "0:2;");
  ASSERT_TRUE(ParseMembers("0:2;", 2).has_value());
  EXPECT_TRUE(ParseMembers("0:2;", 2)->holders.empty());
}

TEST(RejoinTest, AMalformedCopyIsIgnoredWhole) {
  for (const char* bad : {"", "7", "x;0=a/b", "-1;0=a/b", "7;0=a/b,", "7;0=a/b,0=c/d",  // twice
                          "7;2=a/b",   // past the node ranks
                          "7;0=ab",    // not an identity
                          "7;0=",      "7;=a/b", "7;0=a/b=c", "7;0a=a/b",
                          "99999999999999999999;0=a/b"}) {
    EXPECT_FALSE(ParseMembers(bad, 2).has_value()) << bad;
  }
}

TEST(RejoinTest, TheNewestCopyWins) {
  const Membership m =
      NewestMembers({"3;0=w0/1,1=w1/1", "junk", "5;0=w0/1,1=s0/1", "4;1=w1/1"}, 2);
  EXPECT_EQ(m.generation, 5);
  EXPECT_EQ(m.holders.at(1), "s0/1");
  EXPECT_EQ(NewestMembers({"junk"}, 2).generation, -1);
}

TEST(RejoinTest, TheWindowIsAQuarterOfTheLivenessTimeoutAtLeastThreeSeconds) {
  AuthoritySettings s;
  s.liveness_seconds = 20;
  EXPECT_EQ(RejoinWindowSeconds(s), 5);
  s.liveness_seconds = 10;
  EXPECT_EQ(RejoinWindowSeconds(s), 3);
  s.liveness_seconds = 3;
  EXPECT_EQ(RejoinWindowSeconds(s), 3);
}

TEST(RejoinTest, AnOldMemberBackGetsItsRankAndTheMissingOnesRankWaitsInsideTheWindow) {
  GroupView v = NewStore(2.9);
  v.pods["s0"] = Pod("s0", -1);  // an idle spare must not take rank 1 yet
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Assigns(a), Strings{"0=" + Id("w0")});
  EXPECT_TRUE(a.fence.empty());
  EXPECT_FALSE(a.advance);  // the group trains on in its old generation
}

TEST(RejoinTest, AnOldMemberNotBackAfterTheWindowIsFencedAndTheGroupMovesOn) {
  GroupView v = NewStore(3.1);
  v.node_holders = {Id("w0"), ""};
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), Strings{Id("w1")});
  EXPECT_TRUE(a.advance);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0], (std::pair<std::string, std::string>{Id("w1"), kVerdictFenced}));
  EXPECT_TRUE(Assigns(a).empty());  // no spare, no replacement yet: rank 1 waits
}

TEST(RejoinTest, AfterTheWindowASpareTakesTheRankAtOnce) {
  GroupView v = NewStore(3.1);
  v.node_holders = {Id("w0"), ""};
  v.pods["s0"] = Pod("s0", -1);
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), Strings{Id("w1")});
  EXPECT_EQ(Assigns(a), Strings{"1=" + Id("s0")});
}

TEST(RejoinTest, TheReplacementTakesTheRankOnceItsPredecessorIsFenced) {
  GroupView v = NewStore(4);
  v.node_holders = {Id("w0"), ""};
  v.fenced = {Id("w1")};
  PodView r = Pod("w1", 1);
  r.identity = "w1/u-new";  // the operator's replacement under the same name
  v.pods["w1"] = r;
  const Actions a = Decide(v, Settings());
  EXPECT_TRUE(a.fence.empty());  // fenced once, not again
  EXPECT_EQ(Assigns(a), Strings{"1=w1/u-new"});
}

// The operator force-deleted w1's pod with the silent store (its page went silent too) and
// created it again: the new pod under w1's name registers inside the window. w1 cannot come back
// (its pod object is gone): it is lost at once and the replacement takes rank 1 in the same call,
// without waiting for the window to end.
TEST(RejoinTest, AMemberReplacedUnderItsNameIsLostAtOnceInsideTheWindow) {
  GroupView v = NewStore(0.5);
  v.node_holders = {Id("w0"), ""};
  PodView r = Pod("w1", 1);
  r.identity = "w1/u-new";
  v.pods["w1"] = r;
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), Strings{Id("w1")});
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0], (std::pair<std::string, std::string>{Id("w1"), kVerdictFenced}));
  EXPECT_TRUE(a.advance);  // the survivor may wait on w1 in a collective of the old store
  EXPECT_EQ(Assigns(a), Strings{"1=w1/u-new"});
  const RejoinDecision d = DecideRejoin(v, Settings());
  EXPECT_EQ(d.replaced, std::set<int>{1});
  EXPECT_TRUE(d.waiting.empty());
}

// The replacement registered before any survivor handed the old membership over, so it holds
// rank 1 already; the copy then names its predecessor: fenced, and the rank stays with the new pod.
TEST(RejoinTest, AReplacementFirstKeepsItsRankWhenTheCopyNamesItsPredecessor) {
  GroupView v = NewStore(0.2);
  v.node_holders = {Id("w0"), "w1/u-new"};
  PodView r = Pod("w1", 1);
  r.identity = "w1/u-new";
  v.pods["w1"] = r;
  const Actions a = Decide(v, Settings());
  EXPECT_EQ(Fenced(a), Strings{Id("w1")});
  EXPECT_TRUE(Assigns(a).empty());  // nothing freed, nothing given again
}

// Inside the window, a member whose name nobody registered still waits for it.
TEST(RejoinTest, OnlyAnotherPodUnderTheNameEndsTheWaitEarly) {
  GroupView v = NewStore(0.5);
  v.node_holders = {Id("w0"), ""};
  v.pods["w2"] = Pod("w2", 1);  // some other pod created for rank 1 (not w1's name)
  const RejoinDecision d = DecideRejoin(v, Settings());
  EXPECT_TRUE(d.lost.empty());
  EXPECT_EQ(d.waiting, std::set<int>{1});
}

TEST(RejoinTest, TheOldMemberWakingUpAfterItsFenceGetsNothing) {
  GroupView v = NewStore(20);
  v.node_holders = {Id("w0"), ""};
  v.fenced = {Id("w1")};
  v.pods["w1"] = Pod("w1", 1);  // it registers again under its old identity
  const Actions a = Decide(v, Settings());
  EXPECT_TRUE(Assigns(a).empty());
  EXPECT_TRUE(a.fence.empty());
}

// The rendezvous pod and worker 1 deleted at once: worker 1 (SIGTERM, leaving) registers with
// the new store first. It is not every member: no whole-job stop while worker 0 may still come
// back; once it is, worker 1 departs alone after the stop window.
TEST(RejoinTest, ALeavingMemberBackFirstDoesNotStopTheJob) {
  GroupView v = NewStore(0.5);
  v.pods.clear();
  PodView w1 = Pod("w1", 1);
  w1.leaving = true;
  w1.leaving_seconds = 0.5;
  v.pods["w1"] = w1;
  v.node_holders = {"", Id("w1")};
  Actions a = Decide(v, Settings());
  EXPECT_FALSE(a.stop);
  EXPECT_TRUE(a.verdicts.empty());
  // Worker 0 back, worker 1 past the stop window: it departs, nothing stops.
  v.pods["w0"] = Pod("w0", 0);
  v.node_holders = {Id("w0"), Id("w1")};
  v.pods["w1"].leaving_seconds = 4;
  a = Decide(v, Settings());
  EXPECT_FALSE(a.stop);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0], (std::pair<std::string, std::string>{Id("w1"), kVerdictDepart}));
}

TEST(RejoinTest, EveryOldMemberBackNeedsNothingMore) {
  GroupView v = NewStore(30);
  v.pods["w1"] = Pod("w1", 1);
  v.node_holders = {Id("w0"), Id("w1")};
  EXPECT_TRUE(Decide(v, Settings()).empty());
}

}  // namespace
}  // namespace ddp::worker::group
