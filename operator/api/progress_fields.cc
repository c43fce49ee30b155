// status.progress and status.lastFailure.recoverySeconds on the wire.
#include "operator/api/progress_fields.h"

#include <cmath>

#include "operator/api/json_fields.h"
#include "operator/api/time_format.h"

namespace ddp::api::internal {

Status ReadNumber(const nlohmann::json& parent, const char* key, const std::string& path,
                  std::optional<double>* out) {
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return Status::OK();
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    return Status::InvalidArgument(path + "." + key + ": expected a number, got " +
                                   Describe(*it));
  }
  *out = it->get<double>();
  return Status::OK();
}

Status ParseProgress(const nlohmann::json& status, std::optional<Progress>* out) {
  const nlohmann::json* pj = nullptr;
  DDP_RETURN_IF_ERROR(ReadObject(status, "progress", "status", &pj));
  if (!pj || pj->empty()) return Status::OK();
  const std::string path = "status.progress";
  Progress p;
  std::optional<int64_t> step;
  DDP_RETURN_IF_ERROR(ReadInt64(*pj, "step", path, &step));
  p.step = step.value_or(0);
  DDP_RETURN_IF_ERROR(ReadInt64(*pj, "totalSteps", path, &p.total_steps));
  DDP_RETURN_IF_ERROR(ReadNumber(*pj, "loss", path, &p.loss));
  DDP_RETURN_IF_ERROR(ReadNumber(*pj, "tokensPerSecond", path, &p.tokens_per_second));
  DDP_RETURN_IF_ERROR(ReadInt64(*pj, "etaSeconds", path, &p.eta_seconds));
  DDP_RETURN_IF_ERROR(ReadTime(*pj, "updatedAt", path, &p.updated_at));
  std::optional<int64_t> recoveries;
  DDP_RETURN_IF_ERROR(ReadInt64(*pj, "recoveries", path, &recoveries));
  p.recoveries = recoveries.value_or(0);
  *out = p;
  return Status::OK();
}

nlohmann::json ProgressToJson(const Progress& p) {
  nlohmann::json out = {{"step", p.step}};
  if (p.total_steps) out["totalSteps"] = *p.total_steps;
  if (p.loss) out["loss"] = *p.loss;
  if (p.tokens_per_second) out["tokensPerSecond"] = *p.tokens_per_second;
  if (p.eta_seconds) out["etaSeconds"] = *p.eta_seconds;
  if (p.updated_at) out["updatedAt"] = FormatTime(*p.updated_at);
  if (p.recoveries != 0) out["recoveries"] = p.recoveries;
  return out;
}

}  // namespace ddp::api::internal
