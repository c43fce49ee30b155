// NcclCommunicator: NCCL called directly (see nccl_communicator.h for the ordering rules).
#include "worker/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <thread>

#include "common/logging.h"
#include "worker/comm/work_util.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "NCCL >= 2.14 is required (non-blocking communicators for deadlines)"
#endif

// Returns an Unavailable Status naming the call site when an NCCL call fails. ncclInProgress is
// not a failure: non-blocking communicators report completion through PollReady.
#define DDP_CHECK_NCCL(expr, what)                                                          \
  do {                                                                                      \
    ncclResult_t ddp_nccl_result_ = (expr);                                                 \
    if (ddp_nccl_result_ != ncclSuccess && ddp_nccl_result_ != ncclInProgress) {            \
      return ::ddp::worker::NcclError(ddp_nccl_result_, what, __FILE__, __LINE__);         \
    }                                                                                       \
  } while (0)

#define DDP_CHECK_CUDA(expr, what)                                                          \
  do {                                                                                      \
    cudaError_t ddp_cuda_error_ = (expr);                                                   \
    if (ddp_cuda_error_ != cudaSuccess) {                                                   \
      return ::ddp::worker::CudaError(ddp_cuda_error_, what, __FILE__, __LINE__);           \
    }                                                                                       \
  } while (0)

namespace ddp::worker {

Status NcclError(ncclResult_t r, const std::string& what, const char* file, int line) {
  return Status::Unavailable(what + ": NCCL error " + std::to_string(static_cast<int>(r)) + " (" +
                             ncclGetErrorString(r) + ") at " + file + ":" + std::to_string(line) +
                             ". HINT: NCCL_DEBUG=INFO shows which peer or link failed");
}

Status CudaError(cudaError_t e, const std::string& what, const char* file, int line) {
  return Status::Unavailable(what + ": CUDA error " + cudaGetErrorString(e) + " at " + file + ":" +
                             std::to_string(line));
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollSleep = std::chrono::microseconds(50);

StatusOr<ncclDataType_t> NcclType(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
    case at::kChar: return ncclInt8;
    case at::kByte: return ncclUint8;
    default: return Status::InvalidArgument(std::string("nccl: unsupported dtype ") + c10::toString(t));
  }
}

// One enqueued collective: events on the communicator stream, tensors kept alive until done.
class NcclWork : public Work {
 public:
  NcclWork(NcclCommunicator* comm, std::string what, std::vector<at::Tensor> keep,
           cudaEvent_t start, cudaEvent_t end)
      : comm_(comm), what_(std::move(what)), keep_(std::move(keep)), start_(start), end_(end) {}
  ~NcclWork() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
  }

  Status Wait() override {
    if (waited_) return status_;
    waited_ = true;
    status_ = Poll();
    if (status_.ok()) {
      // Later work on the default stream (the optimizer) reads the result after the collective.
      cudaStreamWaitEvent(cudaStreamLegacy, end_, 0);
      float ms = 0;
      if (cudaEventElapsedTime(&ms, start_, end_) == cudaSuccess) seconds_ = ms / 1e3;
    } else {
      comm_->Abort();
    }
    keep_.clear();
    return status_;
  }

  bool IsCompleted() override { return waited_ || cudaEventQuery(end_) != cudaErrorNotReady; }
  double seconds() const override { return seconds_; }

