// A fake NcclApi for NcclCommunicator's unit tests: a device that runs collectives in order,
// completing them when the test says so, and that enforces NCCL's threading rules (one thread at
// a time per communicator, nothing but ncclCommGetAsyncError while a call is ncclInProgress, a
// group issued by one thread) and flags any call on a communicator that ncclCommAbort freed.
#ifndef DDP_TESTS_WORKER_COMM_FAKE_NCCL_API_H_
#define DDP_TESTS_WORKER_COMM_FAKE_NCCL_API_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "worker/comm/nccl_api.h"

namespace ddp::testing {

using worker::CudaEventHandle;
using worker::CudaStreamHandle;
using worker::kCudaErrorNotReady;
using worker::kCudaSuccess;
using worker::kNcclInProgress;
using worker::kNcclInvalidArgument;
using worker::kNcclSuccess;
using worker::kNcclUniqueIdBytes;
using worker::NcclCommHandle;
using worker::NcclDtype;

// A device that runs collectives in order on the communicator's stream: the n-th collective
// enqueued completes once the test (or an abort, when abort_drains) says so.
class FakeNcclApi : public worker::NcclApi {
 public:
  // Knobs.
  int init_result = kNcclSuccess;     // what CommInitRank returns
  bool init_sets_handle = true;       // whether it sets *comm (NCCL does, for async failures)
  int init_polls = 0;                 // CommGetAsyncError says InProgress this often (-1: forever)
  int init_state = kNcclSuccess;      // and then this
  int stream_create_result = kCudaSuccess;
  int malloc_result = kCudaSuccess;
  int enqueue_in_progress_polls = 0;  // an enqueue stays InProgress this often (-1: forever)
  bool auto_complete = true;          // collectives complete as soon as they are enqueued
  bool abort_drains = true;           // ncclCommAbort stops every kernel of the communicator
  std::chrono::microseconds call_time{200};  // time spent inside each NCCL call (widens races)

