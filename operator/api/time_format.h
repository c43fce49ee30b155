// RFC 3339 timestamps with whole seconds, as Kubernetes writes them: "2026-11-22T03:38:25Z".
#ifndef DDP_OPERATOR_API_TIME_FORMAT_H_
#define DDP_OPERATOR_API_TIME_FORMAT_H_

#include <string>

#include "common/status.h"
#include "operator/api/types.h"

namespace ddp::api {

// UTC, truncated to the second.
std::string FormatTime(TimePoint t);
// Accepts "YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)". Fractions are dropped.
StatusOr<TimePoint> ParseTime(const std::string& text);
// Truncates to whole seconds, so a time survives a trip through the API server unchanged.
TimePoint TruncateToSeconds(TimePoint t);

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_TIME_FORMAT_H_
