// Watching the group's store instead of polling it: one request that the store parks until a
// watched key changes (worker/store/wire.h kWatch), so thousands of members waiting for the same
// event cost the store nothing until it happens. Any c10d::Store works (a store that cannot park
// the request, HashStore in tests, is polled every 10 ms instead); the project's own stores, the
// client and the in-process one, park it.
#ifndef DDP_WORKER_COMM_WATCH_H_
#define DDP_WORKER_COMM_WATCH_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "worker/store/wire.h"

namespace ddp::worker {

using store::Condition;

struct WatchResult {
  bool held = false;  // some condition held; false: `wait` passed first
  std::vector<std::optional<std::string>> values;  // each condition's key, as it was then
};

// A c10d::Store that can park a watch (the project's client and its in-process store).
class WatchableStore : public c10d::Store {
 public:
  explicit WatchableStore(std::chrono::milliseconds timeout) : c10d::Store(timeout) {}
  // Returns once a condition holds or `wait` passed (0: at once, a read of many keys in one
  // request). Throws what the store's calls throw (the client: within `wait` + its grace).
  virtual WatchResult Watch(const std::vector<Condition>& conditions,
                            std::chrono::milliseconds wait) = 0;
};

// Watch on a WatchableStore, else polling every 10 ms. Throws what the store throws.
WatchResult WatchKeys(c10d::Store& store, const std::vector<Condition>& conditions,
                      std::chrono::milliseconds wait);

// The value of `key`, or nullopt when it does not exist: one request that never waits (c10d's
// get() waits for a missing key), a compareSet whose expected value no writer stores (it reads
// without creating the key, as the project's stores, HashStore and PrefixStore all do). Throws
// what the store throws.
std::optional<std::string> ReadKey(c10d::Store& store, const std::string& key);

// Conditions, spelled out.
Condition Changed(const std::string& key, const std::string& known);  // "" known: absent
Condition AtLeast(const std::string& key, int64_t n);

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_WATCH_H_
