// The collective-communication interface the reducer and the trainer talk to. Implementations:
// Gloo (c10d ProcessGroupGloo, CPU tensors) and NCCL (called directly, CUDA tensors). Creation
// lives in factory.h; this header knows no backend.
#ifndef DDP_WORKER_COMM_COMMUNICATOR_H_
#define DDP_WORKER_COMM_COMMUNICATOR_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::worker {

// One asynchronous collective in flight. Owned by whoever launched it (shared with the backend).
// Not thread-safe: wait on it from one thread.
class Work {
 public:
  virtual ~Work() = default;

  // Blocks until the collective finished, at most the communicator's timeout.
  // OK: the result is in the tensor and may be read on the caller's compute stream.
  // DeadlineExceeded: the timeout passed (a peer is stuck); Unavailable: a peer was lost or the
  // backend failed. After an error the communicator is aborted and must not be used again; the
  // worker exits 75. Never blocks forever. Calling Wait again returns the same Status.
  virtual Status Wait() = 0;

  // True once the collective no longer reads or writes its tensors: it finished, failed, or was
  // aborted and has stopped. Until then the tensors' memory must not be reused, even after Wait
  // returned an error (an aborted collective may still be draining). Never blocks.
  virtual bool IsCompleted() = 0;

  // Seconds from launch to completion as the backend measured it; 0 until completed.
  virtual double seconds() const = 0;
};

// A fixed group of `size()` processes. The rule of every collective library applies: every rank
// calls the same collectives, with tensors of the same shape and dtype, in the same order.
// Thread-safety: launching collectives from one thread at a time (the autograd thread or the
// training thread, not both concurrently) is supported; Abort() may be called from any thread.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sums `t` over all ranks, in place, asynchronously. `t` must stay alive and untouched until
  // Wait() returns OK or, after an error, until the Work IsCompleted(). REQUIRES: t is dense and
  // contiguous, on this communicator's device.
  // Launch failures are reported by the returned Work's Wait(), never by a null pointer.
  virtual std::shared_ptr<Work> AllReduceSumAsync(at::Tensor& t) = 0;

  // Copies every tensor of rank `root` into the same-position tensor of every other rank, in
  // place, and waits. Tensors may differ in shape and dtype from each other (they are coalesced
  // per dtype internally). Errors as Work::Wait.
  virtual Status Broadcast(std::vector<at::Tensor>& ts, int root) = 0;

  // Returns once every rank reached the barrier, or an error as Work::Wait.
  virtual Status Barrier() = 0;

  // Aborts outstanding and future collectives so no thread stays blocked in them. Idempotent.
  virtual void Abort() = 0;

  // "gloo" or "nccl".
  virtual std::string name() const = 0;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_COMMUNICATOR_H_
