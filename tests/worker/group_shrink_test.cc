// The group authority's rule 10 (worker/group/authority.h), one row each: a member lost with no
// idle pod to take its node rank makes the group go on smaller at once (never below min_nodes),
// the highest members moving into the holes so that ranks stay dense, and the replacement that
// prepared for the rank a mover left grows it back. Expected actions are written from the rule,
// not read off the program.
#include <gtest/gtest.h>

#include "worker/group/authority.h"
#include "worker/group/keys.h"
#include "tests/worker/authority_rows.h"

namespace ddp::worker::group {
namespace {

// The table's builders (authority_rows.h).
using rows::Assigns;
using rows::Group;
using rows::Id;
using rows::Pod;
using rows::Strings;

AuthoritySettings Room(int min_nodes, int nodes = 4) {
  AuthoritySettings s;
  s.nodes = nodes;
  s.min_nodes = min_nodes;
  return s;
}

// Worker pods w0..w<n-1> holding their own node ranks of a formed group that wants `n`.
GroupView Whole(int n) { return Group(n, 0, n); }

Strings Moves(const Actions& a) {
  Strings out;
  for (const auto& [id, node] : a.moves) out.push_back(id + "->" + std::to_string(node));
  return out;
}

TEST(ShrinkOnLossTest, TheHighestLostNeedsNoMove) {
  GroupView v = Whole(4);
  v.pods["w3"].presence_closed = true;
  const Actions a = Decide(v, Room(2));
  EXPECT_EQ(Assigns(a), Strings{"3="});
  EXPECT_TRUE(a.moves.empty());
  EXPECT_EQ(a.resize_to, 3);
  EXPECT_EQ(a.shrunk, 1);
  EXPECT_TRUE(a.advance);
  EXPECT_FALSE(a.graceful) << "a loss ends the generation at once";
  // The lost pod is fenced with its verdict, as without the rule: the charge is unchanged.
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0], (std::pair<std::string, std::string>{Id("w3"), kVerdictFenced}));
}

TEST(ShrinkOnLossTest, AMiddleRankIsFilledByTheHighestMemberWithItsState) {
  GroupView v = Whole(4);
  v.pods["w1"].presence_closed = true;
  const Actions a = Decide(v, Room(2));
  // Rule 1 frees rank 1; rule 10 moves the holder of rank 3 there and frees rank 3.
  EXPECT_EQ(Assigns(a), (Strings{"1=", "3=", "1=" + Id("w3")}));
  EXPECT_EQ(Moves(a), Strings{Id("w3") + "->1"});
  EXPECT_EQ(a.resize_to, 3);
  EXPECT_EQ(a.shrunk, 1);
  // Nobody else changes rank, nobody gets a verdict but the lost pod.
  EXPECT_EQ(a.verdicts.size(), 1u);
}

TEST(ShrinkOnLossTest, PodZeroIsLikeAnyOther) {
  GroupView v = Whole(4);
  v.pods["w0"].silent_seconds = Room(2).liveness_seconds + 1;  // a frozen node
  const Actions a = Decide(v, Room(2));
  EXPECT_EQ(Moves(a), Strings{Id("w3") + "->0"});
  EXPECT_EQ(a.resize_to, 3);
}

TEST(ShrinkOnLossTest, ADrainedPodDepartsAndTheGroupGoesOnWithoutIt) {
  GroupView v = Whole(4);
  v.pods["w2"].leaving = true;
  v.pods["w2"].leaving_seconds = Room(2).stop_window_seconds;
  const Actions a = Decide(v, Room(2));
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].second, kVerdictDepart);
  EXPECT_EQ(Moves(a), Strings{Id("w3") + "->2"});
  EXPECT_EQ(a.resize_to, 3);
}

TEST(ShrinkOnLossTest, TwoLostAtOnceMoveTheTwoHighestIntoTheLowestHoles) {
  GroupView v = Whole(4);
  v.pods["w0"].presence_closed = true;
  v.pods["w1"].presence_closed = true;
  const Actions a = Decide(v, Room(2));
  EXPECT_EQ(Moves(a), (Strings{Id("w3") + "->0", Id("w2") + "->1"}));
  EXPECT_EQ(a.resize_to, 2);
  EXPECT_EQ(a.shrunk, 2);
  // One lost beside the highest: only the other member past the new size moves.
  GroupView top = Whole(4);
  top.pods["w1"].presence_closed = true;
  top.pods["w3"].presence_closed = true;
  const Actions b = Decide(top, Room(2));
  EXPECT_EQ(Moves(b), Strings{Id("w2") + "->1"});
  EXPECT_EQ(b.resize_to, 2);
}