 private:
  Status Poll() {
    const auto deadline = Clock::now() + comm_->timeout();
    while (true) {
      cudaError_t q = cudaEventQuery(end_);
      if (q == cudaSuccess) return Status::OK();
      if (q != cudaErrorNotReady) return CudaError(q, what_, __FILE__, __LINE__);
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
  std::string what_;
  std::vector<at::Tensor> keep_;
  cudaEvent_t start_;
  cudaEvent_t end_;
  bool waited_ = false;
  Status status_;
  double seconds_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::Create(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size, int device_index,
    std::chrono::milliseconds timeout) {
  if (size < 1 || rank < 0 || rank >= size) {
    return Status::InvalidArgument("nccl: rank " + std::to_string(rank) + " outside [0, " +
                                   std::to_string(size) + ")");
  }
  const std::string what = "nccl init (rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + ", cuda:" + std::to_string(device_index) + ")";
  DDP_CHECK_CUDA(cudaSetDevice(device_index), what);
  std::string key;
  try {
    key = "nccl" + GroupSequence(*store, rank) + "/unique_id";
  } catch (const std::exception& e) {
    return StatusFromBackendError(what + ": store", BackendErrorText(e));
  }
  ncclUniqueId id;
  try {
    if (rank == 0) {
      DDP_CHECK_NCCL(ncclGetUniqueId(&id), what);
      const auto* p = reinterpret_cast<const uint8_t*>(&id);
      store->set(key, std::vector<uint8_t>(p, p + sizeof(id)));
    } else {
      store->wait({key}, timeout);
      std::vector<uint8_t> bytes = store->get(key);
      if (bytes.size() != sizeof(id)) return Status::Internal(what + ": bad unique id in the store");
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
  } catch (const std::exception& e) {
    return StatusFromBackendError(what + ": sharing the unique id", BackendErrorText(e));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that a peer that never joins cannot block us past the deadline
  ncclComm_t comm = nullptr;
  DDP_CHECK_NCCL(ncclCommInitRankConfig(&comm, size, id, rank, &config), what);
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    ncclCommAbort(comm);
    return CudaError(e, what, __FILE__, __LINE__);
  }
  std::unique_ptr<NcclCommunicator> c(
      new NcclCommunicator(comm, stream, rank, size, device_index, timeout));
  DDP_RETURN_IF_ERROR(c->PollReady(what, Clock::now() + timeout));
  DDP_CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&c->barrier_buffer_), sizeof(float)), what);
  DDP_LOG(INFO) << what << ": ready";
  return std::unique_ptr<Communicator>(std::move(c));
}

NcclCommunicator::NcclCommunicator(ncclComm* comm, CUstream_st* stream, int rank, int size,
                                   int device, std::chrono::milliseconds timeout)
    : comm_(comm), stream_(stream), rank_(rank), size_(size), device_(device), timeout_(timeout) {}

NcclCommunicator::~NcclCommunicator() {
  if (!aborted_) {
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
  }
  if (barrier_buffer_ != nullptr) cudaFree(barrier_buffer_);
  cudaStreamDestroy(stream_);
}

Status NcclCommunicator::AsyncError(const std::string& what) {
  if (aborted_) return Status::Unavailable(what + ": communicator was aborted");
  ncclResult_t state = ncclSuccess;
  DDP_CHECK_NCCL(ncclCommGetAsyncError(comm_, &state), what);
  if (state != ncclSuccess && state != ncclInProgress) {
    return NcclError(state, what, __FILE__, __LINE__);
  }
  return Status::OK();
}

Status NcclCommunicator::PollReady(const std::string& what, Clock::time_point deadline) {
  while (true) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = aborted_ ? ncclInvalidUsage : ncclCommGetAsyncError(comm_, &state);
    if (r == ncclSuccess && state == ncclSuccess) return Status::OK();
    Status s;
    if (aborted_) {
      s = Status::Unavailable(what + ": communicator was aborted");
    } else if (r != ncclSuccess || state != ncclInProgress) {
      s = NcclError(r != ncclSuccess ? r : state, what, __FILE__, __LINE__);
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
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
    return fail(CudaError(e, what, __FILE__, __LINE__));
  }
  cudaEvent_t ready = nullptr, start = nullptr, end = nullptr;
  cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  auto work = std::make_shared<NcclWork>(this, what, std::move(keep_alive), start, end);
  // Compute that produced the tensors was queued on the legacy default stream.
  cudaEventRecord(ready, cudaStreamLegacy);
  cudaStreamWaitEvent(stream_, ready, 0);
  cudaEventDestroy(ready);  // safe: destruction is deferred until the event completes
  cudaEventRecord(start, stream_);
  auto r = static_cast<ncclResult_t>(enqueue());
  if (r != ncclSuccess && r != ncclInProgress) {
    Abort();
    return fail(NcclError(r, what, __FILE__, __LINE__));
  }
  if (r == ncclInProgress) {
    if (Status s = PollReady(what, Clock::now() + timeout_); !s.ok()) return fail(s);
  }
  if (cudaError_t e = cudaEventRecord(end, stream_); e != cudaSuccess) {
    return fail(CudaError(e, what, __FILE__, __LINE__));
  }
  return work;
}

