// Kubernetes resource coordinates (group, version, plural) and the REST paths built from them.
// Pure value types; no I/O.
#ifndef DDP_OPERATOR_KUBE_RESOURCE_H_
#define DDP_OPERATOR_KUBE_RESOURCE_H_

#include <string>

namespace ddp::controller {

// One resource type of the API. Thread-compatible value.
struct Resource {
  std::string group;    // "" for the core group
  std::string version;  // "v1", "v1alpha1"
  std::string plural;   // "pods": the path segment
  std::string kind;     // "Pod": the object's kind
  bool namespaced = true;

  // The collection path when `name` is empty, else the object path:
  //   kPods.Path("ml", "x") == "/api/v1/namespaces/ml/pods/x"
  //   kDDPJobs.Path("")     == "/apis/ddp.dev/v1alpha1/ddpjobs" (all namespaces)
  // Cluster-scoped resources ignore `ns`. Names are used verbatim (Kubernetes names are URL-safe).
  std::string Path(const std::string& ns, const std::string& name = "") const;
  // "v1" for core, else "group/version": the apiVersion field of objects of this resource.
  std::string ApiVersion() const;
  // "pods" or "ddpjobs.ddp.dev": for messages.
  std::string Display() const;
};

inline const Resource kPods{"", "v1", "pods", "Pod", true};
inline const Resource kServices{"", "v1", "services", "Service", true};
inline const Resource kEvents{"", "v1", "events", "Event", true};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
inline const Resource kDDPJobs{"ddp.dev", "v1alpha1", "ddpjobs", "DDPJob", true};
inline const Resource kNodes{"", "v1", "nodes", "Node", false};
inline const Resource kNetworkPolicies{"networking.k8s.io", "v1", "networkpolicies",
                                       "NetworkPolicy", true};
// Gang schedulers' PodGroups (CRDs that the cluster may not have): Volcano's and the
// scheduler-plugins coscheduling plugin's.
inline const Resource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup",
                                        true};
inline const Resource kCoschedulingPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups",
                                             "PodGroup", true};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_RESOURCE_H_
