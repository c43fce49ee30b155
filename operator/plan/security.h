// The identity a job's pods run with: the group beside the user, and the group the project's
// images need on their volumes. Pure; the pod builders call it. It adds only what the template
// leaves unset and never changes a value the template sets.
#ifndef DDP_OPERATOR_PLAN_SECURITY_H_
#define DDP_OPERATOR_PLAN_SECURITY_H_

#include <string>

#include <nlohmann/json.hpp>

namespace ddp::plan {

// On a PodSpec (JSON), in place:
//  1. spec.securityContext with runAsUser and no runAsGroup gets runAsGroup = runAsUser: the
//     runtime otherwise runs the process with group 0 (the image's USER group is dropped once
//     runAsUser replaces its user), and files it writes on a volume are <uid>:root. The
//     project's images run as 65532:65532. To keep group 0, set runAsGroup: 0.
//  2. A container's securityContext the same, unless the pod's runAsGroup applies to it.
//  3. spec.securityContext.fsGroup, when unset, gets the pod's runAsGroup (after 1) if the pod
//     mounts a volume fsGroup applies to (a PersistentVolumeClaim, emptyDir, ... anything but
//     hostPath, whose ownership the kubelet never changes), with fsGroupChangePolicy
//     OnRootMismatch (a volume already owned by the group is not walked again).
//  4. A pod that names no user or group (no runAsUser, runAsGroup or fsGroup in its
//     securityContext) gets fsGroup kProjectImageGroup, with OnRootMismatch, when it mounts a
//     volume fsGroup applies to and a container runs one of the project's worker images
//     (IsProjectWorkerImage) without a runAsUser or runAsGroup of its own: those images run as
//     65532:65532, and a volume the kubelet mounts is root's, so without it ddp-worker could
//     write no OWNER file and no checkpoint (the job would train and save nothing). Other
//     images are left as they are.
// Malformed fields (a securityContext that is not an object, a non-integer id) are left as they
// are: validation and the API server report them.
void ApplyRunAsGroup(nlohmann::json* pod_spec);

// The uid and gid of the project's images (`USER 65532:65532` in dockerfiles/).
inline constexpr int kProjectImageGroup = 65532;

// Whether `image` is one of the project's worker images: its repository's last path component
// is ddp-worker or ddp-worker-cpu, under any registry, with any tag or digest
// ("registry.example/ml/ddp-worker:0.1.0", "ddp-worker-cpu@sha256:...").
bool IsProjectWorkerImage(const std::string& image);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_SECURITY_H_
