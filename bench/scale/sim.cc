// Simulated pods (see sim.h).
#include "bench/scale/sim.h"

#include <time.h>

#include <condition_variable>
#include <mutex>

#include "worker/comm/communicator.h"
#include "worker/group/keys.h"
#include "worker/group/membership.h"
#include "worker/group/pod_client.h"

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;
using worker::Communicator;
using worker::Work;

class DoneWork : public Work {
 public:
  Status Wait() override { return Status::OK(); }
  bool IsCompleted() override { return true; }
  double seconds() const override { return 0; }
};

// No collective runs: what is measured is the group protocol. Abort() is the moment the
// member's watcher learned that its generation ended.
class StandInComm : public Communicator {
 public:
  StandInComm(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor&) override { return std::make_shared<DoneWork>(); }
  Status Broadcast(std::vector<at::Tensor>&, int) override { return Status::OK(); }
  Status Barrier() override { return Status::OK(); }
  void Abort() override {
    int64_t zero = 0;
    aborted_at.compare_exchange_strong(zero, NowNs());
    std::lock_guard<std::mutex> lock(mu);
    cv.notify_all();
  }
  std::string name() const override { return "stand-in"; }

  std::atomic<int64_t> aborted_at{0};
  std::mutex mu;
  std::condition_variable cv;

 private:
  int rank_, size_;
};

}  // namespace

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void EventSink::Emit(const std::string& kind, int rank, int64_t generation, int64_t ns) {
  std::lock_guard<std::mutex> lock(mu_);
  out_(kind + " " + std::to_string(rank) + " " + std::to_string(generation) + " " +
       std::to_string(ns));
}

// A stand-in trainer: the real membership, fake steps.
class SimPod::Trainer {
 public:
  Trainer(const SimOptions& o, int rank, const group::MemberIdentity& id, EventSink* events)
      : events_(events), rank_(rank) {
    const std::string host = o.store_host;
    const int port = o.store_port, round = o.round;
    member_ = std::make_unique<group::GroupMembership>(
        [host, port, round] {
          return group::OpenBoundedStore(host, port, round, std::chrono::seconds(10));
        },
        rank, o.nodes * o.per_pod, id, std::chrono::seconds(600),
        [](c10::intrusive_ptr<c10d::Store>, int r, int size) -> StatusOr<std::unique_ptr<Communicator>> {
          return std::unique_ptr<Communicator>(new StandInComm(r, size));
        },
        std::clamp(std::chrono::milliseconds(o.liveness_seconds * 1000) / 10,
                   std::chrono::milliseconds(100), std::chrono::milliseconds(1000)));
    thread_ = std::thread([this, step = o.step] { Run(step); });
  }
  ~Trainer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run(std::chrono::milliseconds step) {
    if (!member_->Connect().ok()) return;
    int64_t committed = 0;
    while (!stop_.load()) {
      auto f = member_->Join(committed);
      if (!f.ok() || f->end != group::GroupEnd::kNone) return;
      auto* comm = static_cast<StandInComm*>(f->comm.get());
      events_->Emit("formed", rank_, f->generation, NowNs());
      member_->Watch(comm);
      // Training: a step every `step`, counted by the clock (nothing wakes this thread but the
      // abort, so a thousand stand-in trainers cost the machine nothing between events).
      const int64_t started = NowNs();
      {
        std::unique_lock<std::mutex> lock(comm->mu);
        while (!stop_.load() && comm->aborted_at.load() == 0) {
          comm->cv.wait_for(lock, std::chrono::seconds(1));
        }
      }
      committed += std::max<int64_t>(1, (NowNs() - started) / (step.count() * 1000000));
      member_->Watch(nullptr);
      if (const int64_t at = comm->aborted_at.load(); at != 0) {
        events_->Emit("aborted", rank_, f->generation, at);
      }
    }
  }

  EventSink* events_;
  int rank_;
  std::unique_ptr<group::GroupMembership> member_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

SimPod::SimPod(const SimOptions& o, int node, const std::string& uid, EventSink* events)
    : o_(o), events_(events) {
  gs_.store_addr = o.store_host;
  gs_.rendezvous.master_port = o.store_port;
  gs_.rendezvous.round = o.round;
  gs_.rendezvous.timeout = std::chrono::seconds(600);
  gs_.nodes = o.nodes;
  gs_.max_nodes = o.nodes;
  gs_.nproc_per_node = o.per_pod;
  gs_.liveness = std::chrono::seconds(o.liveness_seconds);
  gs_.beat = std::clamp(gs_.liveness / 10, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
  gs_.max_recoveries = 1000;
  gs_.job = o.job;
  gs_.pod_name = o.job + "-worker-" + std::to_string(node);
  gs_.pod_uid = uid;
  gs_.home_node = node;
  thread_ = std::thread([this] { Run(); });
}

SimPod::~SimPod() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void SimPod::Run() {
  auto client = group::PodClient::Connect(gs_, "", Clock::now() + std::chrono::seconds(600));
  if (!client.ok()) return;
  int node = -1;
  std::vector<int> ranks;
  while (!stop_.load()) {
    const group::PodPoll p = (*client)->Poll(node, ranks);
    if (!p.store_ok || (*client)->lost()) {
      if ((*client)->Reconnect(node, Clock::now() + std::chrono::milliseconds(500)).code() ==
          StatusCode::kFailedPrecondition) {
        break;
      }
    } else if (!p.verdict.empty() || p.fenced) {
      break;  // fenced, departed, resized: what the supervisor ends on
    } else if (node < 0 && p.node >= 0) {
      node = p.node;
      for (int k = 0; k < o_.per_pod; ++k) {
        const int rank = node * o_.per_pod + k;
        ranks.push_back(rank);
        const std::string id = group::TrainerIdentity((*client)->identity(), k, 0);
        (void)(*client)->SetTrainer(rank, id);
        trainers_.push_back(std::make_unique<Trainer>(
            o_, rank, group::MemberIdentity{id, (*client)->identity(), node}, events_));
      }
      started_ = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the real supervisor: 50 ms
  }
  trainers_.clear();
}

}  // namespace ddp::bench
