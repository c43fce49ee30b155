// Internal to the planner: training progress in the status, hang detection and recovery time.
// Pure decisions over Observed::progress and the pass's time; plan.cc calls them.
#ifndef DDP_OPERATOR_PLAN_PROGRESS_H_
#define DDP_OPERATOR_PLAN_PROGRESS_H_

#include <chrono>
#include <optional>
#include <string>

#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// The failure reason (status.lastFailure.reason, the Restarting condition and the Event) of a
// job whose step stopped advancing.
inline constexpr char kReasonHung[] = "Hung";
// A status write that changes nothing but status.progress happens at most this often per job;
// the first progress of a job, and progress riding along another change, are written at once.
inline constexpr std::chrono::seconds kProgressWriteInterval{30};

// The current round's progress, or nullptr (no page with a step yet, or an older round's).
const ObservedProgress* CurrentProgress(const Pass& p);

// For a Running job with spec.failurePolicy.hangTimeoutSeconds and progress: when its step has
// not advanced for that long, returns the message of the Hung failure ("no step progress for
// 600s: last step 120 seen at <time>"); otherwise arms a timer for the hang deadline and
// returns nullopt. A job without progress is never hung.
std::optional<std::string> HangMessage(Pass* p);

// Sets st.progress from the current round's progress, rate-limited: nothing when the values are
// unchanged; when only progress would change, at most once per kProgressWriteInterval (a timer
// is armed for the deferred write). Call last, after every other status change of the pass.
void UpdateProgress(Pass* p);

// A job about to end Succeeded: status.progress holds the step every rank reached (the steps of
// its pods' `ddp: Finished` messages, else the total last read), no ETA and no rate. Call after
// UpdateProgress's last read is in (EndJob calls UpdateProgress first, then this).
void RecordFinish(Pass* p);

// " (step N of N)" from the pods' `ddp: Finished` messages, "" when none says (torchrun).
std::string FinishedSteps(const Pass& p);

// When the round has just started running after a failure: status.lastFailure.recoverySeconds,
// from the failure's time to now. Once per failure.
void RecordRecovery(Pass* p);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_PROGRESS_H_
