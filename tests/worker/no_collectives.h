// A communicator for tests of the group's membership: every collective succeeds at once. It
// counts its destructions in `destroyed`, when given.
#ifndef DDP_TESTS_WORKER_NO_COLLECTIVES_H_
#define DDP_TESTS_WORKER_NO_COLLECTIVES_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "worker/comm/communicator.h"

namespace ddp::worker::group {

class NoCollectives : public Communicator {
 public:
  NoCollectives(int rank, int size, std::atomic<int>* destroyed = nullptr)
      : rank_(rank), size_(size), destroyed_(destroyed) {}
  ~NoCollectives() override {
    if (destroyed_) destroyed_->fetch_add(1);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor&) override { return nullptr; }
  Status Broadcast(std::vector<at::Tensor>&, int) override { return Status::OK(); }
  Status Barrier() override { return Status::OK(); }
  void Abort() override {}
  std::string name() const override { return "none"; }

 private:
  int rank_, size_;
  std::atomic<int>* destroyed_;
};

}  // namespace ddp::worker::group

#endif  // DDP_TESTS_WORKER_NO_COLLECTIVES_H_
