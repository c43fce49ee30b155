// Defaulting and validation of a DDPJob. Pure functions; thread-compatible.
#ifndef DDP_OPERATOR_API_VALIDATE_H_
#define DDP_OPERATOR_API_VALIDATE_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "operator/api/types.h"

namespace ddp::api {

// Fills derived defaults: elastic.minReplicas (1) and elastic.maxReplicas (max(replicas, min)),
// an empty namespace becomes "default". Idempotent.
void ApplyDefaults(DDPJob* job);

// Every problem of the (defaulted) job, one message each, naming the field and the value:
//   "spec.elastic.minReplicas (5) > spec.elastic.maxReplicas (3)". Empty when valid.
std::vector<std::string> Validate(const DDPJob& job);

// OK, or InvalidArgument whose message is Validate()'s lines joined by "\n".
Status ValidateStatus(const DDPJob& job);

// Environment variable names the operator sets; a user env var with one of these is rejected.
const std::vector<std::string>& ReservedEnvNames();

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_VALIDATE_H_
