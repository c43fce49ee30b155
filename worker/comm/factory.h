// Picks and creates the communicator for a device: the one place that knows which backends were
// compiled in (DDP_HAVE_NCCL).
#ifndef DDP_WORKER_COMM_FACTORY_H_
#define DDP_WORKER_COMM_FACTORY_H_

#include <c10/core/Device.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <optional>

#include "common/status.h"
#include "worker/comm/communicator.h"

namespace ddp::worker {

// CPU device -> Gloo; CUDA device -> NCCL (on device.index()) when built with NCCL, else
// FailedPrecondition with a HINT. `timeout` bounds every collective (Work::Wait) and the setup.
// `store` is usually Rendezvous::store; communicator keys are namespaced inside it, so several
// communicators may share one store if each is created by all ranks in the same order.
// Errors: InvalidArgument for rank/size out of range; Unavailable/DeadlineExceeded when the
// peers cannot be reached during setup.
StatusOr<std::unique_ptr<Communicator>> MakeCommunicator(c10::intrusive_ptr<c10d::Store> store,
                                                         int rank, int size,
                                                         const c10::Device& device,
                                                         std::chrono::milliseconds timeout);

// Whether MakeCommunicator can create a communicator for CUDA devices in this build.
bool HaveNccl();

// Bytes in use on a CUDA `device` as the CUDA runtime reports them (total - free), for the
// worker's memory gauge. nullopt for CPU devices, for builds without CUDA, and when the runtime
// call fails. Lives here because this file alone knows whether CUDA was compiled in.
std::optional<int64_t> DeviceMemoryInUse(const c10::Device& device);

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_FACTORY_H_
