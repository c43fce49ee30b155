// `ddp-worker rendezvous`: the process of an InPlace job's rendezvous pod (DESIGN.md "Hot
// spares": a rendezvous that outlives any one training pod). It hosts the round's store (the
// project's own, worker/store/, on MASTER_PORT), the presence listener and the group authority (authority_loop.h),
// and serves /metrics with the group's series followed by rank 0's page, so the operator reads
// one page per job. It trains nothing and touches no GPU.
//
// It ends:
//   - with 0 once every rank finished training and the pods' supervisors have gone (or 30 s);
//   - on SIGTERM: at once when no member is stopping; when the job stops together, once the
//     members have gone (they need the store for their last checkpoint), at most 25 s.
// Exit 2 for an invalid environment, 75 when the store's port cannot be bound.
#ifndef DDP_WORKER_LAUNCH_RENDEZVOUS_POD_H_
#define DDP_WORKER_LAUNCH_RENDEZVOUS_POD_H_

namespace ddp::worker {

// The process of the rendezvous pod; returns its exit code (main.cc exits with it).
int RendezvousMain();

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_RENDEZVOUS_POD_H_
