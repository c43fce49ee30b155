// The label keys on the objects the operator creates. Every label key has one home: here (the API
// layer), so the planner, the controller's informers and tests name them alike.
#ifndef DDP_OPERATOR_API_LABELS_H_
#define DDP_OPERATOR_API_LABELS_H_

namespace ddp::api {

// Written by BuildWorkerPod/BuildService; read by the controller's pod informer (selector) and
// by ObservePod. The value is the DDPJob's name.
inline constexpr char kJobNameLabel[] = "ddp.dev/job-name";
// Written by BuildWorkerPod; read by ObservePod: the pod's node rank i (decimal).
inline constexpr char kReplicaIndexLabel[] = "ddp.dev/replica-index";
// Written by BuildWorkerPod; read by ObservePod: the rendezvous round the pod belongs to.
inline constexpr char kRoundLabel[] = "ddp.dev/round";
// Written by the pod builders; read by ObservePod: "worker", "spare" or "rendezvous" (recovery
// InPlace; common/group_contract.h). A pod without it is a worker (pods of older operators).
inline constexpr char kRoleLabel[] = "ddp.dev/role";
// Written by BuildSparePod; read by ObservePod: the spare's index k (decimal).
inline constexpr char kSpareIndexLabel[] = "ddp.dev/spare-index";

// Gang scheduling and queueing keys, as the schedulers document them (docs/gang-scheduling.md).
// Written on pods by plan::AddGangKeys; the template may not set them (api::Validate).
// Kueue: read by the operator on the DDPJob's metadata.labels (the job asks to be queued) and
// written on every pod; read by Kueue's pod integration.
inline constexpr char kKueueQueueNameLabel[] = "kueue.x-k8s.io/queue-name";
// Kueue: the pod group (and Workload) name; one group per round (plan::KueueGroupName).
inline constexpr char kKueuePodGroupNameLabel[] = "kueue.x-k8s.io/pod-group-name";
// Kueue: how many pods the group has (plan::GangPodCount), as a decimal string.
inline constexpr char kKueueGroupTotalCountAnnotation[] = "kueue.x-k8s.io/pod-group-total-count";
// Kueue: "false" on every pod: the operator never adds replacement pods to a group (a round).
inline constexpr char kKueueRetriableInGroupAnnotation[] = "kueue.x-k8s.io/retriable-in-group";
// Kueue's scheduling gate, added by its webhook and removed on admission; read by ObservePod.
inline constexpr char kKueueAdmissionGate[] = "kueue.x-k8s.io/admission";
// Volcano: the pod's PodGroup (scheduling.volcano.sh/v1beta1), as an annotation.
inline constexpr char kVolcanoGroupNameAnnotation[] = "scheduling.k8s.io/group-name";
// scheduler-plugins coscheduling: the pod's PodGroup (scheduling.x-k8s.io/v1alpha1), a label.
inline constexpr char kCoschedulingPodGroupLabel[] = "scheduling.x-k8s.io/pod-group";

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_LABELS_H_
