// The round's failure budget, kept in the group's store (DESIGN.md "Drains, liveness and the
// budget"): how many failures the group may still heal in place this round. The rendezvous pod
// sets it once from DDP_MAX_RECOVERIES (maxRestarts - restarts - recoveries when the operator
// created it). A trainer death its supervisor heals is charged here, once, before the heal; a
// charge past the budget is refused and changes nothing. A pod failure is the operator's to
// charge (it alone tells a failure from an eviction): the pods it creates afterwards carry the
// smaller DDP_MAX_RECOVERIES, and their supervisors lower the budget to it when they register.
// Disruptions are never charged.
#ifndef DDP_WORKER_GROUP_BUDGET_H_
#define DDP_WORKER_GROUP_BUDGET_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp::worker::group {

// Sets the budget to `left` unless it was set before (by an earlier incarnation of the
// rendezvous on the same store). Errors: the store's, as Unavailable.
Status InitBudget(c10d::Store& store, int64_t left);

struct Charge {
  enum Outcome { kCharged, kAlreadyCharged, kRefused } outcome = kRefused;
  int64_t recoveries = 0;  // healed this round, this charge included when kCharged
  int64_t left = 0;        // budget left after this charge
};

// Lowers the budget to at most `left` (a pod the operator created after charging pod failures
// of this round carries the smaller budget; see DESIGN.md). Never raises it. Unavailable when
// the store fails.
Status LowerBudget(c10d::Store& store, int64_t left);

// Charges one failure. `once_key` non-empty: a second charge with the same key is
// kAlreadyCharged. Atomic across any number of concurrent callers (add() only: the first callers
// up to the budget succeed, the rest are refused and undo their decrement). Unavailable when the
// store fails.
StatusOr<Charge> ChargeFailure(c10d::Store& store, const std::string& once_key);

// The counters as they are now (for metrics): recoveries and left.
StatusOr<Charge> ReadBudget(c10d::Store& store);

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_BUDGET_H_
