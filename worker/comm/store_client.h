// A connection to the group's store (worker/store/: the project's own server and wire
// protocol), as a c10d::Store, so Gloo and NCCL bootstrap through it like through c10d's
// TCPStore. The project owns both ends on every LibTorch it builds against (1.13 on CPU, 2.x on
// GPUs): c10d's own TCPStore client differs by version (2.x reads most replies with no timeout
// at all), and a store that freezes or dies is an event the group must survive (the rendezvous
// pod lost, its node gone). So every call here is bounded, on every version:
//   - connecting (name resolution included) and the greeting: within the connect timeout;
//   - set, add, check, compareSet, deleteKey, getNumKeys: their reply within the store's timeout
//     (getTimeout(); setTimeout changes it);
//   - wait(keys, t) and get(key) (which waits for the key up to the store's timeout): the server
//     answers "timed out" at t; the client gives up at t + kReplyGrace (a frozen server).
// Any failure throws std::runtime_error naming the address, and closes the connection: a late
// reply can never be read as the answer to the next call. Later calls throw at once; callers
// open a new connection. One connection, no thread. watchKey is not supported.
//
// Thread-safe: one call at a time on the connection.
#ifndef DDP_WORKER_COMM_STORE_CLIENT_H_
#define DDP_WORKER_COMM_STORE_CLIENT_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace ddp::worker {

// How long past a wait's own timeout the client still waits for the server to say so.
inline constexpr std::chrono::milliseconds kReplyGrace{1000};

// A client connection to the store at host:port, a WatchableStore (comm/watch.h). Retries a
// refused connection or a name not in DNS yet until `timeout` has passed (the server may still be
// starting); the greeting's reply within the same deadline. Later calls are bounded by `timeout`
// (the store's timeout) as said above. Every key is `prefix`/key when `prefix` is set (as
// c10d's PrefixStore joins them). Throws std::runtime_error naming the address on failure,
// including "not a ddp store" when the peer speaks another protocol (c10d's TCPStore, say).
c10::intrusive_ptr<c10d::Store> ConnectStore(const std::string& host, int port,
                                             std::chrono::milliseconds timeout,
                                             const std::string& prefix = "");

// The id the server said in its greeting (its epoch: a new one is a new, empty store), when
// `store` is a connection made by ConnectStore; "" otherwise.
std::string StoreServerId(const c10d::Store& store);

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_STORE_CLIENT_H_
