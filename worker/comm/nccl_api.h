// The NCCL and CUDA runtime calls NcclCommunicator makes, behind an interface (the seam that lets
// a unit test drive the communicator's locking and abort logic without a GPU, as FileSystem does
// for checkpoints). RealNcclApi() calls the libraries; it lives in nccl_api_cuda.cc, the one
// worker source that includes CUDA and NCCL headers, compiled only when NCCL is found.
#ifndef DDP_WORKER_COMM_NCCL_API_H_
#define DDP_WORKER_COMM_NCCL_API_H_

#include <c10/core/DeviceType.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ddp::worker {

using NcclCommHandle = void*;    // ncclComm_t
using CudaStreamHandle = void*;  // cudaStream_t; nullptr names the legacy default stream
using CudaEventHandle = void*;   // cudaEvent_t

// The ncclResult_t and cudaError_t values the communicator tells apart (static_asserts in
// nccl_api_cuda.cc keep them equal to the libraries').
inline constexpr int kNcclSuccess = 0;
inline constexpr int kNcclInvalidArgument = 4;
inline constexpr int kNcclInProgress = 7;
inline constexpr int kCudaSuccess = 0;
inline constexpr int kCudaErrorNotReady = 600;
inline constexpr size_t kNcclUniqueIdBytes = 128;

// ncclDataType_t values.
enum class NcclDtype : int {
  kInt8 = 0, kUint8 = 1, kInt32 = 2, kInt64 = 4, kFloat16 = 6, kFloat32 = 7, kFloat64 = 8,
  kBfloat16 = 9,
};

// One method per library call; each returns the library's result code (ncclResult_t or
// cudaError_t as an int). The implementation adds no locking: NCCL allows one thread at a time
// per communicator, and NcclCommunicator is what serialises its calls.
class NcclApi {
 public:
  virtual ~NcclApi() = default;

  // NCCL.
  virtual int GetUniqueId(std::string* id) = 0;  // kNcclUniqueIdBytes bytes
  // ncclCommInitRankConfig with a non-blocking config (config.blocking = 0): may return
  // kNcclInProgress, then CommGetAsyncError reports when the communicator is ready. *comm may
  // be set even when an error is returned: the caller must then abort it.
  virtual int CommInitRank(NcclCommHandle* comm, int nranks, const std::string& id, int rank) = 0;
  virtual int CommGetAsyncError(NcclCommHandle comm, int* state) = 0;
  virtual int CommAbort(NcclCommHandle comm) = 0;    // frees comm
  virtual int CommDestroy(NcclCommHandle comm) = 0;  // frees comm
  virtual int AllReduceSum(void* buf, size_t count, NcclDtype dtype, NcclCommHandle comm,
                           CudaStreamHandle stream) = 0;  // in place
  virtual int Broadcast(void* buf, size_t count, NcclDtype dtype, int root, NcclCommHandle comm,
                        CudaStreamHandle stream) = 0;  // in place
  virtual int GroupStart() = 0;
  virtual int GroupEnd() = 0;
  virtual std::string NcclErrorString(int result) = 0;

  // CUDA runtime.
  virtual int SetDevice(int device) = 0;
  virtual int StreamCreate(CudaStreamHandle* stream) = 0;  // a non-blocking stream
  virtual int StreamQuery(CudaStreamHandle stream) = 0;    // kCudaErrorNotReady while busy
  virtual int StreamDestroy(CudaStreamHandle stream) = 0;
  virtual int EventCreate(CudaEventHandle* event, bool timing) = 0;
  virtual int EventRecord(CudaEventHandle event, CudaStreamHandle stream) = 0;
  virtual int StreamWaitEvent(CudaStreamHandle stream, CudaEventHandle event) = 0;
  virtual int EventQuery(CudaEventHandle event) = 0;  // kCudaErrorNotReady while pending
  virtual int EventElapsedMs(CudaEventHandle start, CudaEventHandle end, float* ms) = 0;
  virtual int EventDestroy(CudaEventHandle event) = 0;
  virtual int Malloc(void** ptr, size_t bytes) = 0;
  virtual int Free(void* ptr) = 0;
  virtual std::string CudaErrorString(int error) = 0;

  // The device type of the tensors this API's collectives take.
  virtual c10::DeviceType device_type() const { return c10::DeviceType::CUDA; }
};

// The libraries themselves. Defined only in builds with NCCL (nccl_api_cuda.cc); only the
// factory calls it. Thread-safe as the libraries are.
NcclApi* RealNcclApi();

// total - free bytes of CUDA device `device_index` (cudaMemGetInfo); nullopt when the runtime
// call fails. Leaves the calling thread's current device unchanged. Built only with NCCL.
std::optional<int64_t> CudaMemoryInUse(int device_index);

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_NCCL_API_H_
