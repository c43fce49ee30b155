// NcclCommunicator: NCCL called directly (see nccl_communicator.h for the ordering, locking and
// memory rules).
#include "worker/comm/nccl_communicator.h"

#include <atomic>
#include <mutex>
#include <thread>

#include "common/logging.h"
#include "worker/comm/work_util.h"

namespace ddp::worker {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollSleep = std::chrono::microseconds(50);

Status NcclError(NcclApi& api, int r, const std::string& what, const char* file, int line) {
  return Status::Unavailable(what + ": NCCL error " + std::to_string(r) + " (" +
                             api.NcclErrorString(r) + ") at " + file + ":" + std::to_string(line) +
                             ". HINT: NCCL_DEBUG=INFO shows which peer or link failed");
}

Status CudaError(NcclApi& api, int e, const std::string& what, const char* file, int line) {
  return Status::Unavailable(what + ": CUDA error " + api.CudaErrorString(e) + " at " + file + ":" +
                             std::to_string(line));
}

Status Aborted(const std::string& what) {
  return Status::Unavailable(what + ": communicator was aborted");
}

StatusOr<NcclDtype> NcclType(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return NcclDtype::kFloat32;
    case at::kDouble: return NcclDtype::kFloat64;
    case at::kHalf: return NcclDtype::kFloat16;
    case at::kBFloat16: return NcclDtype::kBfloat16;
    case at::kInt: return NcclDtype::kInt32;
    case at::kLong: return NcclDtype::kInt64;
    case at::kChar: return NcclDtype::kInt8;
    case at::kByte: return NcclDtype::kUint8;
    default: return Status::InvalidArgument(std::string("nccl: unsupported dtype ") + c10::toString(t));
  }
}

}  // namespace

struct NcclCommunicator::Shared {
  Shared(NcclApi* a, int r, int d, std::chrono::milliseconds t)
      : api(a), rank(r), device(d), timeout(t) {}

  // Tensors of collectives that may still run (their Work was dropped first), with the end event
  // that says when they stopped. Those still pending at the end are leaked, not freed.
  ~Shared() {
    SweepDeferred();
    if (!deferred.empty()) {
      DDP_LOG(WARNING) << "nccl: rank " << rank << ": " << deferred.size()
                       << " aborted collective(s) never finished; their tensors stay allocated";
      for (Deferred& d : deferred) new std::vector<at::Tensor>(std::move(d.tensors));
    }
  }

  // Runs call(comm) under the NCCL mutex. false (not called) once the communicator is aborted
  // or destroyed.
  bool WithComm(const std::function<void(NcclCommHandle)>& call) {
    std::lock_guard<std::mutex> lock(nccl_mu);
    if (comm == nullptr) return false;
    call(comm);
    return true;
  }

  // OK while the communicator is healthy (operations may still be in progress).
  Status CheckAsyncError(const std::string& what) {
    int r = kNcclSuccess, state = kNcclSuccess;
    if (!WithComm([&](NcclCommHandle c) { r = api->CommGetAsyncError(c, &state); })) {
      return Aborted(what);
    }
    if (r != kNcclSuccess) return NcclError(*api, r, what, __FILE__, __LINE__);
    if (state != kNcclSuccess && state != kNcclInProgress) {
      return NcclError(*api, state, what, __FILE__, __LINE__);
    }
    return Status::OK();
  }

  // Polls until the communicator leaves ncclInProgress; on an error or the deadline aborts it.
  Status PollReady(const std::string& what, Clock::time_point deadline) {
    while (true) {
      int r = kNcclSuccess, state = kNcclSuccess;
      if (!WithComm([&](NcclCommHandle c) { r = api->CommGetAsyncError(c, &state); })) {
        return Aborted(what);
      }
      if (r == kNcclSuccess && state == kNcclSuccess) return Status::OK();
      Status s;
      if (r != kNcclSuccess || state != kNcclInProgress) {
        s = NcclError(*api, r != kNcclSuccess ? r : state, what, __FILE__, __LINE__);
      } else if (Clock::now() >= deadline) {
        s = Status::DeadlineExceeded(what + ": peers did not respond within " +
                                     std::to_string(timeout.count()) + "ms");
      } else {
        std::this_thread::sleep_for(kPollSleep);
        continue;
      }
      Abort();
      return s;
    }
  }

  void Abort() {
    aborted = true;  // first, so that launches bail out before they wait for the mutex
    std::lock_guard<std::mutex> lock(nccl_mu);
    if (comm == nullptr) return;
    DDP_LOG(WARNING) << "nccl: rank " << rank << " aborting the communicator";
    api->CommAbort(comm);
    comm = nullptr;
  }

  void Defer(CudaEventHandle end, std::vector<at::Tensor> tensors) {
    std::lock_guard<std::mutex> lock(deferred_mu);
    deferred.push_back({end, std::move(tensors)});
  }

