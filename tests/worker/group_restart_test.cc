// Rule 5b (worker/group/authority.h): a trainer restarted in place under a generation that holds
// its predecessor moves the generation (review F9). One row each; expected actions are written
// from the rule. The first two fail on the code before it (no rule read a changed identity: after
// a store replacement the new incarnation, whose predecessor never arrived in the new store, did
// not move the generation either, and NCCL peers waited in the collective for its timeout).
#include <gtest/gtest.h>

#include "tests/worker/authority_rows.h"
#include "worker/group/authority.h"

namespace ddp::worker::group {
namespace {

using rows::Group;
using rows::Id;

AuthoritySettings Room(int nodes) {
  AuthoritySettings s;
  s.nodes = nodes;
  return s;
}

// Two pods of one trainer each, w1's trainer restarted in place (incarnation 1) while the
// generation was the current one; `arrived`: who arrived on rank 1 in it.
GroupView Restarted(const std::string& arrived) {
  GroupView v = Group(2, 0, 2);
  v.trainers.resize(2);
  v.trainers[0].identity = Id("w0") + "/0/0";
  v.trainers[1].identity = Id("w1") + "/0/1";
  v.trainers[1].restarted = true;
  v.trainers[1].arrived = arrived;
  return v;
}

// A store that replaced a lost one, where no generation formed: the group trains on in the one
// it formed in the old store.
GroupView InTheOldStoresGeneration(GroupView v) {
  v.previous = {{0, Id("w0")}, {1, Id("w1")}};
  v.formed = v.ever_formed = false;
  return v;
}

TEST(RestartTest, UnderTheLostStoresGenerationTheGenerationMoves) {
  const Actions a = Decide(InTheOldStoresGeneration(Restarted("")), Room(2));
  EXPECT_TRUE(a.advance);
  EXPECT_TRUE(a.fence.empty()) << "a restart in place is no loss";
  EXPECT_TRUE(a.assign.empty());
  EXPECT_TRUE(a.stalls.empty());
}

TEST(RestartTest, ThereTheNewIncarnationsOwnArrivalChangesNothing) {
  // It joined this store's generation at once; the group is still in the old store's.
  const Actions a = Decide(InTheOldStoresGeneration(Restarted(Id("w1") + "/0/1")), Room(2));
  EXPECT_TRUE(a.advance);
}

TEST(RestartTest, AGenerationHoldingThePredecessorMoves) {
  // What the new incarnation does itself too (membership.cc); one mover per generation.
  const Actions a = Decide(Restarted(Id("w1") + "/0/0"), Room(2));
  EXPECT_TRUE(a.advance);
  EXPECT_FALSE(a.graceful);
}

TEST(RestartTest, AGenerationThePredecessorLeftAlreadyTrainsOn) {
  EXPECT_TRUE(Decide(Restarted(""), Room(2)).empty()) << "it ended with the predecessor";
  EXPECT_TRUE(Decide(Restarted(Id("w1") + "/0/1"), Room(2)).empty()) << "the new one is in it";
}

TEST(RestartTest, NoRestartNoMove) {
  GroupView v = InTheOldStoresGeneration(Restarted(""));
  v.trainers[1].restarted = false;
  EXPECT_FALSE(Decide(v, Room(2)).advance);
}

// A growth of a formed generation in the same decision as a restart is not graceful: the
// generation the restart ends must end at once.
TEST(RestartTest, AGrowthBesideARestartIsNotGraceful) {
  GroupView v = Group(2, 1, 3);
  v.trainers.resize(2);
  v.trainers[1].identity = Id("w1") + "/0/1";
  v.trainers[1].restarted = true;
  v.trainers[1].arrived = Id("w1") + "/0/0";
  const Actions a = Decide(v, Room(4));
  EXPECT_EQ(a.resize_to, 3);
  EXPECT_TRUE(a.advance);
  EXPECT_FALSE(a.graceful);
}

}  // namespace
}  // namespace ddp::worker::group