std::shared_ptr<Work> NcclCommunicator::AllReduceSumAsync(at::Tensor& t) {
  const std::string what = "nccl all-reduce (rank " + std::to_string(rank_) + ")";
  if (!t.is_cuda() || t.device().index() != device_ || !t.is_contiguous()) {
    return MakeFinishedWork(Status::InvalidArgument(
        what + ": tensor must be contiguous on cuda:" + std::to_string(device_)));
  }
  auto type = NcclType(t.scalar_type());
  if (!type.ok()) return MakeFinishedWork(type.status());
  void* ptr = t.data_ptr();
  const size_t count = static_cast<size_t>(t.numel());
  const ncclDataType_t dt = *type;
  return Launch(what, {t}, [&] {
    return static_cast<int>(ncclAllReduce(ptr, ptr, count, dt, ncclSum, comm_, stream_));
  });
}

Status NcclCommunicator::Broadcast(std::vector<at::Tensor>& ts, int root) {
  const std::string what = "nccl broadcast from rank " + std::to_string(root);
  if (root < 0 || root >= size_) return Status::InvalidArgument(what + ": root out of range");
  std::vector<std::pair<void*, std::pair<size_t, ncclDataType_t>>> args;
  for (auto& t : ts) {
    if (!t.is_cuda() || t.device().index() != device_ || !t.is_contiguous()) {
      return Status::InvalidArgument(what + ": tensors must be contiguous on cuda:" +
                                     std::to_string(device_));
    }
    auto type = NcclType(t.scalar_type());
    if (!type.ok()) return type.status();
    args.push_back({t.data_ptr(), {static_cast<size_t>(t.numel()), *type}});
  }
  auto work = Launch(what, ts, [&] {
    ncclResult_t r = ncclGroupStart();
    for (auto& a : args) {
      if (r != ncclSuccess) break;
      r = ncclBroadcast(a.first, a.first, a.second.first, a.second.second, root, comm_, stream_);
    }
    ncclResult_t end = ncclGroupEnd();
    return static_cast<int>(r != ncclSuccess ? r : end);
  });
  return work->Wait();
}

Status NcclCommunicator::Barrier() {
  const std::string what = "nccl barrier (rank " + std::to_string(rank_) + ")";
  float* p = barrier_buffer_;
  auto work = Launch(what, {}, [&] {
    return static_cast<int>(ncclAllReduce(p, p, 1, ncclFloat32, ncclSum, comm_, stream_));
  });
  return work->Wait();
}

void NcclCommunicator::Abort() {
  if (aborted_.exchange(true)) return;
  DDP_LOG(WARNING) << "nccl: rank " << rank_ << " aborting the communicator";
  ncclCommAbort(comm_);
}

std::optional<int64_t> CudaMemoryInUse(int device_index) {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return std::nullopt;
  if (cudaSetDevice(device_index) != cudaSuccess) return std::nullopt;
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes);
  cudaSetDevice(previous);
  if (e != cudaSuccess) return std::nullopt;
  return static_cast<int64_t>(total_bytes - free_bytes);
}

}  // namespace ddp::worker
