// Communicator calling NCCL directly: CUDA tensors, one device per process. Its NCCL and CUDA
// calls go through NcclApi (nccl_api.h), so this file compiles without CUDA; created through
// factory.h.
#ifndef DDP_WORKER_COMM_NCCL_COMMUNICATOR_H_
#define DDP_WORKER_COMM_NCCL_COMMUNICATOR_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <string>

#include "worker/comm/communicator.h"
#include "worker/comm/nccl_api.h"

namespace ddp::worker {

// Ordering: a collective runs on this communicator's own stream, after everything already queued
// on the legacy default stream (where LibTorch computes unless a stream is set), via an event;
// Work::Wait polls the completion event and NCCL's async error with the deadline, then orders
// the default stream after the collective. On an error or timeout the communicator is aborted
// (ncclCommAbort), so no thread stays stuck in NCCL.
// Thread-safety: as Communicator; launches are serialised by a mutex.
class NcclCommunicator : public Communicator {
 public:
  // Rank 0 creates the unique id and publishes it through `store`; every rank then joins with
  // ncclCommInitRankConfig (non-blocking, polled against `timeout`). Errors: DeadlineExceeded
  // when a peer does not join in time; Unavailable for CUDA/NCCL failures (with a HINT).
  static StatusOr<std::unique_ptr<Communicator>> Create(c10::intrusive_ptr<c10d::Store> store,
                                                        int rank, int size, int device_index,
                                                        std::chrono::milliseconds timeout,
                                                        NcclApi* api);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor& t) override;
  Status Broadcast(std::vector<at::Tensor>& ts, int root) override;
  Status Barrier() override;
  void Abort() override;
  std::string name() const override { return "nccl"; }

  // Polls the communicator until it leaves ncclInProgress; on error or deadline aborts it.
  // Used by the Work objects; public so they need no friendship.
  Status PollReady(const std::string& what, std::chrono::steady_clock::time_point deadline);
  Status AsyncError(const std::string& what);
  int device_index() const { return device_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  NcclCommunicator(NcclApi* api, NcclCommHandle comm, CudaStreamHandle stream, int rank, int size,
                   int device, std::chrono::milliseconds timeout);
  bool OnDevice(const at::Tensor& t) const;
  // Enqueues `enqueue` on the communicator stream after the default stream's work.
  std::shared_ptr<Work> Launch(const std::string& what, std::vector<at::Tensor> keep_alive,
                               const std::function<int()>& enqueue);

 public:
  NcclApi* api_;
 private:
  NcclCommHandle comm_;
  CudaStreamHandle stream_;
  int rank_;
  int size_;
  int device_;
  std::chrono::milliseconds timeout_;
  float* barrier_buffer_ = nullptr;  // one device float for Barrier()
  std::mutex mu_;
  std::atomic<bool> aborted_{false};
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_NCCL_COMMUNICATOR_H_
