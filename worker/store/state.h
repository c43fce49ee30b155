// The group store's keys and values, in memory, with c10d's Store semantics (a counter is a
// decimal string; compareSet as c10d's TCPStore). Owned by the process that hosts the store (the
// rendezvous pod; rank 0 under recovery Restart), shared by its network server (server.h) and
// its in-process users (worker/comm/local_store.h), which never go through a socket.
#ifndef DDP_WORKER_STORE_STATE_H_
#define DDP_WORKER_STORE_STATE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/store/wire.h"

namespace ddp::store {

// What the store did so far (for the rendezvous pod's metrics and the scale bench).
struct StoreStats {
  std::array<int64_t, kOpCount> requests{};    // over the network, by Op value (index 0 unused)
  std::array<int64_t, kOpCount> in_process{};  // by the hosting process itself (no socket)
  int64_t keys = 0;
  int64_t bytes = 0;        // keys and values held
  int64_t refused = 0;      // writes refused because the store was full
};

// Thread-safe. Every call takes one mutex briefly; Wait blocks without holding it.
class StoreState {
 public:
  // `max_bytes`: keys and values held at most; a write past it is refused (ResourceExhausted is
  // not a code here: Unavailable, "the store is full"), so one tenant's flood of keys cannot grow
  // the rendezvous pod without bound.
  explicit StoreState(int64_t max_bytes = int64_t{1} << 30);

  Status Set(const std::string& key, Bytes value);
  std::optional<Bytes> Get(const std::string& key);
  // c10d's add: an absent key counts from 0. InvalidArgument when the value is not an integer.
  StatusOr<int64_t> Add(const std::string& key, int64_t delta);
  // c10d's compareSet: an absent key with an empty `expected` is created with `desired`; an
  // absent key otherwise is left absent and `expected` returned; a present key equal to
  // `expected` takes `desired`. Returns the value now held (or `expected`, as said).
  StatusOr<Bytes> CompareSet(const std::string& key, const Bytes& expected, Bytes desired);
  bool Check(const std::vector<std::string>& keys);
  bool Delete(const std::string& key);
  int64_t NumKeys();
  // Blocks until every key exists (true) or `deadline` passed (false).
  bool Wait(const std::vector<std::string>& keys, std::chrono::steady_clock::time_point deadline);

  // Whether any of `conditions` holds now; the values of their keys (nullopt: absent) in order.
  bool Evaluate(const std::vector<Condition>& conditions, std::vector<std::optional<Bytes>>* values);
  // The sum of the sizes of the values `conditions` name (a key named twice counts twice).
  size_t ValueBytes(const std::vector<Condition>& conditions);
  // Blocks until one of `conditions` holds (true) or `deadline` passed (false); fills `values`
  // either way, as Evaluate.
  bool Watch(const std::vector<Condition>& conditions,
             std::chrono::steady_clock::time_point deadline,
             std::vector<std::optional<Bytes>>* values);

  // Called with every key written, created or deleted, after the change, without the store's
  // mutex held (the server looks at its parked requests on that key again); nullptr stops the
  // calls. The hook must be quick and must not call back into this object.
  void OnChange(std::function<void(const std::string&)> hook);

  // Counts a request: the server what it serves, the in-process store (in_process) what it does.
  void Count(Op op, bool in_process = false);
  StoreStats Stats();

 private:
  // REQUIRES: mu_ held. Unavailable when `more` bytes would pass the bound.
  Status Room(int64_t more);
  void Changed(const std::string& key);  // REQUIRES: mu_ not held
  bool EvaluateLocked(const std::vector<Condition>& conditions,
                      std::vector<std::optional<Bytes>>* values);

  const int64_t max_bytes_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Bytes> kv_;
  StoreStats stats_;  // all but `requests`
  std::array<std::atomic<int64_t>, kOpCount> requests_{}, in_process_{};
  std::mutex hook_mu_;  // guards on_change_ (set and called from different threads)
  std::function<void(const std::string&)> on_change_;
};

}  // namespace ddp::store

#endif  // DDP_WORKER_STORE_STATE_H_
