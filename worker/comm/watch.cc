// Watching the store (see watch.h).
#include "worker/comm/watch.h"

#include <thread>

namespace ddp::worker {
std::optional<std::string> ReadKey(c10d::Store& s, const std::string& key) {
  // A value no writer ever stores: returned as is only when the key is absent.
  static const std::vector<uint8_t> kAbsent = {0, 'd', 'd', 'p', '-', 'a', 'b', 's', 'e', 'n', 't'};
  const std::vector<uint8_t> v = s.compareSet(key, kAbsent, kAbsent);
  if (v == kAbsent) return std::nullopt;
  return std::string(v.begin(), v.end());
}

Condition Changed(const std::string& key, const std::string& known) {
  Condition c;
  c.key = key;
  c.kind = Condition::kChanged;
  c.operand.assign(known.begin(), known.end());
  return c;
}

Condition AtLeast(const std::string& key, int64_t n) {
  Condition c;
  c.key = key;
  c.kind = Condition::kAtLeast;
  const std::string text = std::to_string(n);
  c.operand.assign(text.begin(), text.end());
  return c;
}

WatchResult WatchKeys(c10d::Store& store, const std::vector<Condition>& conditions,
                      std::chrono::milliseconds wait) {
  if (auto* w = dynamic_cast<WatchableStore*>(&store)) return w->Watch(conditions, wait);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    WatchResult r;
    for (const Condition& c : conditions) {
      auto v = ReadKey(store, c.key);
      store::Bytes bytes;
      if (v) bytes.assign(v->begin(), v->end());
      r.held = r.held || store::Holds(c, v ? &bytes : nullptr);
      r.values.push_back(std::move(v));
    }
    if (r.held || std::chrono::steady_clock::now() >= deadline) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace ddp::worker
