// The rendezvous pod's bounds follow the group's size (worker/launch/rendezvous_limits.h): the
// expected figures are computed here from the clients' counts (a pod: its supervisor's and its
// PodWatch's store connections and its presence connection; a trainer: its membership's and its
// watcher's), not read from the code under test.
#include <gtest/gtest.h>

#include "worker/group/presence.h"
#include "worker/launch/rendezvous_limits.h"

namespace ddp::worker {
namespace {

constexpr uint64_t kSpares = group::kMaxSparesPerRound;

TEST(RendezvousLimits, TheStoreBoundHoldsTheDocumentedThousandPodsOfEight) {
  // docs/in-place-recovery.md: the store holds about 1,000 pods x 8. Each pod holds 2 store
  // connections and each trainer 2: 1,000 x 18 = 18,000, with the spares 1,064 x 18 = 19,152,
  // above the 16,384 the bound was before it followed the size.
  const uint64_t live = (1000 + kSpares) * (2 + 2 * 8);
  EXPECT_EQ(StoreConnections(1000 + kSpares, 8), live);
  EXPECT_GT(live, 16384u);
  EXPECT_EQ(StoreConnectionBound(1000, 8), 2 * live);  // room for reconnects to overlap
  EXPECT_GE(StoreConnectionBound(1000, 8), 19000u);
}

TEST(RendezvousLimits, TheStoreBoundNeverFallsBelowTheOldOneForSmallGroups) {
  EXPECT_EQ(StoreConnectionBound(1, 1), 16384u);
  EXPECT_EQ(StoreConnectionBound(64, 8), 16384u);  // 2 x 128 x 18 = 4,608
  EXPECT_EQ(StoreConnectionBound(4096, 1), 2u * (4096 + kSpares) * 4);
}

TEST(RendezvousLimits, TheBoundGrowsWithTheGroupAndAlwaysHoldsWhatItsPodsOpen) {
  for (int nodes : {1, 8, 53, 64, 256, 512, 1000, 1024, 2048}) {
    for (int nproc : {1, 2, 4, 8}) {
      const uint64_t open = (nodes + kSpares) * (2 + 2 * static_cast<uint64_t>(nproc));
      EXPECT_GE(StoreConnectionBound(nodes, nproc), 2 * open) << nodes << " x " << nproc;
      EXPECT_LE(StoreConnectionBound(nodes, nproc), StoreConnectionBound(nodes + 1, nproc));
      EXPECT_LE(StoreConnectionBound(nodes, nproc), StoreConnectionBound(nodes, nproc + 1));
    }
  }
}

TEST(RendezvousLimits, TheDescriptorsNeededCountEveryPodsSocketsAndPassTheDefaultSoftLimit) {
  // 3 + 2 x 8 = 19 a pod: a soft limit of 1024 (containerd 2.x's default) is passed by the
  // group's own sockets at 53 pods, spares aside; the figure counts the spares and the pod's own.
  EXPECT_EQ(RendezvousDescriptors(64, 8), (64 + kSpares) * 19 + kRendezvousOwnDescriptors);
  EXPECT_EQ(RendezvousDescriptors(1000, 8), (1000 + kSpares) * 19 + kRendezvousOwnDescriptors);
  EXPECT_GT(RendezvousDescriptors(54, 8), 1024u);
}

}  // namespace
}  // namespace ddp::worker
