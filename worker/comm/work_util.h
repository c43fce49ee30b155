// Small pieces shared by the communicator implementations: a Work that is already finished, and
// coalescing many tensors into one flat buffer per dtype for broadcast.
#ifndef DDP_WORKER_COMM_WORK_UTIL_H_
#define DDP_WORKER_COMM_WORK_UTIL_H_

#include <ATen/core/Tensor.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "worker/comm/communicator.h"

namespace ddp::worker {

// A Work whose Wait() returns `status` at once (launch failures, size-1 groups).
std::shared_ptr<Work> MakeFinishedWork(Status status);

// Indices of `ts` grouped by (dtype, device), groups in order of first appearance, so every rank
// derives the same groups from same-shaped inputs.
std::vector<std::vector<size_t>> GroupByDtype(const std::vector<at::Tensor>& ts);

// One contiguous 1-D tensor holding ts[idx...] back to back (a copy).
at::Tensor FlattenTensors(const std::vector<at::Tensor>& ts, const std::vector<size_t>& idx);

// Copies the pieces of `flat` back into ts[idx...] (in place, keeping their storage).
void UnflattenInto(const at::Tensor& flat, std::vector<at::Tensor>& ts,
                   const std::vector<size_t>& idx);

// Distinguishes the keys of several communicators made on one store: the n-th communicator
// `rank` creates on `store` gets "n" (1, 2, ...). Every rank creates the same communicators in the
// same order (the Communicator contract), so all ranks of one group get the same number; counted
// in the store rather than in the process, so a restarted process agrees with the survivors on a
// fresh store (membership.h). Throws what the store throws.
std::string GroupSequence(c10d::Store& store, int rank);

// The message of a third-party exception without c10's appended C++ backtrace.
std::string BackendErrorText(const std::exception& e);

// "Timed out"/"timeout" in a backend's message -> DeadlineExceeded, else Unavailable.
Status StatusFromBackendError(const std::string& what, const std::string& message);

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_WORK_UTIL_H_
