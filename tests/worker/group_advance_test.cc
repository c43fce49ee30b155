// The generation a resize moves the group to (authority_loop.h AdvancePastResize, review F8, I2):
// every member of a generation forms at the size its mover wrote, and the group forms at a new
// size only in a generation begun after the authority wrote it, whoever ended the ones before.
// The interleavings are the test's own, step by step, on the project's in-process store: the
// authority reads the generation, members whose collective failed end generations, then the
// authority writes the size and advances.
#include <gtest/gtest.h>

#include "worker/comm/local_store.h"
#include "worker/group/authority_loop.h"
#include "worker/group/keys.h"

namespace ddp::worker::group {
namespace {

struct Store {
  c10::intrusive_ptr<c10d::Store> s =
      LocalStore(std::make_shared<ddp::store::StoreState>(), std::chrono::seconds(5));
  // A store at generation `g`, the group at `world` ranks.
  Store(int64_t g, int world) {
    s->set(kWorldKey, Bytes(std::to_string(world)));
    s->add(kGenKey, g);
  }
  int64_t Generation() { return s->add(kGenKey, 0); }
  // What a member joining now reads: the generation, then its size (membership.cc JoinOnce).
  std::pair<int64_t, int> Join() {
    const int64_t g = Generation();
    return {g, GenerationSize(*s, g)};
  }
  void Resize(int world) { s->set(kWorldKey, Bytes(std::to_string(world))); }
};

using Joined = std::pair<int64_t, int>;

TEST(GenerationSizeTest, AStoresFirstGenerationFormsAtTheGroupsSize) {
  Store st(0, 4);
  EXPECT_EQ(st.Join(), (Joined{0, 4}));
  st.Resize(3);  // a new store's authority seeding the old group's size (SeedSize)
  EXPECT_EQ(st.Join(), (Joined{0, 3}));
}

TEST(GenerationSizeTest, AGenerationKeepsTheSizeItBeganWithWhateverIsWrittenLater) {
  Store st(3, 4);
  ASSERT_TRUE(TryAdvance(*st.s, 3));
  EXPECT_FALSE(TryAdvance(*st.s, 3)) << "one mover per generation";
  st.Resize(3);
  EXPECT_EQ(st.Join(), (Joined{4, 4})) << "every member of generation 4 forms at 4 ranks";
}

TEST(AdvancePastResizeTest, AloneItEndsTheGenerationItRead) {
  Store st(3, 4);
  const int64_t moved = st.Generation();
  st.Resize(3);
  EXPECT_EQ(AdvancePastResize(*st.s, moved, 3), 4);
  EXPECT_EQ(st.Join(), (Joined{4, 3}));
}

// On main (the authority's TryAdvance(moved)) its advance was a no-op here and the group formed
// in generation 4, which a member had joined at the old size: its communicator failed only after
// the set-up store's wait, then the group re-formed.
TEST(AdvancePastResizeTest, AGenerationAMemberBeganBeforeTheNewSizeEndsToo) {
  Store st(3, 4);
  const int64_t moved = st.Generation();  // 1. the authority reads generation 3
  ASSERT_TRUE(TryAdvance(*st.s, 3));      // 2. a member's collective failed: 3 ends
  EXPECT_EQ(st.Join(), (Joined{4, 4}));   // 3. members join 4 at the old size
  st.Resize(3);                           // 4. the authority writes the new size
  EXPECT_EQ(AdvancePastResize(*st.s, moved, 3), 5);  // 5. and moves the generation
  EXPECT_EQ(st.Join(), (Joined{5, 3}));
}

// What the first fix of F8 got wrong (reverted on the kit: a growth's generation, marked for a
// leave at a step agreement, was moved past): a member that began the generation after the new
// size was written began it at the new size, and the authority leaves it be.
TEST(AdvancePastResizeTest, AGenerationAMemberBeganAtTheNewSizeStands) {
  Store st(3, 2);
  const int64_t moved = st.Generation();
  st.Resize(3);
  st.s->set(GracefulKey(moved + 1), Bytes("1"));
  ASSERT_TRUE(TryAdvance(*st.s, 3));  // a member ends 3 after the write
  EXPECT_EQ(AdvancePastResize(*st.s, moved, 3), 4);
  EXPECT_EQ(st.Join(), (Joined{4, 3}));
  EXPECT_TRUE(st.s->check({GracefulKey(4)})) << "the growth's generation is the one formed";
}

TEST(AdvancePastResizeTest, TwoGenerationsBegunAtTheOldSizeBothEnd) {
  Store st(3, 4);
  const int64_t moved = st.Generation();
  ASSERT_TRUE(TryAdvance(*st.s, 3));
  ASSERT_TRUE(TryAdvance(*st.s, 4));
  EXPECT_EQ(st.Join(), (Joined{5, 4}));
  st.Resize(3);
  EXPECT_EQ(AdvancePastResize(*st.s, moved, 3), 6);
  EXPECT_EQ(st.Join(), (Joined{6, 3}));
}

}  // namespace
}  // namespace ddp::worker::group
