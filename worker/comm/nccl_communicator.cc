// NcclCommunicator: NCCL called directly (see nccl_communicator.h for the ordering rules).
#include "worker/comm/nccl_communicator.h"

#include <cstring>
#include <thread>

#include "common/logging.h"
#include "worker/comm/work_util.h"

namespace ddp::worker {

Status NcclError(NcclApi& api, int r, const std::string& what, const char* file, int line) {
  return Status::Unavailable(what + ": NCCL error " + std::to_string(r) + " (" +
                             api.NcclErrorString(r) + ") at " + file + ":" + std::to_string(line) +
                             ". HINT: NCCL_DEBUG=INFO shows which peer or link failed");
}

Status CudaError(NcclApi& api, int e, const std::string& what, const char* file, int line) {
  return Status::Unavailable(what + ": CUDA error " + api.CudaErrorString(e) + " at " + file + ":" +
                             std::to_string(line));
}

#define DDP_CHECK_NCCL(api, expr, what)                                                     \
  do {                                                                                      \
    int ddp_nccl_result_ = (expr);                                                          \
    if (ddp_nccl_result_ != kNcclSuccess && ddp_nccl_result_ != kNcclInProgress) {          \
      return ::ddp::worker::NcclError(api, ddp_nccl_result_, what, __FILE__, __LINE__);     \
    }                                                                                       \
  } while (0)

#define DDP_CHECK_CUDA(api, expr, what)                                                     \
  do {                                                                                      \
    int ddp_cuda_error_ = (expr);                                                           \
    if (ddp_cuda_error_ != kCudaSuccess) {                                                  \
      return ::ddp::worker::CudaError(api, ddp_cuda_error_, what, __FILE__, __LINE__);      \
    }                                                                                       \
  } while (0)

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollSleep = std::chrono::microseconds(50);

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

class NcclWork : public Work {
 public:
  NcclWork(NcclCommunicator* comm, std::string what, std::vector<at::Tensor> keep,
           CudaEventHandle start, CudaEventHandle end)
      : comm_(comm), api_(comm->api_), what_(std::move(what)), keep_(std::move(keep)), start_(start), end_(end) {}
  ~NcclWork() override {
    api_->EventDestroy(start_);
    api_->EventDestroy(end_);
  }

  Status Wait() override {
    if (waited_) return status_;
    waited_ = true;
    status_ = Poll();
    if (status_.ok()) {
      api_->StreamWaitEvent(nullptr, end_);
      float ms = 0;
      if (api_->EventElapsedMs(start_, end_, &ms) == kCudaSuccess) seconds_ = ms / 1e3;
    } else {
      comm_->Abort();
    }
    keep_.clear();
    return status_;
  }

  bool IsCompleted() override { return waited_ || api_->EventQuery(end_) != kCudaErrorNotReady; }
  double seconds() const override { return seconds_; }

 private:
  Status Poll() {
    const auto deadline = Clock::now() + comm_->timeout();
    while (true) {
      int q = api_->EventQuery(end_);
      if (q == kCudaSuccess) return Status::OK();
      if (q != kCudaErrorNotReady) return CudaError(*api_, q, what_, __FILE__, __LINE__);
      DDP_RETURN_IF_ERROR(comm_->AsyncError(what_));
      if (Clock::now() >= deadline) {
        return Status::DeadlineExceeded(what_ + ": not finished within " +
                                        std::to_string(comm_->timeout().count()) +
                                        "ms (a peer is stuck or gone)");
      }
      std::this_thread::sleep_for(kPollSleep);
    }
  }

