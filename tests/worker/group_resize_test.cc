// The group authority's resize rule (worker/group/authority.h rule 9), one row each: a smaller
// desired size makes the highest node ranks depart (verdict "resized", fenced, not charged),
// a larger one grows the group by the idle pods created for the next node ranks, once the whole
// group is held. Expected actions are written from the rule, not read off the program.
#include <gtest/gtest.h>

#include "worker/group/authority.h"
#include "worker/group/desired_size.h"
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

AuthoritySettings Max(int nodes) {
  AuthoritySettings s;
  s.nodes = nodes;
  return s;
}

Strings Verdicts(const Actions& a) {
  Strings out;
  for (const auto& [id, v] : a.verdicts) out.push_back(id + ":" + v);
  return out;
}

TEST(ResizeTest, TheSizeAskedIsTheSizeItHasNothingToDo) {
  EXPECT_TRUE(Decide(Group(4, 0, 4), Max(4)).empty());
  EXPECT_TRUE(Decide(Group(4, 0, -1), Max(4)).empty()) << "no size asked: keep it";
}

TEST(ResizeTest, ShrinkingByOneMakesTheHighestNodeRankDepart) {
  const Actions a = Decide(Group(4, 0, 3), Max(4));
  EXPECT_EQ(a.resize_to, 3);
  EXPECT_TRUE(a.advance);
  EXPECT_EQ(Verdicts(a), Strings{"w3/u:" + std::string(kVerdictResized)});
  EXPECT_EQ(Assigns(a), Strings{"3="});
  ASSERT_EQ(a.fence.size(), 1u);
  EXPECT_EQ(a.fence[0].first, "w3/u");
  EXPECT_TRUE(a.abandon.empty());
  EXPECT_FALSE(a.stop);
}

TEST(ResizeTest, ShrinkingByTwoKeepsTheRanksDense) {
  const Actions a = Decide(Group(4, 0, 2), Max(4));
  EXPECT_EQ(a.resize_to, 2);
  EXPECT_EQ(Verdicts(a), (Strings{"w2/u:resized", "w3/u:resized"}));
  EXPECT_EQ(Assigns(a), (Strings{"2=", "3="}));
}

TEST(ResizeTest, ASizeBelowOneOrAboveTheMostIsClamped) {
  EXPECT_EQ(Decide(Group(2, 0, 0), Max(4)).resize_to, 1);
  EXPECT_EQ(Decide(Group(4, 0, 9), Max(4)).resize_to, -1) << "4 is the most: nothing to grow";
}

TEST(ResizeTest, GrowingTakesTheIdlePodsCreatedForTheNextRanks) {
  const Actions a = Decide(Group(2, 2, 4), Max(4));
  EXPECT_EQ(a.resize_to, 4);
  EXPECT_TRUE(a.advance);
  EXPECT_EQ(Assigns(a), (Strings{"2=w2/u", "3=w3/u"}));
  EXPECT_TRUE(a.verdicts.empty());
  EXPECT_TRUE(a.fence.empty());
}

TEST(ResizeTest, GrowingStopsAtTheFirstRankWithoutAPod) {
  // Only the pod for node rank 3 came: rank 2 has nobody, so the group waits (ranks stay dense).
  GroupView v = Group(2, 0, 4);
  v.pods["w3"] = Pod("w3", 3);
  EXPECT_TRUE(Decide(v, Max(4)).empty());
  // With rank 2's pod too, one step to 4.
  v.pods["w2"] = Pod("w2", 2);
  EXPECT_EQ(Decide(v, Max(4)).resize_to, 4);
  // Only rank 2's: it waits for rank 3's pod (one re-formation, not two) ...
  GroupView one = Group(2, 1, 4);
  one.pods["w2"].registered_seconds = kGrowWaitSeconds - 0.1;
  EXPECT_TRUE(Decide(one, Max(4)).empty());
  // ... for kGrowWaitSeconds, then grows by one.
  one.pods["w2"].registered_seconds = kGrowWaitSeconds;
  const Actions a = Decide(one, Max(4));
  EXPECT_EQ(a.resize_to, 3);
  EXPECT_EQ(Assigns(a), Strings{"2=w2/u"});
}

TEST(ResizeTest, AGrowthWaitsForThePreparingPodsTrainersToBeReady) {
  // Both newcomers prepare (their trainers build the data and the model outside the group):
  // registered long past kGrowWaitSeconds, the group still waits while one is not ready.
  GroupView v = Group(2, 2, 4);
  for (const char* n : {"w2", "w3"}) {
    v.pods[n].preparing = true;
    v.pods[n].registered_seconds = kGrowWaitSeconds + 5;
  }
  EXPECT_TRUE(Decide(v, Max(4)).empty()) << "neither is ready";
  v.pods["w3"].ready = true;
  EXPECT_TRUE(Decide(v, Max(4)).empty()) << "w2 is still preparing: one re-formation, not two";
  v.pods["w2"].ready = true;
  const Actions a = Decide(v, Max(4));
  EXPECT_EQ(a.resize_to, 4);
  EXPECT_EQ(Assigns(a), (Strings{"2=w2/u", "3=w3/u"}));
  // A pod that does not prepare joins as before, beside one that is ready.
  GroupView mixed = Group(2, 2, 4);
  mixed.pods["w2"].preparing = mixed.pods["w2"].ready = true;
  EXPECT_EQ(Decide(mixed, Max(4)).resize_to, 4);
}

