// JSON <-> struct for spec.runPolicy.schedulingPolicy. Internal to operator/api: serialize.cc
// calls these.
#ifndef DDP_OPERATOR_API_SCHEDULING_FIELDS_H_
#define DDP_OPERATOR_API_SCHEDULING_FIELDS_H_

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"

namespace ddp::api::internal {

// Reads the schedulingPolicy object `g` (REQUIRES: an object). Errors name the field
// ("spec.runPolicy.schedulingPolicy.minResources.cpu: expected a quantity ...").
Status ParseSchedulingPolicy(const nlohmann::json& g, SchedulingPolicy* out);
// The policy overlaid on `base` (the received object, so unknown fields survive); unset fields
// are absent.
nlohmann::json SchedulingPolicyToJson(const SchedulingPolicy& g, nlohmann::json base);

}  // namespace ddp::api::internal

#endif  // DDP_OPERATOR_API_SCHEDULING_FIELDS_H_
