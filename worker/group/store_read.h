// Reading a key that may be absent, in one round trip that never waits. c10d's get() waits for a
// missing key (up to the store's timeout), so a check() then a get() stalls for that timeout when
// the authority deletes the key in between (a freed node rank); a compareSet whose expected value
// is never stored reads the value without waiting and never creates the key (c10d's semantics,
// which the project's store, HashStore and PrefixStore all keep).
#ifndef DDP_WORKER_GROUP_STORE_READ_H_
#define DDP_WORKER_GROUP_STORE_READ_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>
#include <vector>

namespace ddp::worker::group {

// The value of `key`, or "" when it does not exist. Throws what the store throws. Values the
// group writes are never empty (keys.h), so "" means absent.
inline std::string ValueOr(c10d::Store& s, const std::string& key) {
  // A value no writer ever stores: returned as is only when the key is absent.
  static const std::vector<uint8_t> kAbsent = {0, 'd', 'd', 'p', '-', 'a', 'b', 's', 'e', 'n', 't'};
  const std::vector<uint8_t> v = s.compareSet(key, kAbsent, kAbsent);
  if (v == kAbsent) return "";
  return {v.begin(), v.end()};
}

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_STORE_READ_H_
