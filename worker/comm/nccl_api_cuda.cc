// RealNcclApi: NcclApi calling NCCL and the CUDA runtime. The one worker source that includes
// their headers; compiled only when NCCL is found (worker/CMakeLists.txt: *_cuda.cc).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

#include "worker/comm/nccl_api.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "NCCL >= 2.14 is required (non-blocking communicators for deadlines)"
#endif

namespace ddp::worker {
namespace {

static_assert(kNcclSuccess == ncclSuccess && kNcclInProgress == ncclInProgress &&
              kNcclInvalidArgument == ncclInvalidArgument);
static_assert(kCudaSuccess == cudaSuccess && kCudaErrorNotReady == cudaErrorNotReady);
static_assert(kNcclUniqueIdBytes == sizeof(ncclUniqueId));
static_assert(static_cast<int>(NcclDtype::kInt8) == ncclInt8 &&
              static_cast<int>(NcclDtype::kUint8) == ncclUint8 &&
              static_cast<int>(NcclDtype::kInt32) == ncclInt32 &&
              static_cast<int>(NcclDtype::kInt64) == ncclInt64 &&
              static_cast<int>(NcclDtype::kFloat16) == ncclFloat16 &&
              static_cast<int>(NcclDtype::kFloat32) == ncclFloat32 &&
              static_cast<int>(NcclDtype::kFloat64) == ncclFloat64 &&
              static_cast<int>(NcclDtype::kBfloat16) == ncclBfloat16);

ncclComm_t Comm(NcclCommHandle c) { return static_cast<ncclComm_t>(c); }
cudaStream_t Stream(CudaStreamHandle s) {
  return s == nullptr ? cudaStreamLegacy : static_cast<cudaStream_t>(s);
}
cudaEvent_t Event(CudaEventHandle e) { return static_cast<cudaEvent_t>(e); }
ncclDataType_t Dtype(NcclDtype d) { return static_cast<ncclDataType_t>(d); }

class CudaNcclApi : public NcclApi {
 public:
  int GetUniqueId(std::string* id) override {
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r == ncclSuccess) id->assign(reinterpret_cast<const char*>(&u), sizeof(u));
    return r;
  }
  int CommInitRank(NcclCommHandle* comm, int nranks, const std::string& id, int rank) override {
    if (id.size() != sizeof(ncclUniqueId)) return ncclInvalidArgument;
    ncclUniqueId u;
    std::memcpy(&u, id.data(), sizeof(u));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so that a peer that never joins cannot block us past a deadline
    ncclComm_t c = nullptr;
    ncclResult_t r = ncclCommInitRankConfig(&c, nranks, u, rank, &config);
    *comm = c;
    return r;
  }
  int CommGetAsyncError(NcclCommHandle comm, int* state) override {
    ncclResult_t s = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(Comm(comm), &s);
    *state = s;
    return r;
  }
  int CommAbort(NcclCommHandle comm) override { return ncclCommAbort(Comm(comm)); }
  int CommDestroy(NcclCommHandle comm) override { return ncclCommDestroy(Comm(comm)); }
  int AllReduceSum(void* buf, size_t count, NcclDtype dtype, NcclCommHandle comm,
                   CudaStreamHandle stream) override {
    return ncclAllReduce(buf, buf, count, Dtype(dtype), ncclSum, Comm(comm), Stream(stream));
  }
  int Broadcast(void* buf, size_t count, NcclDtype dtype, int root, NcclCommHandle comm,
                CudaStreamHandle stream) override {
    return ncclBroadcast(buf, buf, count, Dtype(dtype), root, Comm(comm), Stream(stream));
  }
  int GroupStart() override { return ncclGroupStart(); }
  int GroupEnd() override { return ncclGroupEnd(); }
  std::string NcclErrorString(int result) override {
    return ncclGetErrorString(static_cast<ncclResult_t>(result));
  }

  int SetDevice(int device) override { return cudaSetDevice(device); }
  int StreamCreate(CudaStreamHandle* stream) override {
    cudaStream_t s = nullptr;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    *stream = s;
    return e;
  }
  int StreamQuery(CudaStreamHandle stream) override { return cudaStreamQuery(Stream(stream)); }
  int StreamDestroy(CudaStreamHandle stream) override {
    return cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  }
  int EventCreate(CudaEventHandle* event, bool timing) override {
    cudaEvent_t e = nullptr;
    cudaError_t r = cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming);
    *event = e;
    return r;
  }
  int EventRecord(CudaEventHandle event, CudaStreamHandle stream) override {
    return cudaEventRecord(Event(event), Stream(stream));
  }
  int StreamWaitEvent(CudaStreamHandle stream, CudaEventHandle event) override {
    return cudaStreamWaitEvent(Stream(stream), Event(event), 0);
  }
  int EventQuery(CudaEventHandle event) override { return cudaEventQuery(Event(event)); }
  int EventElapsedMs(CudaEventHandle start, CudaEventHandle end, float* ms) override {
    return cudaEventElapsedTime(ms, Event(start), Event(end));
  }
  int EventDestroy(CudaEventHandle event) override { return cudaEventDestroy(Event(event)); }
  int Malloc(void** ptr, size_t bytes) override { return cudaMalloc(ptr, bytes); }
  int Free(void* ptr) override { return cudaFree(ptr); }
  std::string CudaErrorString(int error) override {
    return cudaGetErrorString(static_cast<cudaError_t>(error));
  }
};

}  // namespace

NcclApi* RealNcclApi() {
  static CudaNcclApi* api = new CudaNcclApi();
  return api;
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