  // What the test reads.
  // Each broken rule once, with how often: "ncclCommAbort after ... (x3)".
  std::string Violations() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& [v, n] : violations_) out += v + " (x" + std::to_string(n) + ")\n";
    return out;
  }
  // Resources created and never released, e.g. "2 comm(s), 1 stream(s)"; "" when none.
  std::string Leaks() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    auto add = [&](size_t n, const char* what) {
      if (n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    };
    size_t comms = 0;
    for (const auto& c : comms_) comms += c->freed ? 0 : 1;
    add(comms, "comm(s)");
    add(streams_.size(), "stream(s)");
    add(buffers_.size(), "device buffer(s)");
    return out;
  }
  int aborts() { return aborts_; }
  int destroys() { return destroys_; }
  int async_error_calls() { return async_error_calls_; }
  void CompleteAll() {
    std::lock_guard<std::mutex> lock(mu_);
    completed_ = launched_;
  }

  int GetUniqueId(std::string* id) override {
    id->assign(kNcclUniqueIdBytes, 'u');
    return kNcclSuccess;
  }
  int CommInitRank(NcclCommHandle* comm, int, const std::string& id, int) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (id.size() != kNcclUniqueIdBytes) return kNcclInvalidArgument;
    *comm = nullptr;
    if (init_result != kNcclSuccess && init_result != kNcclInProgress && !init_sets_handle) {
      return init_result;
    }
    comms_.push_back(std::make_unique<Comm>());
    comms_.back()->polls_left = init_polls;
    comms_.back()->state_after = init_state;
    *comm = comms_.back().get();
    return init_result;
  }
  int CommGetAsyncError(NcclCommHandle comm, int* state) override {
    Call call(this, comm, "ncclCommGetAsyncError", /*allowed_in_progress=*/true);
    ++async_error_calls_;
    std::lock_guard<std::mutex> lock(mu_);
    Comm* c = static_cast<Comm*>(comm);
    if (c->polls_left != 0) {
      if (c->polls_left > 0) --c->polls_left;
      *state = kNcclInProgress;
    } else {
      *state = c->state_after;
    }
    return kNcclSuccess;
  }
  int CommAbort(NcclCommHandle comm) override {
    Call call(this, comm, "ncclCommAbort", /*allowed_in_progress=*/true);
    std::lock_guard<std::mutex> lock(mu_);
    static_cast<Comm*>(comm)->freed = true;
    ++aborts_;
    if (abort_drains) completed_ = launched_;
    return kNcclSuccess;
  }
  int CommDestroy(NcclCommHandle comm) override {
    Call call(this, comm, "ncclCommDestroy", /*allowed_in_progress=*/false);
    std::lock_guard<std::mutex> lock(mu_);
    static_cast<Comm*>(comm)->freed = true;
    ++destroys_;
    return kNcclSuccess;
  }
  int AllReduceSum(void*, size_t, NcclDtype, NcclCommHandle comm, CudaStreamHandle) override {
    return Enqueue(comm, "ncclAllReduce");
  }
  int Broadcast(void*, size_t, NcclDtype, int, NcclCommHandle comm, CudaStreamHandle) override {
    return Enqueue(comm, "ncclBroadcast");
  }
  int GroupStart() override {
    std::lock_guard<std::mutex> lock(mu_);
    group_thread_ = std::this_thread::get_id();
    in_group_ = true;
    return kNcclSuccess;
  }
  int GroupEnd() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (group_thread_ != std::this_thread::get_id()) Violation("ncclGroupEnd from another thread");
    in_group_ = false;
    return kNcclSuccess;
  }
  std::string NcclErrorString(int r) override { return "fake nccl error " + std::to_string(r); }

  int SetDevice(int) override { return kCudaSuccess; }
  int StreamCreate(CudaStreamHandle* stream) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_create_result != kCudaSuccess) return stream_create_result;
    *stream = reinterpret_cast<CudaStreamHandle>(++next_handle_);
    streams_.insert(*stream);
    return kCudaSuccess;
  }
  int StreamQuery(CudaStreamHandle) override {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_ >= launched_ ? kCudaSuccess : kCudaErrorNotReady;
  }
  int StreamDestroy(CudaStreamHandle stream) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (streams_.erase(stream) == 0) Violation("cudaStreamDestroy of an unknown stream");
    return kCudaSuccess;
  }
  int EventCreate(CudaEventHandle* event, bool) override {
    std::lock_guard<std::mutex> lock(mu_);
    *event = reinterpret_cast<CudaEventHandle>(++next_handle_);
    events_[*event] = 0;
    return kCudaSuccess;
  }
  int EventRecord(CudaEventHandle event, CudaStreamHandle stream) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_[event] = stream == nullptr ? 0 : launched_;  // the default stream is always idle
    return kCudaSuccess;
  }
  int StreamWaitEvent(CudaStreamHandle, CudaEventHandle) override { return kCudaSuccess; }
  int EventQuery(CudaEventHandle event) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(event);
    if (it == events_.end()) {
      Violation("cudaEventQuery of a destroyed event");
      return 400;  // cudaErrorInvalidResourceHandle
    }
    return it->second <= completed_ ? kCudaSuccess : kCudaErrorNotReady;
  }
  int EventElapsedMs(CudaEventHandle, CudaEventHandle, float* ms) override {
    *ms = 1;
    return kCudaSuccess;
  }
  int EventDestroy(CudaEventHandle event) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (events_.erase(event) == 0) Violation("cudaEventDestroy of an unknown event");
    return kCudaSuccess;
  }
  int Malloc(void** ptr, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (malloc_result != kCudaSuccess) return malloc_result;
    *ptr = ::operator new(bytes);
    buffers_.insert(*ptr);
    return kCudaSuccess;
  }
  int Free(void* ptr) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (buffers_.erase(ptr) == 0) Violation("cudaFree of an unknown pointer");
    ::operator delete(ptr);
    return kCudaSuccess;
  }
  std::string CudaErrorString(int e) override { return "fake cuda error " + std::to_string(e); }
  c10::DeviceType device_type() const override { return c10::DeviceType::CPU; }

 private:
  struct Comm {
    bool freed = false;
    int polls_left = 0;
    int state_after = kNcclSuccess;
  };
  // Marks one NCCL call on `comm` for its duration and checks NCCL's rules on entry.
  class Call {
   public:
    Call(FakeNcclApi* api, NcclCommHandle comm, const char* what, bool allowed_in_progress)
        : api_(api) {
      {
        std::lock_guard<std::mutex> lock(api->mu_);
        if (comm == nullptr) {
          api->Violation(std::string(what) + " on a null communicator");
          comm = &api->null_comm_;
        }
        if (static_cast<Comm*>(comm)->freed) api->Violation(std::string(what) + " after the communicator was freed");
        if (api->in_group_ && api->group_thread_ != std::this_thread::get_id()) {
          api->Violation(std::string(what) + " from another thread inside a group");
        }
        if (!allowed_in_progress && static_cast<Comm*>(comm)->polls_left != 0) {
          api->Violation(std::string(what) + " while an operation is ncclInProgress");
        }
      }
      if (api->inside_.fetch_add(1) != 0) {
        std::lock_guard<std::mutex> lock(api->mu_);
        api->Violation(std::string(what) + " while another thread is inside NCCL on the same communicator");
      }
      std::this_thread::sleep_for(api->call_time);  // a call that takes time, so that the poll overlaps
    }
    ~Call() { api_->inside_.fetch_sub(1); }

   private:
    FakeNcclApi* api_;
  };

  int Enqueue(NcclCommHandle comm, const char* what) {
    Call call(this, comm, what, /*allowed_in_progress=*/false);
    std::lock_guard<std::mutex> lock(mu_);
    ++launched_;
    if (auto_complete) completed_ = launched_;
    static_cast<Comm*>(comm)->polls_left = enqueue_in_progress_polls;
    return enqueue_in_progress_polls != 0 ? kNcclInProgress : kNcclSuccess;
  }
  void Violation(const std::string& v) { ++violations_[v]; }  // REQUIRES: mu_ held

  std::mutex mu_;
  std::atomic<int> inside_{0};
  std::map<std::string, int> violations_;
  Comm null_comm_;
  std::vector<std::unique_ptr<Comm>> comms_;  // never deleted: a freed one stays readable
  std::set<CudaStreamHandle> streams_;
  std::map<CudaEventHandle, uint64_t> events_;  // event -> collectives before it
  std::set<void*> buffers_;
  uint64_t next_handle_ = 0x1000;
  uint64_t launched_ = 0, completed_ = 0;
  bool in_group_ = false;
  std::thread::id group_thread_;
  std::atomic<int> aborts_{0}, destroys_{0}, async_error_calls_{0};
};

}  // namespace ddp::testing

#endif  // DDP_TESTS_WORKER_COMM_FAKE_NCCL_API_H_
