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

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_LABELS_H_
