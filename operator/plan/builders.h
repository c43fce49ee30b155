// Pure builders for the objects the operator creates: the headless Service and worker Pods.
// They merge into the user's template and never replace it: the user's containers, env, volumes,
// resources, nodeSelector, tolerations, affinity, labels and annotations are kept.
#ifndef DDP_OPERATOR_PLAN_BUILDERS_H_
#define DDP_OPERATOR_PLAN_BUILDERS_H_

#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/types.h"

namespace ddp::plan {

// Local mode runs pods as processes on one host: rank 0 is 127.0.0.1 and ports are picked free.
struct PodOverrides {
  std::string master_addr;  // "" = MasterAddr(job)
  int master_port = 0;      // 0 = spec.rendezvous.port
  int metrics_port = 0;     // 0 = spec.metrics.port
};

// Headless Service "<job>": clusterIP None, publishNotReadyAddresses, selector on the job label,
// the rendezvous port; owned (controller reference) by the job when the job has a uid.
nlohmann::json BuildService(const api::DDPJob& job);

// Pod "<job>-worker-<index>" of `round`, one of `replicas`: the template's metadata and spec with
// name, namespace, labels (job, index, round), owner reference (when job.uid is set), hostname,
// subdomain,
// restartPolicy Never, and the worker container's env (RendezvousEnv, operator values first,
// then the user's own env) and ports. REQUIRES: job defaulted and valid; 0 <= index < replicas.
nlohmann::json BuildWorkerPod(const api::DDPJob& job, int index, int round, int replicas,
                              const PodOverrides& overrides = {});

// Spare pod "<job>-spare-<k>" of `round` (recovery InPlace): as a worker pod, but labelled role
// spare and spare-index k, and without NODE_RANK/RANK: the group gives it a rank when a member
// is lost. REQUIRES: 0 <= k < spec.failurePolicy.spares.
nlohmann::json BuildSparePod(const api::DDPJob& job, int k, int round, int replicas,
                             const PodOverrides& overrides = {});

// Rendezvous pod "<job>-rendezvous" of `round` (recovery InPlace): hosts the group's store and
// authority (`ddp-worker rendezvous`, the worker container's image). Only what it needs of the
// template: the pod's scheduling and security fields, image pull secrets, and the worker
// container's image, pull policy and security context; no volumes, no accelerators (small CPU
// and memory requests), a readiness and a liveness probe on /healthz.
nlohmann::json BuildRendezvousPod(const api::DDPJob& job, int round, int replicas,
                                  const PodOverrides& overrides = {});

// The controller ownerReference to `job` (apiVersion, kind, name, uid, controller,
// blockOwnerDeletion).
nlohmann::json OwnerReference(const api::DDPJob& job);

// Index of the container that gets the env in a PodSpec's containers: the one named "worker",
// else 0; -1 when there are none (or the first is not an object). Never throws.
int WorkerContainerIndex(const nlohmann::json& pod_spec);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_BUILDERS_H_
