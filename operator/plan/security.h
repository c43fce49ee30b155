// The identity a job's pods run with: the group beside the user. Pure; the pod builders call it.
// It adds only what the template leaves unset and never changes a value the template sets.
#ifndef DDP_OPERATOR_PLAN_SECURITY_H_
#define DDP_OPERATOR_PLAN_SECURITY_H_

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
// Malformed fields (a securityContext that is not an object, a non-integer id) are left as they
// are: validation and the API server report them.
void ApplyRunAsGroup(nlohmann::json* pod_spec);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_SECURITY_H_