TEST(ShrinkOnLossTest, NeverBelowMinNodesTheRestWaitsAsBefore) {
  GroupView v = Whole(4);
  v.pods["w0"].presence_closed = true;
  v.pods["w1"].presence_closed = true;
  // Room for one: rank 0 is filled by the highest member, rank 1 waits for its replacement.
  const Actions a = Decide(v, Room(3));
  EXPECT_EQ(Moves(a), Strings{Id("w3") + "->0"});
  EXPECT_EQ(a.resize_to, 3);
  EXPECT_EQ(a.shrunk, 1);
  // At minReplicas already: today's behaviour, the rank waits.
  GroupView at_min = Whole(2);
  at_min.pods["w1"].presence_closed = true;
  const Actions b = Decide(at_min, Room(2));
  EXPECT_EQ(Assigns(b), Strings{"1="});
  EXPECT_EQ(b.resize_to, -1);
  EXPECT_EQ(b.shrunk, 0);
  // No room asked (no spec.elastic): the rank waits.
  GroupView fixed = Whole(4);
  fixed.pods["w1"].presence_closed = true;
  EXPECT_EQ(Decide(fixed, Room(0)).resize_to, -1);
}

TEST(ShrinkOnLossTest, AnIdleSpareOrIdlePodTakesTheRankInstead) {
  GroupView v = Whole(3);
  v.pods["s0"] = Pod("s0", -1);
  v.pods["w1"].presence_closed = true;
  const Actions a = Decide(v, Room(2));
  EXPECT_EQ(Assigns(a), (Strings{"1=", "1=" + Id("s0")}));
  EXPECT_EQ(a.resize_to, -1) << "a spare's heal, not a shrink";
  // Its replacement registered before the authority saw the old one go (the name under a new
  // identity): the old holder is fenced and the pod created for the rank takes it back.
  GroupView back = Whole(3);
  back.pods["w1"].identity = "w1/new";
  const Actions b = Decide(back, Room(2));
  EXPECT_EQ(Assigns(b), (Strings{"1=", "1=w1/new"}));
  EXPECT_EQ(b.resize_to, -1);
  EXPECT_TRUE(b.moves.empty());
}

TEST(ShrinkOnLossTest, AStartUpRankOrARejoinWindowIsNotALoss) {
  // A rank never held waits for its own pod (start-up), as before.
  GroupView start = Whole(4);
  start.node_holders[3] = "";
  start.ever_held[3] = false;
  start.formed = start.ever_formed = false;
  start.pods.erase("w3");
  EXPECT_EQ(Decide(start, Room(2)).resize_to, -1);
  // A new store waiting for an old member to register again: its rank is kept for it.
  GroupView rejoin = Whole(4);
  rejoin.node_holders[2] = "";
  rejoin.ever_held[2] = false;
  rejoin.pods.erase("w2");
  rejoin.previous = {{2, Id("w2")}};
  rejoin.previous_seconds = 1;
  EXPECT_EQ(Decide(rejoin, Room(2)).resize_to, -1);
  // Past the window it is lost: the group goes on without it.
  rejoin.previous_seconds = 100;
  const Actions a = Decide(rejoin, Room(2));
  EXPECT_EQ(Moves(a), Strings{Id("w3") + "->2"});
  EXPECT_EQ(a.resize_to, 3);
}

TEST(ShrinkOnLossTest, NotWhenTheJobStopsOrTheGroupWasAbandoned) {
  GroupView stop = Whole(4);
  stop.pods["w1"].presence_closed = true;
  stop.stop = true;
  EXPECT_EQ(Decide(stop, Room(2)).resize_to, -1);
  GroupView gone = Whole(4);
  gone.pods["w1"].presence_closed = true;
  gone.abandon = true;
  EXPECT_EQ(Decide(gone, Room(2)).resize_to, -1);
}

// After the shrink of AMiddleRankIsFilledByTheHighestMemberWithItsState: w3 holds node rank 1,
// the group runs 3 and still wants 4. The replacement w1 (its own rank held by w3) prepares for
// node rank 3, the one w3 left, and the group grows back by it once it is ready, gracefully.
GroupView Shrunk() {
  GroupView v = Whole(4);
  v.pods["w1"] = Pod("w1", 1);
  v.pods["w1"].identity = "w1/new";
  v.node_holders = {Id("w0"), Id("w3"), Id("w2"), ""};
  v.nodes = v.world = 3;
  v.desired_nodes = 4;
  v.fenced = {Id("w1")};
  return v;
}

