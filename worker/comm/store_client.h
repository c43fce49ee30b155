// Connecting to c10d's TCPStore server, with one connection and no thread under LibTorch 1.x.
//
// LibTorch 1.13's own client (c10d::TCPStore) connects twice: once for queries and once for
// watchKey callbacks, served by a background thread. When the server goes away that thread
// spins on the closed socket (a core per process until the store object is destroyed) and, if
// the connection was reset rather than closed, throws out of the thread: std::terminate, and the
// whole process (a supervisor, a trainer) dies with the store. A store that dies is an event the
// group survives (the rendezvous pod lost, its node gone), so under 1.13 every process that is
// not the store's host talks to it through this client instead: the same wire protocol on one
// connection, every reply awaited with the store's timeout, and any error a C++ exception in the
// caller's thread. LibTorch 2.x's client has no callback thread and is used as is.
//
// watchKey is not supported (nothing here uses it). Thread-safe: one query at a time.
#ifndef DDP_WORKER_COMM_STORE_CLIENT_H_
#define DDP_WORKER_COMM_STORE_CLIENT_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace ddp::worker {

// A client connection to the TCPStore server at host:port: this file's client under LibTorch 1.x,
// c10d::TCPStore (isServer false, no waiting for workers) under 2.x. Retries a refused
// connection until `timeout` has passed (the server may still be starting), as c10d's client
// does; every later call waits for its reply at most `timeout` (the store's timeout; wait() takes
// its own). Throws std::runtime_error (1.x) or c10::Error (2.x) naming the address on failure.
c10::intrusive_ptr<c10d::Store> ConnectStore(const std::string& host, int port,
                                             std::chrono::milliseconds timeout);

// True where ConnectStore returns this file's client (LibTorch 1.x).
bool StoreClientIsOwn();

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_STORE_CLIENT_H_