  // Frees the deferred tensors whose collective has stopped.
  void SweepDeferred() {
    std::lock_guard<std::mutex> lock(deferred_mu);
    for (auto it = deferred.begin(); it != deferred.end();) {
      if (api->EventQuery(it->end) == kCudaErrorNotReady) {
        ++it;
        continue;
      }
      api->EventDestroy(it->end);
      it = deferred.erase(it);
    }
  }

  NcclApi* const api;
  const int rank;
  const int device;
  const std::chrono::milliseconds timeout;
  CudaStreamHandle stream = nullptr;  // owned by the communicator
  std::mutex launch_mu;               // one launch at a time, ncclInProgress phase included
  std::mutex nccl_mu;                 // around every NCCL call on comm
  NcclCommHandle comm = nullptr;      // guarded by nccl_mu; nullptr once aborted or destroyed
  std::atomic<bool> aborted{false};
  struct Deferred {
    CudaEventHandle end;
    std::vector<at::Tensor> tensors;
  };
  std::mutex deferred_mu;
  std::vector<Deferred> deferred;  // guarded by deferred_mu
};

namespace {

// One enqueued collective: events on the communicator stream, tensors kept until it stopped.
class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<NcclCommunicator::Shared> shared, std::string what,
           std::vector<at::Tensor> keep, CudaEventHandle start, CudaEventHandle end)
      : shared_(std::move(shared)), what_(std::move(what)), keep_(std::move(keep)),
        start_(start), end_(end) {}
  ~NcclWork() override {
    NcclApi& api = *shared_->api;
    api.EventDestroy(start_);
    if (!keep_.empty() && !IsCompleted()) {
      shared_->Defer(end_, std::move(keep_));  // the communicator frees them once it stopped
    } else {
      api.EventDestroy(end_);
    }
  }

  // A failure after the enqueue was attempted: Wait returns `s`; IsCompleted still follows the
  // end event.
  void Fail(Status s) { failed_ = std::move(s); }

  Status Wait() override {
    if (waited_) return status_;
    waited_ = true;
    status_ = failed_.ok() ? Poll() : failed_;
    NcclApi& api = *shared_->api;
    if (status_.ok()) {
      // Later work on the default stream (the optimizer) reads the result after the collective.
      api.StreamWaitEvent(nullptr, end_);
      float ms = 0;
      if (api.EventElapsedMs(start_, end_, &ms) == kCudaSuccess) seconds_ = ms / 1e3;
      keep_.clear();
    } else {
      shared_->Abort();
      if (IsCompleted()) keep_.clear();  // else kept until the aborted kernel stopped
    }
    return status_;
  }

  // True once the collective stopped touching its tensors: finished, failed, or aborted and
  // drained. A failed Wait alone is not enough.
  bool IsCompleted() override { return shared_->api->EventQuery(end_) != kCudaErrorNotReady; }
  double seconds() const override { return seconds_; }

 private:
  Status Poll() {
    NcclApi& api = *shared_->api;
    const auto deadline = Clock::now() + shared_->timeout;
    while (true) {
      const int q = api.EventQuery(end_);
      if (q != kCudaSuccess && q != kCudaErrorNotReady) {
        return CudaError(api, q, what_, __FILE__, __LINE__);
      }
      // Also after the event completed: an abort or an NCCL error ends a kernel early too.
      DDP_RETURN_IF_ERROR(shared_->CheckAsyncError(what_));
      if (q == kCudaSuccess) return Status::OK();
      if (Clock::now() >= deadline) {
        return Status::DeadlineExceeded(what_ + ": not finished within " +
                                        std::to_string(shared_->timeout.count()) +
                                        "ms (a peer is stuck or gone)");
      }
      std::this_thread::sleep_for(kPollSleep);
    }
  }

  std::shared_ptr<NcclCommunicator::Shared> shared_;
  std::string what_;
  std::vector<at::Tensor> keep_;
  CudaEventHandle start_;
  CudaEventHandle end_;
  Status failed_;
  bool waited_ = false;
  Status status_;
  double seconds_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::Create(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size, int device_index,
    std::chrono::milliseconds timeout, NcclApi* api) {
  if (size < 1 || rank < 0 || rank >= size) {
    return Status::InvalidArgument("nccl: rank " + std::to_string(rank) + " outside [0, " +
                                   std::to_string(size) + ")");
  }
  const std::string what = "nccl init (rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + ", cuda:" + std::to_string(device_index) + ")";
  if (int e = api->SetDevice(device_index); e != kCudaSuccess) {
    return CudaError(*api, e, what, __FILE__, __LINE__);
  }
  std::string id;
  try {
    const std::string key = "nccl" + GroupSequence(*store, rank) + "/unique_id";
    if (rank == 0) {
      if (int r = api->GetUniqueId(&id); r != kNcclSuccess) {
        return NcclError(*api, r, what, __FILE__, __LINE__);
      }
      store->set(key, std::vector<uint8_t>(id.begin(), id.end()));
    } else {
      store->wait({key}, timeout);
      std::vector<uint8_t> bytes = store->get(key);
      if (bytes.size() != kNcclUniqueIdBytes) return Status::Internal(what + ": bad unique id in the store");
      id.assign(bytes.begin(), bytes.end());
    }
  } catch (const std::exception& e) {
    return StatusFromBackendError(what + ": sharing the unique id", BackendErrorText(e));
  }
  auto shared = std::make_shared<Shared>(api, rank, device_index, timeout);
  // From here on `c` owns what is created: each failure aborts the NCCL communicator (one that
  // never became ready cannot be destroyed) and c's destructor releases the rest.
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator(shared, rank, size));
  const int r = api->CommInitRank(&shared->comm, size, id, rank);  // may set comm on failure
  if (r != kNcclSuccess && r != kNcclInProgress) {
    shared->Abort();
    return NcclError(*api, r, what, __FILE__, __LINE__);
  }
  if (int e = api->StreamCreate(&shared->stream); e != kCudaSuccess) {
    shared->stream = nullptr;
    shared->Abort();
    return CudaError(*api, e, what, __FILE__, __LINE__);
  }
  DDP_RETURN_IF_ERROR(shared->PollReady(what, Clock::now() + timeout));
  if (int e = api->Malloc(&c->barrier_buffer_, sizeof(float)); e != kCudaSuccess) {
    c->barrier_buffer_ = nullptr;
    shared->Abort();
    return CudaError(*api, e, what, __FILE__, __LINE__);
  }
  DDP_LOG(INFO) << what << ": ready";
  return std::unique_ptr<Communicator>(std::move(c));
}

