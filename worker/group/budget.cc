// The failure budget on the store (see budget.h).
#include "worker/group/budget.h"

#include <algorithm>

#include "worker/comm/work_util.h"
#include "worker/group/keys.h"

namespace ddp::worker::group {
namespace {

constexpr char kBudgetSetKey[] = "budget_set";

Status StoreError(const std::string& what, const std::exception& e) {
  return Status::Unavailable("budget: " + what + ": " + BackendErrorText(e));
}

}  // namespace

Status InitBudget(c10d::Store& store, int64_t left) {
  try {
    if (store.add(kBudgetSetKey, 1) == 1) store.add(kBudgetKey, left);
  } catch (const std::exception& e) {
    return StoreError("init", e);
  }
  return Status::OK();
}

Status LowerBudget(c10d::Store& store, int64_t left) {
  try {
    // add() keeps the counter as decimal text, which compareSet compares byte for byte.
    for (int64_t cur = store.add(kBudgetKey, 0); cur > left; cur = store.add(kBudgetKey, 0)) {
      const std::string want = std::to_string(left);
      if (Text(store.compareSet(kBudgetKey, Bytes(std::to_string(cur)), Bytes(want))) == want) break;
    }
  } catch (const std::exception& e) {
    return StoreError("lower", e);
  }
  return Status::OK();
}

StatusOr<Charge> ChargeFailure(c10d::Store& store, const std::string& once_key) {
  Charge c;
  try {
    if (!once_key.empty() && store.add(ChargeKey(once_key), 1) > 1) {
      c.outcome = Charge::kAlreadyCharged;
      c.recoveries = store.add(kRecoveriesKey, 0);
      c.left = store.add(kBudgetKey, 0);
      return c;
    }
    const int64_t left = store.add(kBudgetKey, -1);
    if (left < 0) {
      c.left = store.add(kBudgetKey, 1);
      c.outcome = Charge::kRefused;
      c.recoveries = store.add(kRecoveriesKey, 0);
      return c;
    }
    c.outcome = Charge::kCharged;
    c.left = left;
    c.recoveries = store.add(kRecoveriesKey, 1);
  } catch (const std::exception& e) {
    return StoreError("charge", e);
  }
  return c;
}

StatusOr<Charge> ReadBudget(c10d::Store& store) {
  Charge c;
  try {
    c.recoveries = store.add(kRecoveriesKey, 0);
    c.left = std::max<int64_t>(0, store.add(kBudgetKey, 0));
  } catch (const std::exception& e) {
    return StoreError("read", e);
  }
  return c;
}

}  // namespace ddp::worker::group
