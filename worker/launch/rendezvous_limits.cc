// The rendezvous pod's bounds (rendezvous_limits.h).
#include "worker/launch/rendezvous_limits.h"

#include <algorithm>

#include "worker/group/presence.h"

namespace ddp::worker {

int PodsAtMost(int max_nodes) { return std::max(max_nodes, 1) + group::kMaxSparesPerRound; }

uint64_t StoreConnections(int pods, int nproc) {
  return static_cast<uint64_t>(std::max(pods, 0)) *
         (kStoreConnectionsPerPod + kStoreConnectionsPerTrainer * static_cast<uint64_t>(std::max(nproc, 1)));
}

size_t StoreConnectionBound(int max_nodes, int nproc) {
  const uint64_t want = 2 * StoreConnections(PodsAtMost(max_nodes), nproc);
  return static_cast<size_t>(std::max<uint64_t>(want, kMinStoreConnections));
}

uint64_t RendezvousDescriptors(int max_nodes, int nproc) {
  const int pods = PodsAtMost(max_nodes);
  return StoreConnections(pods, nproc) + kPresenceConnectionsPerPod * static_cast<uint64_t>(pods) +
         kRendezvousOwnDescriptors;
}

}  // namespace ddp::worker
