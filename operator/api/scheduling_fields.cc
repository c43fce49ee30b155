// spec.runPolicy.schedulingPolicy <-> JSON; see scheduling_fields.h.
#include "operator/api/scheduling_fields.h"

#include <optional>
#include <string>

#include "operator/api/json_fields.h"

namespace ddp::api::internal {
namespace {

using nlohmann::json;

constexpr char kPath[] = "spec.runPolicy.schedulingPolicy";

Status ReadOptionalInt(const json& parent, const char* key, std::optional<int>* out) {
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return Status::OK();
  int n = 0;
  DDP_RETURN_IF_ERROR(ReadInt(parent, key, kPath, &n));
  *out = n;
  return Status::OK();
}

void SetOrErase(json* obj, const char* key, const std::optional<int>& v) {
  if (v) {
    (*obj)[key] = *v;
  } else {
    obj->erase(key);
  }
}

void SetOrErase(json* obj, const char* key, const std::string& v) {
  if (!v.empty()) {
    (*obj)[key] = v;
  } else {
    obj->erase(key);
  }
}

}  // namespace

Status ParseSchedulingPolicy(const json& g, SchedulingPolicy* out) {
  DDP_RETURN_IF_ERROR(ReadOptionalInt(g, "minAvailable", &out->min_available));
  DDP_RETURN_IF_ERROR(ReadString(g, "queue", kPath, &out->queue));
  DDP_RETURN_IF_ERROR(ReadString(g, "priorityClass", kPath, &out->priority_class));
  DDP_RETURN_IF_ERROR(ReadOptionalInt(g, "scheduleTimeoutSeconds", &out->schedule_timeout_seconds));
  const json* resources = nullptr;
  DDP_RETURN_IF_ERROR(ReadObject(g, "minResources", kPath, &resources));
  if (!resources) return Status::OK();
  // A ResourceList: quantities as strings ("32", "500Gi") or plain integers.
  for (const auto& [name, v] : resources->items()) {
    if (v.is_string()) {
      out->min_resources[name] = v.get<std::string>();
    } else if (v.is_number_integer()) {
      out->min_resources[name] = std::to_string(v.get<int64_t>());
    } else {
      return Status::InvalidArgument(std::string(kPath) + ".minResources." + name +
                                     ": expected a quantity (\"8\", \"64Gi\"), got " +
                                     Describe(v));
    }
  }
  return Status::OK();
}

json SchedulingPolicyToJson(const SchedulingPolicy& g, json base) {
  if (!base.is_object()) base = json::object();
  SetOrErase(&base, "minAvailable", g.min_available);
  SetOrErase(&base, "queue", g.queue);
  SetOrErase(&base, "priorityClass", g.priority_class);
  SetOrErase(&base, "scheduleTimeoutSeconds", g.schedule_timeout_seconds);
  if (g.min_resources.empty()) {
    base.erase("minResources");
  } else {
    base["minResources"] = g.min_resources;
  }
  return base;
}

}  // namespace ddp::api::internal
