// The reducer: DDP's gradient synchronisation. Gradients live in flat bucket buffers (each
// parameter's .grad is a view into its bucket); an autograd post-hook on each parameter's grad
// accumulator marks it ready, and a bucket whose gradients are all ready is all-reduced at once,
// overlapping the rest of backward. It does not own the model, the optimizer or the loss.
#ifndef DDP_WORKER_DDP_REDUCER_H_
#define DDP_WORKER_DDP_REDUCER_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/comm/communicator.h"
#include "worker/ddp/buckets.h"

namespace torch::nn {
class Module;
}

namespace ddp::worker {

struct ReducerOptions {
  size_t bucket_cap_bytes = kDefaultBucketCapBytes;
  size_t first_bucket_cap_bytes = kDefaultFirstBucketCapBytes;
  // Optional, parallel to the params passed to the constructor: names used in error messages
  // (else its index in that list).
  std::vector<std::string> param_names;
  // After the first synchronised backward, rebuild the buckets in the order rank 0's gradients
  // arrived in it (one broadcast, once; every rank then has the same buckets). false keeps the
  // reverse-registration buckets for good.
  bool rebuild_buckets = true;
};

// Usage per optimizer step (every rank, same order):
//   reducer.set_sync(last_micro_step);           // false = no_sync: accumulate locally
//   reducer.PrepareForBackward();  loss.backward();
//   if (sync) DDP_RETURN_IF_ERROR(reducer.FinalizeBackward());   // grads now averaged
//   optimizer.step();  optimizer.zero_grad();
// and after any communication failure of the step: reducer.Abandon(), then a new Reducer.
// Zeroing grads in place or setting them to undefined are both fine: PrepareForBackward
// restores the bucket views. A parameter that got no gradient in a step is reduced as its current
// .grad (zeros after zero_grad), so every rank issues the same collectives in the same order.
// Thread-safety: hooks run on autograd threads; the other methods on one training thread, never
// during backward except the hooks. `comm` is not owned and must outlive the reducer.
class Reducer {
 public:
  struct Stats {
    // Time some bucket's all-reduce was in flight (queued or running): the union of the
    // launch -> completion intervals (MeasureAllReduce). Exposed: the part of that union after
    // backward ended (FinalizeBackward began), i.e. not overlapped with backward; always
    // <= allreduce_seconds. Hidden fraction = 1 - exposed / allreduce.
    double allreduce_seconds = 0;
    double exposed_allreduce_seconds = 0;
    int64_t allreduce_bytes = 0;           // bytes all-reduced this step (per rank)
    int buckets = 0;                       // buckets all-reduced this step
    int buckets_launched_in_backward = 0;  // launched by hooks, i.e. overlapped with backward
    double backward_seconds = 0;           // PrepareForBackward -> last gradient ready
    // Seconds after PrepareForBackward when bucket i was launched (in launch order == bucket
    // order: reverse parameter order until the rebuild, then the first step's arrival order).
    std::vector<double> bucket_launch_seconds;
  };

  // REQUIRES: params are leaves, dense, identical in shape/dtype/order on every rank. Ones without
  // requires_grad are ignored and a tensor listed twice (tied weights) counts once. Allocates the
  // bucket buffers and registers the hooks.
  Reducer(std::vector<at::Tensor> params, Communicator* comm, ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // false = no_sync: hooks do nothing and gradients accumulate locally in the buckets.
  void set_sync(bool sync);
  bool sync() const;

  // Call before each backward. Resets readiness and re-points each .grad at its bucket view.
  void PrepareForBackward();

  // Launches buckets the hooks did not (unused parameters), waits for all, and leaves every .grad
  // equal to the average over ranks. Returns the first communication error (then the
  // communicator is aborted and the worker should exit 75). A gradient that arrived twice since
  // PrepareForBackward (a second backward through the same parameter, which PyTorch rejects too)
  // is FailedPrecondition naming the parameter, returned after the step's collectives completed,
  // so every rank stays in step. In no_sync mode: OK, no-op. The first synchronised call with
  // rebuild_buckets also broadcasts rank 0's arrival order and rebuilds the buckets in it (the
  // gradients, carried over, are unchanged); errors of that broadcast as Communicator::Broadcast.
  Status FinalizeBackward();

  // The failure path: call once a collective of the step failed or the communicator was
  // aborted (instead of zeroing the gradients), before dropping the reducer. Abandoned
  // collectives may still write into the bucket buffers that every .grad is a view of (a Gloo
  // thread finishing its transfer, an NCCL kernel still draining after ncclCommAbort), so:
  //  - every parameter's .grad becomes undefined (as zero_grad(set_to_none)): the failed step's
  //    gradients are gone, and what the trainer sees, zeroes or copies (the next Reducer) is
  //    memory no collective references;
  //  - the bucket buffers and the Works launched on them move to a process-wide graveyard and are
  //    freed once every one of those collectives stopped (Work::IsCompleted). The graveyard is
  //    swept by every Abandon() and every new Reducer, on the caller's thread: nothing blocks and
  //    no thread is started. Buffers of a collective that never stops stay allocated;
  //  - the reducer is inert: its hooks are removed, PrepareForBackward does nothing and
  //    FinalizeBackward returns FailedPrecondition. Build a new one on the next communicator.
  // Never blocks; idempotent. REQUIRES: no backward running (no hook may fire concurrently).
  void Abandon();

  Stats last_stats() const;
  const std::vector<BucketSpec>& buckets() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Frees the buffers of abandoned reducers whose collectives have all stopped, and returns how
// many are still held (see Reducer::Abandon). Thread-safe.
size_t SweepAbandonedBuckets();

// Copies parameters AND buffers of rank 0 into `m` on every rank (at start and after resume), so
// replicas begin identical. Errors as Communicator::Broadcast.
Status BroadcastModule(torch::nn::Module& m, Communicator* comm);

}  // namespace ddp::worker

#endif  // DDP_WORKER_DDP_REDUCER_H_
