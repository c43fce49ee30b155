// Names of the objects the operator creates. The label keys are API: operator/api/labels.h.
#ifndef DDP_OPERATOR_PLAN_NAMES_H_
#define DDP_OPERATOR_PLAN_NAMES_H_

#include <string>

#include "operator/api/labels.h"
#include "operator/api/types.h"

namespace ddp::plan {

// The container that gets the rendezvous env: this name, else the template's first container.
inline constexpr char kWorkerContainerName[] = "worker";
// Port names on the Service and worker container.
inline constexpr char kRendezvousPortName[] = "rendezvous";
inline constexpr char kMetricsPortName[] = "metrics";

// "<job>-worker-<i>"; also the pod's hostname.
std::string PodName(const api::DDPJob& job, int index);
// "<job>-spare-<k>" (recovery InPlace, spec.failurePolicy.spares).
std::string SparePodName(const api::DDPJob& job, int index);
// "<job>-rendezvous" (recovery InPlace): the pod that hosts the group's store.
std::string RendezvousPodName(const api::DDPJob& job);
// "<job>-rendezvous.<job>.<namespace>.svc": the store's stable DNS name (DDP_STORE_ADDR).
std::string StoreAddr(const api::DDPJob& job);
// "<job>": the headless Service; also the pods' subdomain.
std::string ServiceName(const api::DDPJob& job);
// "ddp.dev/job-name=<job>": status.selector and the pod list selector.
std::string Selector(const api::DDPJob& job);
// "<job>-worker-0.<job>.<namespace>.svc": rank 0's stable DNS name.
std::string MasterAddr(const api::DDPJob& job);
// "<namespace>/<name>" ("default" for an empty namespace): who owns the job's checkpoints.
std::string JobIdentity(const api::DDPJob& job);
// "<spec.checkpoint.path>/<namespace>/<name>": each job checkpoints into a directory of its own,
// so jobs sharing a volume never read each other's; a job re-applied under the same name finds
// its own and resumes (docs/failures-and-elasticity.md, "Whose checkpoints"). "" without a path.
std::string CheckpointDir(const api::DDPJob& job);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_NAMES_H_
