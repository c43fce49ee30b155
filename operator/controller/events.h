// core/v1 Event objects recording the controller's decisions on a DDPJob (`kubectl describe`
// shows them). Pure builders; the controller creates them after the status write.
#ifndef DDP_OPERATOR_CONTROLLER_EVENTS_H_
#define DDP_OPERATOR_CONTROLLER_EVENTS_H_

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/types.h"
#include "operator/plan/plan.h"

namespace ddp::controller {

// The reportingComponent / source.component of our events.
inline constexpr char kEventComponent[] = "ddp-operator";

// An Event whose involvedObject is `job` (apiVersion, kind, namespace, name, uid,
// resourceVersion). The name is "<job>.<hex nanoseconds><hex sequence>", unique per process.
// `instance` names the reporting replica (reportingInstance, source.host).
nlohmann::json BuildEvent(const api::DDPJob& job, const plan::Event& event,
                          std::chrono::system_clock::time_point now, const std::string& instance);

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_CONTROLLER_EVENTS_H_
