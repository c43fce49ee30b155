// runAsGroup beside runAsUser, and fsGroup where it applies (see security.h).
#include "operator/plan/security.h"

namespace ddp::plan {
namespace {

using nlohmann::json;

// runAsGroup = runAsUser on a securityContext object that has the one and not the other.
// Returns the group the context ends up with, or null when it sets none.
json DefaultGroup(json* ctx) {
  if (!ctx->is_object()) return nullptr;
  auto group = ctx->find("runAsGroup");
  if (group != ctx->end()) return *group;
  auto user = ctx->find("runAsUser");
  if (user == ctx->end() || !user->is_number_integer()) return nullptr;
  (*ctx)["runAsGroup"] = *user;
  return *user;
}

// Whether the kubelet applies fsGroup to any of the pod's volumes: every volume source but
// hostPath (the kubelet changes the ownership of volumes it provisions or mounts itself).
bool HasFsGroupVolume(const json& spec) {
  auto volumes = spec.find("volumes");
  if (volumes == spec.end() || !volumes->is_array()) return false;
  for (const json& v : *volumes) {
    if (v.is_object() && !v.contains("hostPath") && v.size() > 1) return true;  // name + source
  }
  return false;
}

}  // namespace

void ApplyRunAsGroup(json* pod_spec) {
  if (!pod_spec->is_object()) return;
  json pod_group;  // null: the pod sets no group
  auto ctx = pod_spec->find("securityContext");
  if (ctx != pod_spec->end()) pod_group = DefaultGroup(&*ctx);
  auto containers = pod_spec->find("containers");
  if (containers != pod_spec->end() && containers->is_array()) {
    for (json& c : *containers) {
      if (!c.is_object()) continue;
      auto cctx = c.find("securityContext");
      if (cctx == c.end() || !cctx->is_object()) continue;
      // The pod's group applies to a container that names no group of its own.
      if (!pod_group.is_null() && !cctx->contains("runAsGroup")) continue;
      DefaultGroup(&*cctx);
    }
  }
  if (!pod_group.is_number_integer() || !HasFsGroupVolume(*pod_spec)) return;
  json& pctx = (*pod_spec)["securityContext"];
  if (pctx.contains("fsGroup")) return;
  pctx["fsGroup"] = pod_group;
  if (!pctx.contains("fsGroupChangePolicy")) pctx["fsGroupChangePolicy"] = "OnRootMismatch";
}

}  // namespace ddp::plan