TEST(ResizeTest, APreparingPodThatNeverGetsReadyHoldsTheGrowthOnlyForTheBound) {
  GroupView v = Group(2, 1, 3);
  v.pods["w2"].preparing = true;
  v.pods["w2"].registered_seconds = kPrepareWaitSeconds - 0.1;
  EXPECT_TRUE(Decide(v, Max(4)).empty());
  v.pods["w2"].registered_seconds = kPrepareWaitSeconds;  // then it joins as any newcomer
  const Actions a = Decide(v, Max(4));
  EXPECT_EQ(a.resize_to, 3);
  EXPECT_EQ(Assigns(a), Strings{"2=w2/u"});
  // With the pod for rank 3 ready and rank 2's still preparing within the bound, no partial
  // growth either (rank 2 comes first: ranks stay dense).
  GroupView two = Group(2, 2, 4);
  two.pods["w2"].preparing = two.pods["w3"].preparing = two.pods["w3"].ready = true;
  two.pods["w2"].registered_seconds = two.pods["w3"].registered_seconds = kGrowWaitSeconds + 1;
  EXPECT_TRUE(Decide(two, Max(4)).empty());
}

TEST(ResizeTest, PreparingChangesNeitherAShrinkNorAHeal) {
  // A shrink goes on at once with a preparing pod registered (it is outside the group anyway).
  GroupView shrink = Group(4, 0, 3);
  shrink.pods["w9"] = Pod("w9", 3);
  shrink.pods["w9"].preparing = true;
  EXPECT_EQ(Decide(shrink, Max(4)).resize_to, 3);
  // A lost member's node rank goes to an idle pod at once, preparing or not (a spare's rule).
  GroupView heal = Group(2, 1, 2);
  heal.pods["w2"].preparing = true;
  heal.pods["w1"].presence_closed = true;
  EXPECT_EQ(Assigns(Decide(heal, Max(4))), (Strings{"1=", "1=w2/u"}));
}

TEST(ResizeTest, AHoleIsHealedBeforeTheGroupGrows) {
  // Node rank 1's holder was lost a moment ago: the idle pod created for rank 2 fills the hole
  // (ranks stay dense) and the group does not grow in the same decision.
  GroupView v = Group(2, 1, 3);
  v.pods["w1"].presence_closed = true;
  const Actions a = Decide(v, Max(4));
  EXPECT_EQ(a.resize_to, -1);
  EXPECT_EQ(Assigns(a), (Strings{"1=", "1=w2/u"}));
  // Nobody idle: the hole stays and nothing grows.
  GroupView alone = Group(2, 0, 3);
  alone.pods["w1"].presence_closed = true;
  const Actions b = Decide(alone, Max(4));
  EXPECT_EQ(b.resize_to, -1);
  EXPECT_EQ(Assigns(b), Strings{"1="});
}

TEST(ResizeTest, AGrowthAloneOfAFormedGroupIsGracefulAndNothingElseIs) {
  // Rule 9c: the members leave the formed generation at a step agreement.
  const Actions grow = Decide(Group(2, 2, 4), Max(4));
  EXPECT_EQ(grow.resize_to, 4);
  EXPECT_TRUE(grow.advance);
  EXPECT_TRUE(grow.graceful);
  // The generation has not formed (its members may be creating their communicator): at once.
  GroupView forming = Group(2, 2, 4);
  forming.formed = false;
  const Actions f = Decide(forming, Max(4));
  EXPECT_EQ(f.resize_to, 4);
  EXPECT_FALSE(f.graceful);
  // A shrink: the departing pods end, so the generation ends at once.
  const Actions shrink = Decide(Group(4, 0, 2), Max(4));
  EXPECT_EQ(shrink.resize_to, 2);
  EXPECT_FALSE(shrink.graceful);
  // A growth decided with a stalled trainer: its communicator must be released at once.
  GroupView stalled = Group(2, 2, 4);
  stalled.trainers.resize(2);
  stalled.trainers[1].identity = "w1/u/0/0";
  stalled.trainers[1].silent_seconds = Max(4).liveness_seconds + 1;
  const Actions s = Decide(stalled, Max(4));
  EXPECT_EQ(s.resize_to, 4);
  ASSERT_EQ(s.stalls.size(), 1u);
  EXPECT_FALSE(s.graceful);
  // A heal (a lost member's rank to an idle pod) is never graceful.
  GroupView heal = Group(2, 1, 2);
  heal.pods["w1"].presence_closed = true;
  EXPECT_FALSE(Decide(heal, Max(4)).graceful);
}

TEST(ResizeTest, ASparePodIsNotTakenToGrow) {
  GroupView v = Group(2, 0, 3);
  v.pods["s0"] = Pod("s0", -1);
  EXPECT_TRUE(Decide(v, Max(4)).empty());
}

TEST(ResizeTest, AWholeJobStopIsNotAResize) {
  GroupView v = Group(4, 0, 2);
  v.stop = true;
  EXPECT_EQ(Decide(v, Max(4)).resize_to, -1);
}

TEST(DesiredSizeTest, ParsesStrictlyAndRefusesWhatIsNotASize) {
  std::string why;
  EXPECT_EQ(ParseDesiredNodes("3", 4, &why), 3);
  EXPECT_EQ(ParseDesiredNodes(" 4\n", 4, &why), 4);
  EXPECT_TRUE(why.empty());
  EXPECT_EQ(ParseDesiredNodes("", 4, &why), -1);
  EXPECT_TRUE(why.empty()) << "an absent annotation is no refusal";
  for (const char* bad : {"two", "3x", "0", "-1", "5", "99999999999999999999", "3 4", "0x3"}) {
    EXPECT_EQ(ParseDesiredNodes(bad, 4, &why), -1) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

}  // namespace
}  // namespace ddp::worker::group
