// The generation a resize moves the group to (authority_loop.h AdvancePastResize, review F8): it
// begins after the authority wrote the new size, whoever ended the generation before it. The
// interleaving is the test's own, step by step, on the project's in-process store: the authority
// reads the generation, a member whose collective failed ends it and reads the size, then the
// authority writes the size and advances. A member reads the generation, then the size
// (membership.cc Join), so it trains at the new size in any generation that began after the write.
#include <gtest/gtest.h>

#include <cstdlib>

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
  // What a member joining now reads: the generation, then the size (membership.cc Join).
  std::pair<int64_t, int> Join() {
    const int64_t g = Generation();
    return {g, std::atoi(Text(s->get(kWorldKey)).c_str())};
  }
};

TEST(AdvancePastResizeTest, AloneItEndsTheGenerationItRead) {
  Store st(3, 4);
  const int64_t moved = st.Generation();
  st.s->set(kWorldKey, Bytes("3"));
  EXPECT_EQ(AdvancePastResize(*st.s, moved), 4);
  EXPECT_EQ(st.Join(), (std::pair<int64_t, int>{4, 3}));
}

// Before (a plain TryAdvance of `moved`), the authority's advance was a no-op here and the group
// formed in generation 4, which the member joined at the old size: its communicator failed only
// after the set-up store's wait, then the group re-formed.
TEST(AdvancePastResizeTest, AMembersAdvanceBetweenTheReadAndTheWriteIsNotTheResizesGeneration) {
  Store st(3, 4);
  const int64_t moved = st.Generation();            // 1. the authority reads generation 3
  ASSERT_TRUE(TryAdvance(*st.s, 3));                // 2. a member's collective failed: 3 ends
  const auto stale = st.Join();                     // 3. a member joins 4 at the old size
  EXPECT_EQ(stale, (std::pair<int64_t, int>{4, 4}));
  st.s->set(kWorldKey, Bytes("3"));                 // 4. the authority writes the new size
  const int64_t next = AdvancePastResize(*st.s, moved);  // 5. and moves the generation
  EXPECT_EQ(next, 5);
  EXPECT_GT(st.Generation(), stale.first) << "the generation joined at the old size ended";
  EXPECT_EQ(st.Join(), (std::pair<int64_t, int>{5, 3}));
}

TEST(AdvancePastResizeTest, TwoAdvancesInBetweenEndTheLatestToo) {
  Store st(3, 4);
  const int64_t moved = st.Generation();
  ASSERT_TRUE(TryAdvance(*st.s, 3));
  ASSERT_TRUE(TryAdvance(*st.s, 4));
  EXPECT_EQ(st.Join(), (std::pair<int64_t, int>{5, 4}));
  st.s->set(kWorldKey, Bytes("3"));
  EXPECT_EQ(AdvancePastResize(*st.s, moved), 6);
  EXPECT_EQ(st.Join(), (std::pair<int64_t, int>{6, 3}));
}

}  // namespace
}  // namespace ddp::worker::group
