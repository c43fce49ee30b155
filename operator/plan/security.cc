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

// Rule 4's container: one of the project's images running as the image's own user and group.
bool RunsProjectImageAsItsUser(const json& container) {
  if (!container.is_object()) return false;
  const json image = container.value("image", json());
  if (!image.is_string() || !IsProjectWorkerImage(image.get<std::string>())) return false;
  const json ctx = container.value("securityContext", json());
  return !ctx.is_object() || (!ctx.contains("runAsUser") && !ctx.contains("runAsGroup"));
}

}  // namespace

bool IsProjectWorkerImage(const std::string& image) {
  std::string repo = image.substr(0, image.find('@'));
  const size_t slash = repo.rfind('/');
  const size_t colon = repo.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    repo.resize(colon);  // the tag, not a registry's port
  }
  const std::string name = slash == std::string::npos ? repo : repo.substr(slash + 1);
  return name == "ddp-worker" || name == "ddp-worker-cpu";
}

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
  if (!HasFsGroupVolume(*pod_spec)) return;
  if (pod_group.is_null() && (ctx == pod_spec->end() || ctx->is_object())) {
    // Rule 4: the pod names no group; the project's images need theirs on the volumes.
    const bool names_user = ctx != pod_spec->end() &&
                            (ctx->contains("runAsUser") || ctx->contains("fsGroup"));
    bool project_image = false;
    if (containers != pod_spec->end() && containers->is_array()) {
      for (const json& c : *containers) project_image = project_image || RunsProjectImageAsItsUser(c);
    }
    if (names_user || !project_image) return;
    pod_group = kProjectImageGroup;
  }
  if (!pod_group.is_number_integer()) return;
  json& pctx = (*pod_spec)["securityContext"];
  if (pctx.contains("fsGroup")) return;
  pctx["fsGroup"] = pod_group;
  if (!pctx.contains("fsGroupChangePolicy")) pctx["fsGroupChangePolicy"] = "OnRootMismatch";
}

}  // namespace ddp::plan
