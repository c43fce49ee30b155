// Rendezvous: turns the torch-style environment (MASTER_ADDR, RANK, ...) into a key-value store
// that every rank of one round shares (the group's own store, worker/store/, prefixed by the
// round). It does not create
// communicators (factory.h) and never reads env after RendezvousConfigFromEnv().
#ifndef DDP_WORKER_COMM_RENDEZVOUS_H_
#define DDP_WORKER_COMM_RENDEZVOUS_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

namespace ddp::worker {

// Env var names (torch's verbatim; ours DDP_*). Written by the operator's planner or by
// `ddp-worker launch`, read here only.
inline constexpr char kEnvMasterAddr[] = "MASTER_ADDR";        // host of the store (rank 0)
inline constexpr char kEnvMasterPort[] = "MASTER_PORT";        // port of the store
inline constexpr char kEnvWorldSize[] = "WORLD_SIZE";          // processes in this round
inline constexpr char kEnvRank[] = "RANK";                     // this process, 0..WORLD_SIZE-1
inline constexpr char kEnvLocalRank[] = "LOCAL_RANK";          // index within the pod/node
inline constexpr char kEnvLocalWorldSize[] = "LOCAL_WORLD_SIZE";  // processes in the pod
inline constexpr char kEnvRound[] = "DDP_ROUND";               // rendezvous round, default 0
inline constexpr char kEnvRendezvousTimeout[] = "DDP_RENDEZVOUS_TIMEOUT";  // seconds, default 600
// "True" where another process hosts the store (the rendezvous pod, for the trainers a pod's
// supervisor starts): every rank is a client. (torchrun sets it too, but its agent hosts c10d's
// TCPStore, which ddp-worker does not join: "not a ddp store".)
inline constexpr char kEnvUseAgentStore[] = "TORCHELASTIC_USE_AGENT_STORE";

inline constexpr int kDefaultRendezvousTimeoutSeconds = 600;

struct RendezvousConfig {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int world_size = 1;
  int rank = 0;
  int local_rank = 0;
  int local_world_size = 1;
  int round = 0;
  std::chrono::seconds timeout{kDefaultRendezvousTimeoutSeconds};
  bool agent_store = false;  // true: someone else hosts the store; rank 0 is a client too
};

// Reads the variables above. Defaults (torch's): WORLD_SIZE 1, RANK 0, MASTER_ADDR 127.0.0.1,
// MASTER_PORT 29500, LOCAL_RANK = RANK, LOCAL_WORLD_SIZE = WORLD_SIZE when unset, DDP_ROUND 0,
// DDP_RENDEZVOUS_TIMEOUT 600. InvalidArgument naming the variable for a non-integer or
// out-of-range value (RANK >= WORLD_SIZE, port outside 1..65535, timeout <= 0, ...).
StatusOr<RendezvousConfig> RendezvousConfigFromEnv();

// Same, from a lookup function (tests; launch). `getenv` returns nullptr for unset.
StatusOr<RendezvousConfig> RendezvousConfigFromLookup(
    const std::function<const char*(const char*)>& getenv);

// Checks ranges; used by both parsers. InvalidArgument naming the field.
Status ValidateRendezvousConfig(const RendezvousConfig& config);

// The joined group. `store` is prefixed by the round ("ddp/round<N>/"), so keys of two rounds
// never collide when an agent store outlives a round. Shared ownership: keep it alive as long as
// any communicator made from it (rank 0's store also hosts the server for everyone).
struct Rendezvous {
  c10::intrusive_ptr<c10d::Store> store;
  RendezvousConfig config;
};

// The round's key prefix, "ddp/round<N>", shared by trainers and the supervisor that hosts the
// store for them (in-place recovery).
std::string RoundPrefix(int round);

// Joins round `config.round`:
//   1. rank 0 hosts the store on master_port (unless agent_store); others connect, retrying
//      until the deadline (the host may start later). A world of 1 uses an in-process store.
//   2. each rank sets "arrived/<rank>" under the round prefix.
//   3. each rank waits until all ranks' keys exist.
// DeadlineExceeded after `config.timeout`, e.g. "rendezvous round 0: ranks 1, 2 of 3 never
// arrived within 600s" (or "could not reach the store at host:port ..." for a client).
// Unavailable for other store failures (address in use, ...). main maps both to exit 75.
StatusOr<Rendezvous> JoinRendezvous(const RendezvousConfig& config);

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_RENDEZVOUS_H_