NcclCommunicator::NcclCommunicator(std::shared_ptr<Shared> shared, int rank, int size)
    : shared_(std::move(shared)), rank_(rank), size_(size) {}

NcclCommunicator::~NcclCommunicator() {
  Shared& s = *shared_;
  NcclApi& api = *s.api;
  auto stream_idle = [&] { return s.stream == nullptr || api.StreamQuery(s.stream) != kCudaErrorNotReady; };
  {
    std::lock_guard<std::mutex> lock(s.nccl_mu);
    if (s.comm != nullptr) {
      const auto deadline = Clock::now() + s.timeout;
      while (!stream_idle() && Clock::now() < deadline) std::this_thread::sleep_for(kPollSleep);
      if (stream_idle()) {
        api.CommDestroy(s.comm);
      } else {
        s.aborted = true;
        DDP_LOG(WARNING) << "nccl: rank " << rank_ << ": a collective is still running after "
                         << s.timeout.count() << "ms; aborting the communicator";
        api.CommAbort(s.comm);
      }
      s.comm = nullptr;
    }
  }
  s.SweepDeferred();
  if (barrier_buffer_ != nullptr) {
    // cudaFree waits for the device: not while an aborted kernel may still be running.
    if (stream_idle()) {
      api.Free(barrier_buffer_);
    } else {
      DDP_LOG(WARNING) << "nccl: rank " << rank_ << ": barrier buffer left allocated";
    }
  }
  if (s.stream != nullptr) api.StreamDestroy(s.stream);  // released once its work completed
}

std::shared_ptr<Work> NcclCommunicator::Launch(
    const std::string& what, std::vector<at::Tensor> keep_alive,
    const std::function<int(NcclCommHandle, CudaStreamHandle)>& enqueue) {
  Shared& s = *shared_;
  NcclApi& api = *s.api;
  std::lock_guard<std::mutex> launch(s.launch_mu);
  if (s.aborted) return MakeFinishedWork(Aborted(what));
  s.SweepDeferred();
  if (int e = api.SetDevice(s.device); e != kCudaSuccess) {
    return MakeFinishedWork(CudaError(api, e, what, __FILE__, __LINE__));
  }
  CudaEventHandle ready = nullptr, start = nullptr, end = nullptr;
  int e = api.EventCreate(&ready, /*timing=*/false);
  if (e == kCudaSuccess) e = api.EventCreate(&start, /*timing=*/true);
  if (e == kCudaSuccess) e = api.EventCreate(&end, /*timing=*/true);
  if (e != kCudaSuccess) {
    for (CudaEventHandle ev : {ready, start, end}) {
      if (ev != nullptr) api.EventDestroy(ev);
    }
    return MakeFinishedWork(CudaError(api, e, what, __FILE__, __LINE__));
  }
  auto work = std::make_shared<NcclWork>(shared_, what, std::move(keep_alive), start, end);
  // Compute that produced the tensors was queued on the legacy default stream.
  api.EventRecord(ready, nullptr);
  api.StreamWaitEvent(s.stream, ready);
  api.EventDestroy(ready);  // safe: destruction is deferred until the event completes
  api.EventRecord(start, s.stream);
  int r = kNcclSuccess;
  if (!s.WithComm([&](NcclCommHandle c) { r = enqueue(c, s.stream); })) {
    work->Fail(Aborted(what));
    return work;
  }
  Status status;
  if (r == kNcclInProgress) {
    status = s.PollReady(what, Clock::now() + s.timeout);  // aborts on failure
  } else if (r != kNcclSuccess) {
    status = NcclError(api, r, what, __FILE__, __LINE__);
    s.Abort();
  }
  // Recorded after a failure too: whatever NCCL queued on the stream runs before the end event,
  // so the Work keeps the tensors until then.
  if (int e2 = api.EventRecord(end, s.stream); e2 != kCudaSuccess && status.ok()) {
    status = CudaError(api, e2, what, __FILE__, __LINE__);
    s.Abort();
  }
  if (!status.ok()) work->Fail(status);
  return work;
}