TEST(ShrinkOnLossTest, TheReplacementGrowsTheGroupBackOnceReady) {
  GroupView v = Shrunk();
  v.pods["w1"].preparing = true;
  v.pods["w1"].prepare_node = 3;
  v.pods["w1"].registered_seconds = kGrowWaitSeconds + 5;
  EXPECT_TRUE(Decide(v, Room(2)).empty()) << "its trainers are still preparing";
  v.pods["w1"].ready = true;
  const Actions a = Decide(v, Room(2));
  EXPECT_EQ(Assigns(a), Strings{"3=w1/new"});
  EXPECT_EQ(a.resize_to, 4);
  EXPECT_TRUE(a.graceful) << "a growth alone of a formed generation";
  EXPECT_TRUE(a.moves.empty()) << "the mover keeps node rank 1";
  // One that does not prepare (no warm standby) joins as any newcomer does, at once.
  GroupView plain = Shrunk();
  EXPECT_EQ(Decide(plain, Room(2)).resize_to, 4);
}

TEST(ShrinkOnLossTest, AReplacementThatMayPrepareIsTakenInOnlyOnceItSaidWhetherItDoes) {
  // Registered with prepare/<identity> "?" (warm standbys): a growth at its registration would
  // take it in unprepared (seen in the shrink e2e: it was given the rank 55 ms after it came).
  GroupView v = Shrunk();
  v.pods["w1"].deciding = true;
  v.pods["w1"].registered_seconds = 0.1;
  EXPECT_TRUE(Decide(v, Room(2)).empty()) << "it has not said whether it prepares";
  // It says it prepares: the growth waits for its trainers, as for any preparing pod.
  v.pods["w1"].deciding = false;
  v.pods["w1"].preparing = true;
  v.pods["w1"].prepare_node = 3;
  EXPECT_TRUE(Decide(v, Room(2)).empty()) << "its trainers are preparing";
  // One that never says joins unprepared once the bound passed.
  GroupView silent = Shrunk();
  silent.pods["w1"].deciding = true;
  silent.pods["w1"].registered_seconds = kDecideWaitSeconds + 0.1;
  EXPECT_EQ(Decide(silent, Room(2)).resize_to, 4);
}

TEST(ShrinkOnLossTest, TwoReplacementsTakeTheRanksTheyPreparedFor) {
  // w0 and w1 lost; w3 moved to 0 and w2 to 1. The replacements prepared for 3 and 2.
  GroupView v = Whole(4);
  v.node_holders = {Id("w3"), Id("w2"), "", ""};
  v.nodes = v.world = 2;
  v.desired_nodes = 4;
  v.pods["w0"].identity = "w0/new";
  v.pods["w1"].identity = "w1/new";
  v.fenced = {Id("w0"), Id("w1")};
  for (auto [name, node] : {std::pair<const char*, int>{"w0", 3}, {"w1", 2}}) {
    v.pods[name].preparing = v.pods[name].ready = true;
    v.pods[name].prepare_node = node;
  }
  const Actions a = Decide(v, Room(2));
  EXPECT_EQ(Assigns(a), (Strings{"2=w1/new", "3=w0/new"}));
  EXPECT_EQ(a.resize_to, 4);
}

TEST(ShrinkOnLossTest, ALossWhileSmallerShrinksAgainDownToMin) {
  GroupView v = Shrunk();
  v.pods.erase("w1");  // its replacement not started yet
  v.pods["w2"].presence_closed = true;
  const Actions a = Decide(v, Room(2));
  EXPECT_EQ(Assigns(a), Strings{"2="});
  EXPECT_TRUE(a.moves.empty()) << "node rank 2 was the highest of three";
  EXPECT_EQ(a.resize_to, 2);
  // Then at two: the next loss waits for a replacement.
  GroupView two = Shrunk();
  two.pods.erase("w1");
  two.pods.erase("w2");
  two.node_holders = {Id("w0"), Id("w3"), "", ""};
  two.nodes = two.world = 2;
  two.pods["w3"].presence_closed = true;
  EXPECT_EQ(Decide(two, Room(2)).resize_to, -1);
}

TEST(ShrinkOnLossTest, ALossDuringAGrowthShrinksAndDoesNotGrowInTheSameDecision) {
  GroupView v = Shrunk();
  v.pods["w1"].preparing = v.pods["w1"].ready = true;
  v.pods["w1"].prepare_node = 3;
  v.pods["w0"].presence_closed = true;  // lost as the replacement became ready
  const Actions a = Decide(v, Room(2));
  // The ready replacement is idle and its own rank is held: rule 4 gives it the hole at once
  // (a spare's heal), which keeps the group at 3: nothing to shrink.
  EXPECT_EQ(Assigns(a), (Strings{"0=", "0=w1/new"}));
  EXPECT_EQ(a.resize_to, -1);
  EXPECT_FALSE(a.graceful);
}

}  // namespace
}  // namespace ddp::worker::group
