// Simulated pods for the scale bench: the real group code, stand-in training. Each pod is the
// real PodClient (registration, presence, the watched view of its verdicts and node rank) driven
// by a loop that does what the supervisor does with it (launch/supervisor.cc: start the rank's
// trainers once the group gives the pod a node rank, end on a verdict or a fence); each of its
// trainers is the real GroupMembership (Connect, the watcher and its heartbeats, Join, the
// generation protocol) with a stand-in communicator (no collective: nothing to all-reduce) and a
// fixed fake step time. What is stood in: the model, the data and the collectives, i.e. what does
// not touch the store. Events (formed, aborted) go to an EventSink with CLOCK_MONOTONIC times,
// which every process on the machine shares.
#ifndef DDP_BENCH_SCALE_SIM_H_
#define DDP_BENCH_SCALE_SIM_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "worker/group/settings.h"

namespace ddp::bench {

namespace group = worker::group;

// Monotonic nanoseconds (CLOCK_MONOTONIC, the same in every process).
int64_t NowNs();

// "formed <rank> <generation> <ns>" / "aborted <rank> <generation> <ns>" lines, thread-safe.
class EventSink {
 public:
  explicit EventSink(std::function<void(const std::string&)> out) : out_(std::move(out)) {}
  void Emit(const std::string& kind, int rank, int64_t generation, int64_t ns);

 private:
  std::mutex mu_;
  std::function<void(const std::string&)> out_;
};

struct SimOptions {
  std::string store_host = "127.0.0.1";
  int store_port = 0;
  int nodes = 1;           // NNODES of the group
  int per_pod = 1;         // stand-in trainers per pod (NPROC_PER_NODE)
  int liveness_seconds = 5;
  std::chrono::milliseconds step{100};  // the fake step time
  int round = 0;
  std::string job = "scale";
};

// One simulated pod: its thread runs the supervisor's loop over the real PodClient. Thread-safe.
class SimPod {
 public:
  SimPod(const SimOptions& o, int node, const std::string& uid, EventSink* events);
  ~SimPod();  // stops its trainers and its loop (a clean end: presence closed)
  SimPod(const SimPod&) = delete;
  SimPod& operator=(const SimPod&) = delete;

  bool started() const { return started_.load(); }  // its trainers run

 private:
  class Trainer;
  void Run();

  group::GroupSettings gs_;
  SimOptions o_;
  EventSink* events_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> started_{false};
  std::vector<std::unique_ptr<Trainer>> trainers_;
  std::thread thread_;
};

}  // namespace ddp::bench

#endif  // DDP_BENCH_SCALE_SIM_H_