bool NcclCommunicator::OnDevice(const at::Tensor& t) const {
  return t.device().type() == shared_->api->device_type() &&
         (!t.device().has_index() || t.device().index() == shared_->device);
}

std::shared_ptr<Work> NcclCommunicator::AllReduceSumAsync(at::Tensor& t) {
  const std::string what = "nccl all-reduce (rank " + std::to_string(rank_) + ")";
  if (!OnDevice(t) || !t.is_contiguous()) {
    return MakeFinishedWork(Status::InvalidArgument(
        what + ": tensor must be contiguous on cuda:" + std::to_string(shared_->device)));
  }
  auto type = NcclType(t.scalar_type());
  if (!type.ok()) return MakeFinishedWork(type.status());
  void* ptr = t.data_ptr();
  const size_t count = static_cast<size_t>(t.numel());
  const NcclDtype dt = *type;
  NcclApi* api = shared_->api;
  return Launch(what, {t}, [&](NcclCommHandle comm, CudaStreamHandle stream) {
    return api->AllReduceSum(ptr, count, dt, comm, stream);
  });
}

Status NcclCommunicator::Broadcast(std::vector<at::Tensor>& ts, int root) {
  const std::string what = "nccl broadcast from rank " + std::to_string(root);
  if (root < 0 || root >= size_) return Status::InvalidArgument(what + ": root out of range");
  struct Arg {
    void* ptr;
    size_t count;
    NcclDtype dtype;
  };
  std::vector<Arg> args;
  for (auto& t : ts) {
    if (!OnDevice(t) || !t.is_contiguous()) {
      return Status::InvalidArgument(what + ": tensors must be contiguous on cuda:" +
                                     std::to_string(shared_->device));
    }
    auto type = NcclType(t.scalar_type());
    if (!type.ok()) return type.status();
    args.push_back({t.data_ptr(), static_cast<size_t>(t.numel()), *type});
  }
  NcclApi* api = shared_->api;
  // One group, issued by one thread under the NCCL mutex, as NCCL requires of groups.
  auto work = Launch(what, ts, [&](NcclCommHandle comm, CudaStreamHandle stream) {
    int r = api->GroupStart();
    for (const Arg& a : args) {
      if (r != kNcclSuccess) break;
      r = api->Broadcast(a.ptr, a.count, a.dtype, root, comm, stream);
    }
    const int end = api->GroupEnd();
    return r != kNcclSuccess ? r : end;
  });
  Status s = work->Wait();
  if (!s.ok()) {
    // The kernel writes straight into the caller's tensors (the heal's parameters): after a
    // failure, return only once it stopped, so that nothing changes them afterwards.
    const auto deadline = Clock::now() + shared_->timeout;
    while (!work->IsCompleted() && Clock::now() < deadline) std::this_thread::sleep_for(kPollSleep);
    if (!work->IsCompleted()) {
      DDP_LOG(WARNING) << what << ": the aborted broadcast still runs after "
                       << shared_->timeout.count() << "ms; its tensors may still change";
    }
  }
  return s;
}

Status NcclCommunicator::Barrier() {
  const std::string what = "nccl barrier (rank " + std::to_string(rank_) + ")";
  void* p = barrier_buffer_;
  NcclApi* api = shared_->api;
  auto work = Launch(what, {}, [&](NcclCommHandle comm, CudaStreamHandle stream) {
    return api->AllReduceSum(p, 1, NcclDtype::kFloat32, comm, stream);
  });
  return work->Wait();
}

void NcclCommunicator::Abort() { shared_->Abort(); }

}  // namespace ddp::worker
