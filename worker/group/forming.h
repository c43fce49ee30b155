// Creating a generation's communicator without being held by it (membership.cc JoinOnce).
// FencedStore cancels every wait that goes through the store; some waits do not: Gloo's passive
// side of a pair waits for its peer to connect, NCCL's init for every rank, each up to the
// collective timeout. A member lost between publishing its address and connecting held the
// others there, and the group could not re-form until that timeout. Here the creation runs on a
// thread of its own; the joining thread asks `cancelled` meanwhile and, once the generation is
// gone, leaves the creation to end on its thread (which discards whatever it makes) and goes on.
#ifndef DDP_WORKER_GROUP_FORMING_H_
#define DDP_WORKER_GROUP_FORMING_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "worker/comm/communicator.h"

namespace ddp::worker::group {

using MadeCommunicator = StatusOr<std::unique_ptr<Communicator>>;

// How often the joining thread asks whether the generation is gone while its communicator forms.
inline constexpr std::chrono::milliseconds kFormingPoll{100};

// Runs `make` on a new thread and returns what it made. When `cancelled` (asked every `interval`
// on the calling thread) gives a reason first, returns Unavailable("<reason> while its
// communicator formed...") at once; the creation then ends on its own thread, which aborts and
// destroys a communicator made too late. `make` must not refer to anything the caller may
// destroy once this returns. An exception from `cancelled` (a failed store) propagates, leaving
// the creation likewise. Thread-safe.
MadeCommunicator MakeUnlessCancelled(std::function<MadeCommunicator()> make,
                                     const std::function<std::string()>& cancelled,
                                     std::chrono::milliseconds interval = kFormingPoll);

// Creations left by a cancelled join that have not ended yet (for the log and tests).
size_t CreationsLeft();

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_FORMING_H_
