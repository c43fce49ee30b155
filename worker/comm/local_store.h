// The group's store in the process that hosts it: the server on the rendezvous port (the
// rendezvous pod; rank 0 under recovery Restart) and a c10d::Store over the same keys for that
// process's own use (the authority, rank 0's Gloo), which never goes through a socket.
#ifndef DDP_WORKER_COMM_LOCAL_STORE_H_
#define DDP_WORKER_COMM_LOCAL_STORE_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "worker/store/server.h"
#include "worker/store/state.h"

namespace ddp::worker {

// A c10d::Store over `state` (a WatchableStore, comm/watch.h), with c10d's semantics; wait(),
// get() and watches block on the state for at most their timeout, and wait() and get() throw
// std::runtime_error past it. Keys are `prefix`/key when `prefix` is set. `keep` is held as long
// as the store (or a clone) lives: the server that serves the same keys. Thread-safe.
c10::intrusive_ptr<c10d::Store> LocalStore(std::shared_ptr<store::StoreState> state,
                                           std::chrono::milliseconds timeout,
                                           std::shared_ptr<void> keep = nullptr,
                                           const std::string& prefix = "");

struct HostedStore {
  std::shared_ptr<store::StoreServer> server;  // serves until this and every `local` are gone
  std::shared_ptr<store::StoreState> state;    // the keys (LocalStore of it, with a prefix)
  c10::intrusive_ptr<c10d::Store> local;       // the same keys, in process; keeps the server
};

// Hosts a new, empty store on `port` (0: any free port) with a new id (its epoch). Unavailable
// when the port cannot be bound.
StatusOr<HostedStore> HostStore(int port, std::chrono::milliseconds timeout,
                                store::ServerLimits limits = {});

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_LOCAL_STORE_H_
