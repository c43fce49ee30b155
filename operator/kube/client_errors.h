// Pure mapping from an HTTP response of the API server to a Status, and the retry rules.
#ifndef DDP_OPERATOR_KUBE_CLIENT_ERRORS_H_
#define DDP_OPERATOR_KUBE_CLIENT_ERRORS_H_

#include <string>

#include "common/status.h"

namespace ddp::controller {

// `body` is the response body (a Kubernetes Status object when the server sent one; anything
// else is tolerated). `context` prefixes the message: "list pods ml". 2xx -> OK.
Status StatusFromHttp(int code, const std::string& body, const std::string& context);

// Whether a failed attempt may be sent again: 429 always (the server did not process it);
// 5xx and connection failures (code 0) only for idempotent verbs (get, list, watch).
bool ShouldRetry(int code, const std::string& verb);

// Parses a Retry-After header in seconds ("" or an HTTP date -> -1). Capped at 60.
int ParseRetryAfter(const std::string& header);

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_CLIENT_ERRORS_H_
