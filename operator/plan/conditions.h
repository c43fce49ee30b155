// metav1.Condition bookkeeping with Kubernetes semantics: lastTransitionTime moves only when the
// condition's status changes, so writing the same facts twice changes nothing.
#ifndef DDP_OPERATOR_PLAN_CONDITIONS_H_
#define DDP_OPERATOR_PLAN_CONDITIONS_H_

#include <string>

#include "operator/api/types.h"

namespace ddp::plan {

// Sets condition `type` to `status` ("True"/"False") with reason and message. Adds it when absent.
void SetCondition(api::DDPJobStatus* s, const std::string& type, const std::string& status,
                  const std::string& reason, const std::string& message, api::TimePoint now,
                  int64_t generation);

// Sets an existing True condition to False; absent or already-False conditions stay as they are
// (a job that never restarted has no Restarting condition at all).
void ClearCondition(api::DDPJobStatus* s, const std::string& type, const std::string& reason,
                    const std::string& message, api::TimePoint now, int64_t generation);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_CONDITIONS_H_
