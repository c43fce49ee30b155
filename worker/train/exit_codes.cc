// Status -> exit code.
#include "worker/train/exit_codes.h"

namespace ddp::worker {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
      return kExitInvalidConfig;
    case StatusCode::kNotFound:
    case StatusCode::kDataLoss:
      return kExitInvalidData;
    default:
      return kExitRetryable;
  }
}

}  // namespace ddp::worker
