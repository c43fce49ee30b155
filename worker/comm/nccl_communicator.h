// Communicator calling NCCL directly: CUDA tensors, one device per process. Its NCCL and CUDA
// calls go through NcclApi (nccl_api.h), so this file compiles, and its locking is unit-tested,
// without CUDA; created through factory.h.
#ifndef DDP_WORKER_COMM_NCCL_COMMUNICATOR_H_
#define DDP_WORKER_COMM_NCCL_COMMUNICATOR_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "worker/comm/communicator.h"
#include "worker/comm/nccl_api.h"

namespace ddp::worker {

// Ordering: a collective runs on this communicator's own stream, after everything already queued
// on the legacy default stream (where LibTorch computes unless a stream is set), via an event;
// Work::Wait polls the completion event and NCCL's async error with the deadline, then orders
// the default stream after the collective. On an error or timeout the communicator is aborted
// (ncclCommAbort), so no thread stays stuck in NCCL.
//
// Thread-safety. NCCL allows one thread at a time per communicator ("it is not allowed to issue
// NCCL operations to a single communicator in parallel with multiple threads"; a group must be
// issued by one thread) and, while a call is ncclInProgress, nothing but ncclCommGetAsyncError
// until it leaves that state (NCCL user guide: Thread Safety; ncclCommGetAsyncError). So:
//  1. every NCCL call on the communicator is made under one mutex, held for that call only (the
//     communicator is non-blocking: no call but ncclCommAbort/ncclCommDestroy waits for peers);
//  2. launches (the autograd thread's buckets, the training thread's agreement) are serialised
//     by a second mutex held across the enqueue and its ncclInProgress phase;
//  3. Abort() (any thread: the membership watcher) takes the first mutex, calls ncclCommAbort and
//     forgets the handle: every later call returns Unavailable without touching NCCL. It waits
//     for at most one non-blocking call of another thread; after it returns no thread touches the
//     freed communicator, and every Wait returns Unavailable within one poll (50 us).
//
// Memory: a collective reads and writes its tensor on the communicator's stream until its end
// event completes, and that can be after Wait returned an error: an aborted NCCL kernel stops,
// but not at once. The Work keeps the tensor alive until then (a dropped Work hands it to the
// communicator, which frees it once the event completed; one still pending when the communicator
// is destroyed is never freed). The caller must not reuse the tensor's memory for anything else
// until Work::IsCompleted() (Reducer::Abandon in reducer.h does this for the gradient buckets).
// Broadcast, synchronous and writing into the caller's tensors, returns after a failure only
// once its kernel stopped (at most the timeout later).
//
// Tested without a GPU (nccl_communicator_test.cc, a fake NcclApi): the locking, Abort racing
// with Wait and launches, the ncclInProgress rule, and clean-up of every failed creation. Only a
// GPU can prove what the fake assumes of NCCL and CUDA: that ncclCommAbort releases a kernel
// blocked on a dead peer and its end event then completes (nccl_test.cc, label gpu).
class NcclCommunicator : public Communicator {
 public:
  // Rank 0 creates the unique id and publishes it through `store`; every rank then joins with
  // ncclCommInitRankConfig (non-blocking, polled against `timeout`). Errors: DeadlineExceeded
  // when a peer does not join in time; Unavailable for CUDA/NCCL failures (with a HINT). A
  // failure releases everything created (the NCCL communicator is aborted: one that never became
  // ready cannot be destroyed). `api` is not owned and must outlive the communicator and its
  // Works (RealNcclApi() does).
  static StatusOr<std::unique_ptr<Communicator>> Create(c10::intrusive_ptr<c10d::Store> store,
                                                        int rank, int size, int device_index,
                                                        std::chrono::milliseconds timeout,
                                                        NcclApi* api);
  // ncclCommDestroy once the stream is idle; when it is still busy after the timeout (a
  // collective nobody waited for is stuck), ncclCommAbort instead. REQUIRES: no other thread
  // uses the communicator (Abort included).
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor& t) override;
  Status Broadcast(std::vector<at::Tensor>& ts, int root) override;
  Status Barrier() override;
  void Abort() override;
  std::string name() const override { return "nccl"; }

  // The state the communicator shares with its Works (nccl_communicator.cc).
  struct Shared;

 private:
  NcclCommunicator(std::shared_ptr<Shared> shared, int rank, int size);
  bool OnDevice(const at::Tensor& t) const;
  // Enqueues `enqueue(comm, stream)` on the communicator's stream after the default stream's
  // work, under the NCCL mutex; its result is an ncclResult_t.
  std::shared_ptr<Work> Launch(const std::string& what, std::vector<at::Tensor> keep_alive,
                               const std::function<int(NcclCommHandle, CudaStreamHandle)>& enqueue);

  std::shared_ptr<Shared> shared_;
  int rank_;
  int size_;
  void* barrier_buffer_ = nullptr;  // one device float for Barrier()
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_NCCL_COMMUNICATOR_H_
