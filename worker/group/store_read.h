// Reading a key that may be absent, in one round trip that never waits (comm/watch.h ReadKey):
// a check() then a get() would stall for the store's timeout when the authority deletes the key
// in between (a freed node rank).
#ifndef DDP_WORKER_GROUP_STORE_READ_H_
#define DDP_WORKER_GROUP_STORE_READ_H_

#include <string>

#include "worker/comm/watch.h"

namespace ddp::worker::group {

// The value of `key`, or "" when it does not exist. Throws what the store throws. Values the
// group writes are never empty (keys.h), so "" means absent.
inline std::string ValueOr(c10d::Store& s, const std::string& key) {
  return ReadKey(s, key).value_or("");
}

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_STORE_READ_H_
