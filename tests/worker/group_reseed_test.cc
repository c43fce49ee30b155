// Invariant I4 (worker/group/authority.h): a store that replaced a lost rendezvous pod knows what
// the old one knew. The members' copy carries the group's size; an old holder that registers
// again gets its node rank back before the pod created for that rank; a shrink never cuts off a
// rank kept for an old member. Expected actions are written from the invariant, not read off the
// program. The first three rows fail on the code before it (the review's F1 scenarios A and C,
// and F4).
#include <gtest/gtest.h>

#include "tests/worker/authority_rows.h"
#include "worker/group/authority.h"
#include "worker/group/keys.h"
#include "worker/group/rejoin.h"

namespace ddp::worker::group {
namespace {

using rows::Assigns;
using rows::Id;
using rows::Pod;
using rows::Strings;

Strings Fenced(const Actions& a) {
  Strings out;
  for (const auto& [id, why] : a.fence) out.push_back(id);
  return out;
}

// A new store with every pod of `holders` (node rank -> pod name, as the copy names them)
// registered again, each writing the node rank it holds as its home (pod_client.cc), none
// holding a rank in this store yet. `nodes`: the copy's size.
GroupView NewStore(const std::vector<std::string>& holders, int room, int nodes) {
  GroupView v;
  v.node_holders.assign(static_cast<size_t>(room), "");
  v.ever_held.assign(static_cast<size_t>(room), false);
  for (size_t n = 0; n < holders.size(); ++n) {
    v.pods[holders[n]] = Pod(holders[n], static_cast<int>(n));
    v.previous[static_cast<int>(n)] = Id(holders[n]);
  }
  v.nodes = nodes;
  v.desired_nodes = room;
  v.world = nodes;
  v.previous_seconds = 0.5;  // inside the rejoin window
  return v;
}

AuthoritySettings Room(int nodes, int min_nodes) {
  AuthoritySettings s;
  s.nodes = nodes;
  s.min_nodes = min_nodes;
  return s;
}

// F1 A: spare s0 took node rank 1 after w1 was lost; w1 was recreated (a new identity, created
// for node rank 1) and idles. Both register with the new store claiming node rank 1. The spare
// holds the state: it gets rank 1 back, nobody is fenced, the recreated w1 stays a spare.
TEST(ReseedTest, TheSpareThatTookARankGetsItBackNotThePodCreatedForIt) {
  GroupView v = NewStore({"w0", "s0"}, 2, 2);
  v.pods["w1"] = Pod("w1", 1);
  v.pods["w1"].identity = "w1/new";
  const Actions a = Decide(v, Room(2, 0));
  EXPECT_EQ(Assigns(a), (Strings{"0=" + Id("w0"), "1=" + Id("s0")}));
  EXPECT_TRUE(a.fence.empty());
  EXPECT_TRUE(a.verdicts.empty());
  EXPECT_FALSE(a.advance) << "the group trains on in the generation it formed";
}

// F1 C: at 12 node ranks, w11 moved into hole 2 (rule 10) and the group runs 11; the replacement
// w2 is registered. Both claim node rank 2; "w11" sorts before "w2". The mover keeps rank 2 (its
// trainers hold rank 2's state); w2 grows the group back to 12 in the same decision.
TEST(ReseedTest, APodMovedByAShrinkKeepsItsRankWhenItsNameSortsFirst) {
  std::vector<std::string> holders;
  for (int n = 0; n < 11; ++n) holders.push_back("w" + std::to_string(n == 2 ? 11 : n));
  GroupView v = NewStore(holders, 12, 11);
  v.pods["w2"] = Pod("w2", 2);
  v.pods["w2"].identity = "w2/new";
  const Actions a = Decide(v, Room(12, 6));
  Strings want;
  for (int n = 0; n < 11; ++n) want.push_back(std::to_string(n) + "=" + Id(holders[static_cast<size_t>(n)]));
  want.push_back("11=w2/new");  // rule 9b: an idle worker pod whose own rank is held
  EXPECT_EQ(Assigns(a), want);
  EXPECT_TRUE(a.fence.empty());
  EXPECT_TRUE(a.moves.empty());
  EXPECT_EQ(a.resize_to, 12);
}

// F4: in a new store w1 registered again and then died, while w3 is still inside its rejoin
// window. Shrinking 4 -> 3 would cut off node rank 3, which w3 may still come back to: the shrink
// waits for the window's end. Then w3 is lost too and the group shrinks by both.
TEST(ReseedTest, AShrinkWaitsForARankKeptForAnOldMember) {
  GroupView v = NewStore({"w0", "w1", "w2", "w3"}, 4, 4);
  v.pods.erase("w3");
  v.node_holders = {Id("w0"), Id("w1"), Id("w2"), ""};
  v.pods["w1"].presence_closed = true;
  const Actions a = Decide(v, Room(4, 2));
  EXPECT_EQ(Fenced(a), Strings{Id("w1")});
  EXPECT_EQ(Assigns(a), Strings{"1="});
  EXPECT_EQ(a.resize_to, -1);
  EXPECT_TRUE(a.moves.empty());
  // The window over: w3 is lost as well; holes 1 and 3, so the group goes on at 2, w2 in hole 1.
  v.node_holders[1] = "";
  v.fenced = {Id("w1")};
  v.pods["w1"].verdict = kVerdictFenced;
  v.previous_seconds = RejoinWindowSeconds(Room(4, 2)) + 1;
  const Actions b = Decide(v, Room(4, 2));
  EXPECT_EQ(Fenced(b), Strings{Id("w3")});
  EXPECT_EQ(Assigns(b), (Strings{"2=", "1=" + Id("w2")}));
  EXPECT_EQ(b.resize_to, 2);
}

// F1 B, the rules' half (the size itself comes from the copy: SeedNodes below, and the
// authority's adapter in group_store_test.cc): the group shrank 4 -> 3 (w3 moved to 1) before the
// store was lost; at the copy's size, the old holders get their ranks back and the replacement
// w1 grows the group back to 4.
TEST(ReseedTest, AtTheCopysSizeTheShrunkGroupStillGrowsBack) {
  GroupView v = NewStore({"w0", "w3", "w2"}, 4, 3);
  v.pods["w1"] = Pod("w1", 1);
  v.pods["w1"].identity = "w1/new";
  const Actions a = Decide(v, Room(4, 2));
  EXPECT_EQ(Assigns(a), (Strings{"0=" + Id("w0"), "1=" + Id("w3"), "2=" + Id("w2"), "3=w1/new"}));
  EXPECT_EQ(a.resize_to, 4);
  EXPECT_TRUE(a.fence.empty());
}

TEST(ReseedTest, TheCopyCarriesTheGroupsSize) {
  const std::string text = FormatMembers(9, {Id("w0"), Id("w3"), Id("w2"), ""}, 3);
  EXPECT_EQ(text, "9:3;0=w0/u,1=w3/u,2=w2/u");
  auto m = ParseMembers(text, 4);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->generation, 9);
  EXPECT_EQ(m->nodes, 3);
  EXPECT_EQ(m->holders.size(), 3u);
  // An older authority's copy (no size) still names its holders.
  auto old = ParseMembers("9;0=w0/u", 4);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->nodes, -1);
  for (const char* bad : {"9:;0=w0/u", "9:0;", "9:5;0=w0/u", "9:x;", ":3;", "9:3:3;"}) {
    EXPECT_FALSE(ParseMembers(bad, 4).has_value()) << bad;
  }
}

TEST(ReseedTest, TheNewStoreStartsAtTheCopysSizeWhenItIsOneToTrust) {
  const AuthoritySettings s = Room(4, 2);
  auto seed = [&](const std::string& copy) {
    return SeedNodes(NewestMembers({copy}, s.nodes), s, 4);
  };
  EXPECT_EQ(seed("9:3;0=a/u,1=b/u,2=c/u"), 3);
  EXPECT_EQ(seed("9:4;0=a/u"), 4);
  EXPECT_EQ(seed("9;0=a/u"), 4) << "no size said: the size the store started at";
  EXPECT_EQ(seed("9:2;0=a/u,3=b/u"), 4) << "a holder past its own size: not trusted";
  EXPECT_EQ(seed("junk"), 4);
}

}  // namespace
}  // namespace ddp::worker::group
