// What an InPlace group holds open in its rendezvous pod, per pod and per trainer, and the
// bounds derived from it: the store server's connection bound, and the open files the pod needs
// (docs/in-place-recovery.md "Descriptors and connections"). Pure arithmetic; the counts are
// the clients' (worker/group/pod_client.cc, membership.cc), kept here in one place.
#ifndef DDP_WORKER_LAUNCH_RENDEZVOUS_LIMITS_H_
#define DDP_WORKER_LAUNCH_RENDEZVOUS_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace ddp::worker {

// A pod's store connections: its supervisor's calls and its PodWatch.
inline constexpr int kStoreConnectionsPerPod = 2;
// A trainer's store connections: its GroupMembership's calls and its watcher's.
inline constexpr int kStoreConnectionsPerTrainer = 2;
// A pod's presence connection (the presence listener, in the same process as the store).
inline constexpr int kPresenceConnectionsPerPod = 1;
// The store's connection bound never goes below this (the bound before it followed the size).
inline constexpr size_t kMinStoreConnections = 16384;
// Descriptors the rendezvous pod holds besides the group's: listeners, the HTTP server and its
// clients, the authority's and the pages' own, the process's files.
inline constexpr uint64_t kRendezvousOwnDescriptors = 256;

// The pods a round of `max_nodes` may have at once: its nodes and the most spares the operator
// allows (presence.h kMaxSparesPerRound).
int PodsAtMost(int max_nodes);

// Store connections a group of `pods` pods of `nproc` trainers holds: pods x (2 + 2 x nproc).
uint64_t StoreConnections(int pods, int nproc);

// The store server's bound for a round of up to `max_nodes` nodes of `nproc` trainers:
// twice StoreConnections(PodsAtMost(max_nodes), nproc), since a reconnect (a trainer's watcher
// after a lost reply, a supervisor after a store timeout) and a replaced pod's connections until
// keepalive reaps them overlap the live ones; at least kMinStoreConnections. 1,000 x 8: 38,304.
// REQUIRES: max_nodes >= 1, nproc >= 1.
size_t StoreConnectionBound(int max_nodes, int nproc);

// Open files the rendezvous pod needs for a round of up to `max_nodes` nodes of `nproc`
// trainers: the store's and presence connections, PodsAtMost x (3 + 2 x nproc), plus
// kRendezvousOwnDescriptors. 64 x 8: 2,688; 1,000 x 8: 20,472.
uint64_t RendezvousDescriptors(int max_nodes, int nproc);

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_RENDEZVOUS_LIMITS_H_
