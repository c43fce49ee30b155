// The job's goodput (ddp_job_goodput_ratio, docs/metrics.md "Incidents and goodput"): the share
// of the time since it started that training advanced. Pure: a function of the status and the
// time, so the operator's gauge, `ddp-operator local` and `ddp-operator chaos` say the same.
#ifndef DDP_OPERATOR_PLAN_GOODPUT_H_
#define DDP_OPERATOR_PLAN_GOODPUT_H_

#include <optional>

#include "operator/api/types.h"

namespace ddp::plan {

// (elapsed - stood still) / elapsed, in [0, 1]. elapsed: status.startTime to `now` (to
// completionTime once the job finished). Stood still: status.goodput.stalledSeconds (the start
// and every stall counted so far) plus the stall going on: since the earliest incident still
// without a stall, or since startTime while no step was ever committed. Nullopt without a
// startTime or before any time has passed.
std::optional<double> GoodputRatio(const api::DDPJobStatus& st, api::TimePoint now);

// The seconds of the stall going on at `now` (0 when training advances).
double OngoingStall(const api::DDPJobStatus& st, api::TimePoint now);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_GOODPUT_H_
