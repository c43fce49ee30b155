// GlooCommunicator: thin adapter over c10d::ProcessGroupGloo; c10 exceptions become Status.
#include "worker/comm/gloo_communicator.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "common/logging.h"
#include "worker/comm/work_util.h"

namespace ddp::worker {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSlice = std::chrono::milliseconds(50);  // how fast Wait notices Abort()
constexpr auto kGrace = std::chrono::seconds(1);

// Completion time, written by a Gloo worker thread through the future's callback.
struct Timing {
  Clock::time_point start = Clock::now();
  std::atomic<double> seconds{0};
};

class GlooWork : public Work {
 public:
  GlooWork(c10::intrusive_ptr<c10d::Work> work, GlooCommunicator* comm,
           std::chrono::milliseconds timeout, const char* op = "all-reduce")
      : work_(std::move(work)),
        comm_(comm),
        timeout_(timeout),
        op_(op),
        timing_(std::make_shared<Timing>()) {
    try {
      std::shared_ptr<Timing> t = timing_;
      work_->getFuture()->addCallback([t](c10::ivalue::Future&) {
        t->seconds = std::chrono::duration<double>(Clock::now() - t->start).count();
      });
    } catch (const std::exception&) {
      // No future on this backend version: seconds() is measured when Wait returns instead.
    }
  }

  Status Wait() override {
    if (waited_) return status_;
    waited_ = true;
    const std::string what = "gloo " + op_ + " (rank " + std::to_string(comm_->rank()) + " of " +
                             std::to_string(comm_->size()) + ")";
    // Wait in slices so that Abort() from another thread releases us; Gloo's own timeout (the
    // same length, with a clearer message) normally fires before ours.
    const auto deadline = Clock::now() + timeout_ + kGrace;
    try {
      while (true) {
        try {
          work_->wait(kSlice);
          break;
        } catch (const std::exception&) {
          // The slice ended, but the collective may have finished since: waiting again on
          // finished work returns at once on success and rethrows its real error otherwise.
          if (work_->isCompleted()) {
            work_->wait();
            break;
          }
        }
        if (comm_->aborted()) {
          status_ = Status::Unavailable(what + ": communicator was aborted");
          break;
        }
        if (Clock::now() >= deadline) {
          status_ = Status::DeadlineExceeded(what + ": not finished within " +
                                             std::to_string(timeout_.count()) + "ms");
          comm_->Abort();
          break;
        }
      }
    } catch (const std::exception& e) {
      status_ = StatusFromBackendError(what, BackendErrorText(e));
      comm_->Abort();
    }
    if (timing_->seconds == 0) {
      timing_->seconds = std::chrono::duration<double>(Clock::now() - timing_->start).count();
    }
    return status_;
  }

  bool IsCompleted() override { return work_->isCompleted(); }
  double seconds() const override { return timing_->seconds; }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  GlooCommunicator* comm_;
  std::chrono::milliseconds timeout_;
  std::string op_;
  std::shared_ptr<Timing> timing_;
  bool waited_ = false;
  Status status_;
};


}  // namespace

StatusOr<std::unique_ptr<Communicator>> GlooCommunicator::Create(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout,
    const GlooOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return Status::InvalidArgument("gloo: rank " + std::to_string(rank) + " outside [0, " +
                                   std::to_string(size) + ")");
  }
  try {
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    if (!options.interface.empty()) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(options.interface));
    } else if (!options.hostname.empty()) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.hostname));
    } else {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    opts->threads = options.threads;
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("gloo" + GroupSequence(*store, rank), store);
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, opts);
    return std::unique_ptr<Communicator>(new GlooCommunicator(std::move(pg), rank, size, timeout));
  } catch (const std::exception& e) {
    return StatusFromBackendError("gloo: connecting rank " + std::to_string(rank) + " of " +
                                      std::to_string(size),
                                  BackendErrorText(e));
  }
}

GlooCommunicator::GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int rank,
                                   int size, std::chrono::milliseconds timeout)
    : pg_(std::move(pg)), rank_(rank), size_(size), timeout_(timeout) {}

GlooCommunicator::~GlooCommunicator() {
  // Destroying the group joins its worker threads, which may sit in a collective with a dead peer
  // until Gloo's own timeout. After an abort the process is about to exit 75: let it go now.
  if (aborted_) (void)pg_.release();
}

Status GlooCommunicator::Check(const std::string& what) const {
  if (aborted_) return Status::Unavailable("gloo " + what + ": communicator was aborted");
  return Status::OK();
}

std::shared_ptr<Work> GlooCommunicator::AllReduceSumAsync(at::Tensor& t) {
  if (Status s = Check("all-reduce"); !s.ok()) return MakeFinishedWork(s);
  if (!t.device().is_cpu() || !t.is_contiguous() || t.is_sparse()) {
    return MakeFinishedWork(Status::InvalidArgument(
        "gloo all-reduce: tensor must be a dense contiguous CPU tensor, got " + t.toString()));
  }
  try {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    return std::make_shared<GlooWork>(pg_->allreduce(v, opts), this, timeout_);
  } catch (const std::exception& e) {
    Abort();
    return MakeFinishedWork(StatusFromBackendError("gloo all-reduce launch", BackendErrorText(e)));
  }
}

Status GlooCommunicator::Broadcast(std::vector<at::Tensor>& ts, int root) {
  DDP_RETURN_IF_ERROR(Check("broadcast"));
  if (root < 0 || root >= size_) {
    return Status::InvalidArgument("gloo broadcast: root " + std::to_string(root) + " outside [0, " +
                                   std::to_string(size_) + ")");
  }
  try {
    for (const auto& idx : GroupByDtype(ts)) {
      std::vector<at::Tensor> v{FlattenTensors(ts, idx)};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      // Waited in slices, as every collective, so that Abort() from the membership watcher
      // releases a broadcast stuck on a peer that left the generation.
      Status s = GlooWork(pg_->broadcast(v, opts), this, timeout_, "broadcast").Wait();
      if (!s.ok()) return s;
      if (rank_ != root) UnflattenInto(v[0], ts, idx);
    }
  } catch (const std::exception& e) {
    Abort();
    return StatusFromBackendError("gloo broadcast from rank " + std::to_string(root), BackendErrorText(e));
  }
  return Status::OK();
}

Status GlooCommunicator::Barrier() {
  DDP_RETURN_IF_ERROR(Check("barrier"));
  try {
    return GlooWork(pg_->barrier(), this, timeout_, "barrier").Wait();
  } catch (const std::exception& e) {
    Abort();
    return StatusFromBackendError("gloo barrier", BackendErrorText(e));
  }
}

void GlooCommunicator::Abort() {
  if (!aborted_.exchange(true)) {
    DDP_LOG(WARNING) << "gloo: rank " << rank_ << " aborting the communicator";
  }
}

}  // namespace ddp::worker