  NcclCommunicator* comm_;
  NcclApi* api_;
  std::string what_;
  std::vector<at::Tensor> keep_;
  CudaEventHandle start_;
  CudaEventHandle end_;
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
  DDP_CHECK_CUDA(*api, api->SetDevice(device_index), what);
  std::string key;
  try {
    key = "nccl" + GroupSequence(*store, rank) + "/unique_id";
  } catch (const std::exception& e) {
    return StatusFromBackendError(what + ": store", BackendErrorText(e));
  }
  std::string id;
  try {
    if (rank == 0) {
      DDP_CHECK_NCCL(*api, api->GetUniqueId(&id), what);
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
  NcclCommHandle comm = nullptr;
  DDP_CHECK_NCCL(*api, api->CommInitRank(&comm, size, id, rank), what);
  CudaStreamHandle stream = nullptr;
  if (int e = api->StreamCreate(&stream); e != kCudaSuccess) {
    api->CommAbort(comm);
    return CudaError(*api, e, what, __FILE__, __LINE__);
  }
  std::unique_ptr<NcclCommunicator> c(
      new NcclCommunicator(api, comm, stream, rank, size, device_index, timeout));
  DDP_RETURN_IF_ERROR(c->PollReady(what, Clock::now() + timeout));
  DDP_CHECK_CUDA(*api, api->Malloc(reinterpret_cast<void**>(&c->barrier_buffer_), sizeof(float)), what);
  DDP_LOG(INFO) << what << ": ready";
  return std::unique_ptr<Communicator>(std::move(c));
}

NcclCommunicator::NcclCommunicator(NcclApi* api, NcclCommHandle comm, CudaStreamHandle stream,
                                   int rank, int size, int device,
                                   std::chrono::milliseconds timeout)
    : api_(api), comm_(comm), stream_(stream), rank_(rank), size_(size), device_(device),
      timeout_(timeout) {}

NcclCommunicator::~NcclCommunicator() {
  if (!aborted_) {
    while (api_->StreamQuery(stream_) == kCudaErrorNotReady) std::this_thread::sleep_for(kPollSleep);
    api_->CommDestroy(comm_);
  }
  if (barrier_buffer_ != nullptr) api_->Free(barrier_buffer_);
  api_->StreamDestroy(stream_);
}

Status NcclCommunicator::AsyncError(const std::string& what) {
  if (aborted_) return Status::Unavailable(what + ": communicator was aborted");
  int state = kNcclSuccess;
  DDP_CHECK_NCCL(*api_, api_->CommGetAsyncError(comm_, &state), what);
  if (state != kNcclSuccess && state != kNcclInProgress) {
    return NcclError(*api_, state, what, __FILE__, __LINE__);
  }
  return Status::OK();
}

Status NcclCommunicator::PollReady(const std::string& what, Clock::time_point deadline) {
  while (true) {
    int state = kNcclSuccess;
    int r = aborted_ ? 5 : api_->CommGetAsyncError(comm_, &state);
    if (r == kNcclSuccess && state == kNcclSuccess) return Status::OK();
    Status s;
    if (aborted_) {
      s = Status::Unavailable(what + ": communicator was aborted");
    } else if (r != kNcclSuccess || state != kNcclInProgress) {
      s = NcclError(*api_, r != kNcclSuccess ? r : state, what, __FILE__, __LINE__);
    } else if (Clock::now() >= deadline) {
      s = Status::DeadlineExceeded(what + ": peers did not respond within " +
                                   std::to_string(timeout_.count()) + "ms");
    } else {
      std::this_thread::sleep_for(kPollSleep);
      continue;
    }
    Abort();
    return s;
  }
}

std::shared_ptr<Work> NcclCommunicator::Launch(const std::string& what,
                                               std::vector<at::Tensor> keep_alive,
                                               const std::function<int()>& enqueue) {
  std::lock_guard<std::mutex> lock(mu_);
  auto fail = [&](Status s) { return MakeFinishedWork(std::move(s)); };
  if (aborted_) return fail(Status::Unavailable(what + ": communicator was aborted"));
  if (int e = api_->SetDevice(device_); e != kCudaSuccess) {
    return fail(CudaError(*api_, e, what, __FILE__, __LINE__));
  }
  CudaEventHandle ready = nullptr, start = nullptr, end = nullptr;
  api_->EventCreate(&ready, false);
  api_->EventCreate(&start, true);
  api_->EventCreate(&end, true);
  auto work = std::make_shared<NcclWork>(this, what, std::move(keep_alive), start, end);
  api_->EventRecord(ready, nullptr);
  api_->StreamWaitEvent(stream_, ready);
  api_->EventDestroy(ready);
  api_->EventRecord(start, stream_);
  int r = enqueue();
  if (r != kNcclSuccess && r != kNcclInProgress) {
    Abort();
    return fail(NcclError(*api_, r, what, __FILE__, __LINE__));
  }
  if (r == kNcclInProgress) {
    if (Status s = PollReady(what, Clock::now() + timeout_); !s.ok()) return fail(s);
  }
  if (int e = api_->EventRecord(end, stream_); e != kCudaSuccess) {
    return fail(CudaError(*api_, e, what, __FILE__, __LINE__));
  }
  return work;
}

bool NcclCommunicator::OnDevice(const at::Tensor& t) const {
  return t.device().type() == api_->device_type() &&
         (!t.device().has_index() || t.device().index() == device_);
}

std::shared_ptr<Work> NcclCommunicator::AllReduceSumAsync(at::Tensor& t) {
  const std::string what = "nccl all-reduce (rank " + std::to_string(rank_) + ")";
  if (!OnDevice(t) || !t.is_contiguous()) {
    return MakeFinishedWork(Status::InvalidArgument(
        what + ": tensor must be contiguous on cuda:" + std::to_string(device_)));
  }
  auto type = NcclType(t.scalar_type());
  if (!type.ok()) return MakeFinishedWork(type.status());
  void* ptr = t.data_ptr();
  const size_t count = static_cast<size_t>(t.numel());
  const NcclDtype dt = *type;
  return Launch(what, {t}, [&] { return api_->AllReduceSum(ptr, count, dt, comm_, stream_); });
}

Status NcclCommunicator::Broadcast(std::vector<at::Tensor>& ts, int root) {
  const std::string what = "nccl broadcast from rank " + std::to_string(root);
  if (root < 0 || root >= size_) return Status::InvalidArgument(what + ": root out of range");
  std::vector<std::pair<void*, std::pair<size_t, NcclDtype>>> args;
  for (auto& t : ts) {
    if (!OnDevice(t) || !t.is_contiguous()) {
      return Status::InvalidArgument(what + ": tensors must be contiguous on cuda:" +
                                     std::to_string(device_));
    }
    auto type = NcclType(t.scalar_type());
    if (!type.ok()) return type.status();
    args.push_back({t.data_ptr(), {static_cast<size_t>(t.numel()), *type}});
  }
  auto work = Launch(what, ts, [&] {
    int r = api_->GroupStart();
    for (auto& a : args) {
      if (r != kNcclSuccess) break;
      r = api_->Broadcast(a.first, a.second.first, a.second.second, root, comm_, stream_);
    }
    int end = api_->GroupEnd();
    return r != kNcclSuccess ? r : end;
  });
  return work->Wait();
}

Status NcclCommunicator::Barrier() {
  const std::string what = "nccl barrier (rank " + std::to_string(rank_) + ")";
  float* p = barrier_buffer_;
  auto work = Launch(what, {}, [&] { return api_->AllReduceSum(p, 1, NcclDtype::kFloat32, comm_, stream_); });
  return work->Wait();
}

void NcclCommunicator::Abort() {
  if (aborted_.exchange(true)) return;
  DDP_LOG(WARNING) << "nccl: rank " << rank_ << " aborting the communicator";
  api_->CommAbort(comm_);
}

}  // namespace ddp::worker
