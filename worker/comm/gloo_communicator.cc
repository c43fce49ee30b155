// GlooCommunicator: thin adapter over c10d::ProcessGroupGloo; c10 exceptions become Status.
#include "worker/comm/gloo_communicator.h"

#include <ATen/ATen.h>
#include <dlfcn.h>
#include <gloo/context.h>
#include <gloo/transport/pair.h>

#include <csignal>
#include <cstring>
#include <exception>
#include <typeinfo>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "common/logging.h"
#include "worker/comm/reaper.h"
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

// c10d's ProcessGroupGloo has no abort (1.13 nor 2.x), so Abort() reaches into Gloo:
//  - the group's Gloo contexts are a protected member; GroupAccess names it through a derived
//    class (never instantiated), which C++ allows;
//  - three functions Gloo exports but no usable header declares (Debian's libgloo-dev lacks
//    gloo/common/memory.h, which the TCP transport's headers include; a PyTorch build carries
//    Gloo inside libtorch_cpu) are looked up by symbol at run time and called through the
//    platform's C++ ABI, where a member function takes `this` as its first argument:
//    gloo::Context::getPair and ::closeConnections, and
//    gloo::transport::tcp::Pair::signalExceptionExternal, which fails every operation pending on
//    a connection and closes it (what Gloo itself calls when a buffer's wait times out).
struct GroupAccess : c10d::ProcessGroupGloo {
  static std::vector<std::shared_ptr<::gloo::Context>>& Contexts(c10d::ProcessGroupGloo& pg) {
    return pg.*(&GroupAccess::contexts_);
  }
};

#if defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
#define DDP_GLOO_STRING_ARG "RKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
#else
#define DDP_GLOO_STRING_ARG "RKSs"
#endif
constexpr char kTcpPairTypeName[] = "N4gloo9transport3tcp4PairE";  // typeid(tcp::Pair).name()

struct GlooAbortCalls {
  using GetPair = std::unique_ptr<::gloo::transport::Pair>& (*)(::gloo::Context*, int);
  using CloseConnections = void (*)(::gloo::Context*);
  using PairSignal = std::exception_ptr (*)(void* tcp_pair, const std::string& message);
  GetPair get_pair = nullptr;
  CloseConnections close_connections = nullptr;
  PairSignal pair_signal = nullptr;  // optional: without it, connections are only closed
};

const GlooAbortCalls& AbortCalls() {
  static const GlooAbortCalls calls = [] {
    GlooAbortCalls c;
    c.get_pair = reinterpret_cast<GlooAbortCalls::GetPair>(
        dlsym(RTLD_DEFAULT, "_ZN4gloo7Context7getPairEi"));
    c.close_connections = reinterpret_cast<GlooAbortCalls::CloseConnections>(
        dlsym(RTLD_DEFAULT, "_ZN4gloo7Context16closeConnectionsEv"));
    c.pair_signal = reinterpret_cast<GlooAbortCalls::PairSignal>(dlsym(
        RTLD_DEFAULT, "_ZN4gloo9transport3tcp4Pair23signalExceptionExternalE" DDP_GLOO_STRING_ARG));
    return c;
  }();
  return calls;
}

struct AbortOutcome {
  int failed = 0;  // connections whose pending operations failed at once
  int closed = 0;  // connections only closed (no error signal for their transport)
  bool supported = true;  // false: this LibTorch exports none of Gloo's functions used here
};

// Fails every operation pending on the group's connections and closes them: a Gloo worker
// thread blocked in a collective gets an error at once, and the peers see their connections
// reset (a collective of theirs fails at once too, instead of pairing with the abandoned one).
// A connection without the error signal (another transport) is only closed: the peer still fails
// at once, while this rank's blocked Gloo thread waits out Gloo's timeout (the training thread
// is released by Wait's slices either way).
AbortOutcome AbortConnections(c10d::ProcessGroupGloo& pg, const std::string& why) {
  const GlooAbortCalls& calls = AbortCalls();
  AbortOutcome out;
  if (calls.get_pair == nullptr || calls.close_connections == nullptr) {
    out.supported = false;
    return out;
  }
  for (const std::shared_ptr<::gloo::Context>& ctx : GroupAccess::Contexts(pg)) {
    if (!ctx) continue;
    bool all_failed = true;
    for (int peer = 0; peer < ctx->size; ++peer) {
      if (peer == ctx->rank) continue;
      std::unique_ptr<::gloo::transport::Pair>& pair = calls.get_pair(ctx.get(), peer);
      if (!pair) continue;
      ::gloo::transport::Pair& p = *pair;
      if (calls.pair_signal != nullptr && std::strcmp(typeid(p).name(), kTcpPairTypeName) == 0) {
        (void)calls.pair_signal(dynamic_cast<void*>(&p), why);
        ++out.failed;
      } else {
        ++out.closed;
        all_failed = false;
      }
    }
    if (!all_failed) calls.close_connections(ctx.get());
  }
  return out;
}

// Gloo's TCP transport writes with writev, which raises SIGPIPE when the peer has reset the
// connection (a peer killed, or aborting its communicator): with the default disposition that
// kills this process instead of failing the write with EPIPE. Python ignores SIGPIPE at start-up;
// any C++ program that holds a Gloo group must too, so the communicator sees to it. A handler the
// program installed itself is left alone.
void IgnoreSigpipeUnlessHandled() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL) {
    std::signal(SIGPIPE, SIG_IGN);
  }
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> GlooCommunicator::Create(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout,
    const GlooOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return Status::InvalidArgument("gloo: rank " + std::to_string(rank) + " outside [0, " +
                                   std::to_string(size) + ")");
  }
  IgnoreSigpipeUnlessHandled();
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
  // Destroying the group joins its worker threads. After an abort they are released (Abort), but
  // one may still sit in a send the kernel had not flushed when the peer stopped reading, until
  // Gloo's own timeout: an aborted group is destroyed on a thread of its own (reaper.h), so that
  // this thread never waits and its threads and listening socket are still freed.
  if (!aborted_) return;
  // Shared, so that the group is neither destroyed here when the reaper refuses it nor on this
  // thread when the reaper's thread lets go first.
  auto group = std::make_shared<c10::intrusive_ptr<c10d::ProcessGroupGloo>>(std::move(pg_));
  if (!GroupReaper().Adopt([group] { group->reset(); })) {
    DDP_LOG(WARNING) << "gloo: rank " << rank_ << ": " << kMaxGroupsBeingDestroyed
                     << " aborted groups are still being destroyed (a Gloo thread waits for its "
                        "timeout); this one is left as it is: its threads and listening socket "
                        "stay until the process exits";
    (void)group->release();
  }
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
  if (aborted_.exchange(true)) return;
  DDP_LOG(WARNING) << "gloo: rank " << rank_ << " aborting the communicator";
  try {
    const AbortOutcome out =
        AbortConnections(*pg_, "gloo: rank " + std::to_string(rank_) + " aborted the communicator");
    if (!out.supported) {
      DDP_LOG(WARNING) << "gloo: this LibTorch does not export Gloo's getPair/closeConnections: "
                          "the connections stay open until Gloo's own timeout";
    } else if (out.closed > 0) {
      DDP_LOG(WARNING) << "gloo: " << out.closed << " connection(s) closed without failing their "
                          "pending operations (no error signal for their transport)";
    }
  } catch (const std::exception& e) {
    // Gloo reports a connection that already failed by throwing; it is closed either way.
    DDP_LOG(WARNING) << "gloo: rank " << rank_ << " abort: " << BackendErrorText(e);
  }
}

}  // namespace ddp::worker
