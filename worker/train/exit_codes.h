// The exit-code contract with the operator (DESIGN.md "Worker exit codes"). Only main.cc and the
// launcher exit; everything else returns a Status that ExitCodeFor maps here, in one place.
#ifndef DDP_WORKER_TRAIN_EXIT_CODES_H_
#define DDP_WORKER_TRAIN_EXIT_CODES_H_

#include <string>

#include "common/status.h"
#include "worker/contract/exit_codes.h"  // kExitOk ... kExitRetryable

namespace ddp::worker {

// InvalidArgument/FailedPrecondition -> 2; NotFound/DataLoss -> 3 (only data loading reports
// those to main: a corrupt checkpoint is skipped, not fatal); Unavailable/DeadlineExceeded/
// Aborted-like failures and Internal -> 75 (a retry in a fresh group may well succeed).
int ExitCodeFor(const Status& status);

// Where a pod's process says why it ended (Kubernetes' terminationMessagePath, read back by the
// operator): DDP_TERMINATION_LOG when set (empty: nowhere; the supervisor and the launcher give
// their trainers an empty one, they speak for the pod), else /dev/termination-log when it exists
// (a container's; never created outside one). Empty when there is nowhere to write.
std::string TerminationLogPath();

// Overwrites the termination log with `message` and a newline; false when it could not.
bool WriteTerminationLog(const std::string& path, const std::string& message);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_EXIT_CODES_H_
