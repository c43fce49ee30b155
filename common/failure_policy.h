// What the end of a trainer or a pod means under spec.failurePolicy (DESIGN.md rule 2): one pure
// decision that the operator's planner, the pod supervisor's in-place restart and the launcher's
// exit code all call, so that restartPolicy and exit codes mean the same under Restart and InPlace.
#ifndef DDP_COMMON_FAILURE_POLICY_H_
#define DDP_COMMON_FAILURE_POLICY_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::failure {

enum class RestartPolicy { kOnFailure, kExitCode, kNever };

struct Rules {
  RestartPolicy policy = RestartPolicy::kOnFailure;
  std::vector<int> retryable_exit_codes = {75};  // used by kExitCode
};

enum class Verdict {
  kSucceeded,     // exit 0
  kRetry,         // a failure the policy retries (a new round, or a heal in place), budget allowing
  kNotRetryable,  // a failure the policy does not retry: the job fails
};

// 0 -> kSucceeded. Otherwise Never: kNotRetryable; OnFailure: kRetry; ExitCode: kRetry for a
// listed code or a signal (>= 128: the program did not choose it), else kNotRetryable.
Verdict Decide(const Rules& rules, int exit_code);

// "OnFailure" | "ExitCode" | "Never".
const char* PolicyName(RestartPolicy p);
bool ParsePolicy(const std::string& name, RestartPolicy* out);

// "75" or "75,76" (no spaces; "none" for no code) <-> codes. InvalidArgument naming `what`
// for anything else.
std::string FormatExitCodes(const std::vector<int>& codes);
StatusOr<std::vector<int>> ParseExitCodes(const std::string& text, const std::string& what);

}  // namespace ddp::failure

#endif  // DDP_COMMON_FAILURE_POLICY_H_
