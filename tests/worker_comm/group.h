// Test helper: one rank's rendezvous plus Gloo communicator on 127.0.0.1.
#ifndef DDP_TESTS_WORKER_COMM_GROUP_H_
#define DDP_TESTS_WORKER_COMM_GROUP_H_

#include <chrono>
#include <memory>

#include "worker/comm/communicator.h"
#include "worker/comm/factory.h"
#include "worker/comm/rendezvous.h"

namespace ddp::testing {

struct Group {
  worker::Rendezvous rendezvous;  // rank 0's store hosts the server: keep it alive
  std::unique_ptr<worker::Communicator> comm;
};

inline StatusOr<Group> JoinGroup(int port, int world, int rank,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  worker::RendezvousConfig c;
  c.master_port = port;
  c.world_size = world;
  c.rank = rank;
  c.local_world_size = world;
  c.local_rank = rank;
  c.timeout = std::chrono::seconds(30);
  auto rv = worker::JoinRendezvous(c);
  if (!rv.ok()) return rv.status();
  auto comm = worker::MakeCommunicator(rv->store, rank, world, c10::Device(c10::kCPU), timeout);
  if (!comm.ok()) return comm.status();
  return Group{std::move(rv).value(), std::move(comm).value()};
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_WORKER_COMM_GROUP_H_
