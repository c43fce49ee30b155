// JSON <-> struct for the status fields about training progress (status.progress and
// status.lastFailure.recoverySeconds). Internal to operator/api: serialize.cc calls these.
#ifndef DDP_OPERATOR_API_PROGRESS_FIELDS_H_
#define DDP_OPERATOR_API_PROGRESS_FIELDS_H_

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"

namespace ddp::api::internal {

// A JSON number (integer or float) at `key`; absent/null leaves *out unchanged. Errors name
// "<path>.<key>" and the bad value.
Status ReadNumber(const nlohmann::json& parent, const char* key, const std::string& path,
                  std::optional<double>* out);

// Reads status.progress (absent, null or {} -> nullopt).
Status ParseProgress(const nlohmann::json& status, std::optional<Progress>* out);
nlohmann::json ProgressToJson(const Progress& p);

}  // namespace ddp::api::internal

#endif  // DDP_OPERATOR_API_PROGRESS_FIELDS_H_
