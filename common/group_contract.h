// The contract of in-place recovery between the operator and ddp-worker (DESIGN.md "In-place
// recovery", "Drains, silent nodes and the budget", "Hot spares"): the environment the operator
// gives every pod of an InPlace job, the pod roles, the reasons a supervisor writes when its pod
// ends, and the series of the rendezvous pod's /metrics that the operator reads. Defined once
// here; the operator writes and reads them through plan/ and kube/, the worker through group/.
#ifndef DDP_COMMON_GROUP_CONTRACT_H_
#define DDP_COMMON_GROUP_CONTRACT_H_

#include <cstdint>
#include <optional>
#include <string>

namespace ddp::group {

// --- Environment (written by the operator's planner, read by ddp-worker) ---
// Host of the group's store: the job's rendezvous pod (its port is MASTER_PORT).
inline constexpr char kEnvStoreAddr[] = "DDP_STORE_ADDR";
// The pod's own name and UID (the UID from the downward API): a pod's identity in the group.
inline constexpr char kEnvPodName[] = "DDP_POD_NAME";
inline constexpr char kEnvPodUid[] = "DDP_POD_UID";
// The pod's IP (downward API status.podIP): where the rendezvous reaches a pod's /metrics.
inline constexpr char kEnvPodIp[] = "DDP_POD_IP";
// kRoleWorker, kRoleSpare or kRoleRendezvous.
inline constexpr char kEnvPodRole[] = "DDP_POD_ROLE";
// Seconds a member may stay silent before the group declares it lost (default kDefaultLiveness).
inline constexpr char kEnvLivenessTimeout[] = "DDP_LIVENESS_TIMEOUT";
// spec.failurePolicy.restartPolicy and retryableExitCodes ("75,76"): the supervisor applies
// them to its trainers exactly as the operator applies them to pods (failure_policy.h).
inline constexpr char kEnvRestartPolicy[] = "DDP_RESTART_POLICY";
inline constexpr char kEnvRetryableExitCodes[] = "DDP_RETRYABLE_EXIT_CODES";
// Where the supervisor writes why its pod ended (Kubernetes' terminationMessagePath; the
// operator reads it back as the container's terminated message). Default kDefaultTerminationLog.
inline constexpr char kEnvTerminationLog[] = "DDP_TERMINATION_LOG";
inline constexpr char kDefaultTerminationLog[] = "/dev/termination-log";

// Elastic in place (the rendezvous pod only): the most node ranks the group may grow to
// (spec.elastic.maxReplicas; default NNODES), and the file the kubelet projects the rendezvous
// pod's kGroupSizeAnnotation into (a downwardAPI volume): the size the operator asks for.
inline constexpr char kEnvMaxNodes[] = "DDP_MAX_NODES";
inline constexpr char kEnvGroupSizeFile[] = "DDP_GROUP_SIZE_FILE";
// Elastic in place (the rendezvous pod only): the fewest node ranks the group may shrink to by
// itself when members are lost and no spare takes their ranks (spec.elastic.minReplicas); unset
// or 0: it never does, the ranks wait for the replacements (worker/group/authority.h rule 10).
inline constexpr char kEnvMinNodes[] = "DDP_MIN_NODES";
// Written by the operator's planner on the rendezvous pod: the desired node count.
inline constexpr char kGroupSizeAnnotation[] = "ddp.dev/group-size";

inline constexpr int kDefaultLivenessSeconds = 10;

// Pod roles (label ddp.dev/role and kEnvPodRole).
inline constexpr char kRoleWorker[] = "worker";
inline constexpr char kRoleSpare[] = "spare";
inline constexpr char kRoleRendezvous[] = "rendezvous";

// --- Why a supervised pod ended: the first line of its termination message,
// "ddp: <Reason>: <text>". ---
enum class EndReason {
  kBudgetSpent,     // a heal was refused: restarts + recoveries reached maxRestarts
  kNotRetryable,    // a trainer exited with a code restartPolicy does not retry
  kGroupAbandoned,  // the group could not re-form in place: the round is over (not a new failure)
  kDeparted,        // SIGTERM reached this pod and not the whole job: it left (a disruption)
  kStopped,         // the whole job stopped together, with a checkpoint
  kFenced,          // the group had declared this pod lost; it came back too late
  kFinished,        // training done (exit 0): the steps trained and the group's recovery count
  kReleased,        // the job finished while this pod held no rank (an idle spare): exit 0, and
                    // not a finish of any rank
  kResized,         // the group shrank in place without this pod (a scale-down): exit 0, not a
                    // failure, not a finish
};
const char* EndReasonName(EndReason r);
// "ddp: BudgetSpent: rank 1 exited 137; 3 of 3 recoveries used".
std::string FormatEnd(EndReason r, const std::string& text);
// The reason of a termination message, when its first line is one of ours.
std::optional<EndReason> ParseEnd(const std::string& message);

// What a pod that trained to the end says as it exits 0 ("ddp: Finished: step 6000 of 6000; 1
// recoveries charged in the group this round"). Every ddp-worker pod writes it (the supervisor
// under InPlace, the launcher or the trainer under Restart); the operator takes an exit 0 as a
// finish only with it (DESIGN.md "Worker exit codes"), so a pod that exits 0 any other way is
// never a success. `recoveries`: the count the group charged this round, read from its store
// after every rank finished (so after every charge): a failure in the last seconds of a run
// reaches the status even if no scrape of the rendezvous pod saw it; absent under Restart.
struct FinishedReport {
  int64_t steps = 0;                  // the step every rank of the pod reached: the total
  std::optional<int64_t> recoveries;  // InPlace only
};
std::string FormatFinished(const FinishedReport& report);
// The report of a FormatFinished message; nullopt for any other message, and for one whose
// step is not its total. The message of an earlier supervisor ("ddp: Finished: N recoveries
// charged ...", written only when every trainer exited 0) parses with steps -1 (not known).
std::optional<FinishedReport> ParseFinished(const std::string& message);
// The bound the operator puts on every count a pod reports: a recoveries count past it is a lie
// or an overflow, never something to add to status.recoveries (ParseFinished refuses it).
inline constexpr int64_t kMaxFinishedCount = 1000000000;

// --- The rendezvous pod's /metrics (besides rank 0's series, which it serves as well) ---
inline constexpr char kGroupGeneration[] = "ddp_group_generation";
// Ranks in the group's current generation (elastic in place: below spec while it runs smaller).
inline constexpr char kGroupWorldSize[] = "ddp_group_world_size";
// Resizes done in place this round (a counter).
inline constexpr char kGroupResizes[] = "ddp_group_resizes_total";
// Node ranks the group runs without because members were lost with no idle pod to take their
// ranks (elastic in place: it went on smaller; it grows back as their replacements are ready).
inline constexpr char kGroupShrunkNodes[] = "ddp_group_shrunk_nodes";
// Pods silent past the liveness timeout that the authority has not declared lost: a mass silence
// it waits out, or too few pods heard (worker/group/authority.h rule 1).
inline constexpr char kGroupSilentHeld[] = "ddp_group_silent_pods_held";
// Failures healed in place this round, charged to maxRestarts (trainer restarts in the pods and
// replaced pods), and the budget left of this round's maxRestarts.
inline constexpr char kGroupRecoveries[] = "ddp_group_recoveries";
inline constexpr char kGroupBudgetLeft[] = "ddp_group_budget_left";
// 1 per pod holding node rank `node_rank` (labels kPodLabel, kNodeRankLabel).
inline constexpr char kGroupMember[] = "ddp_group_member";
// 1 per idle spare pod ready to take a rank (label kPodLabel).
inline constexpr char kGroupSpare[] = "ddp_group_spare";
// 1 per pod the group declared lost and fenced (labels kPodLabel, kUidLabel): the operator
// replaces it at once, without waiting out its grace period.
inline constexpr char kGroupFenced[] = "ddp_group_fenced";
// 1 per pod whose process ended while registered (labels kPodLabel, kUidLabel, kNodeRankLabel:
// the node rank it held then, -1 for an idle spare): the operator counts its end by what it held
// (an idle spare's end is counted nowhere), not by the report after it, which no longer lists it.
inline constexpr char kGroupEnded[] = "ddp_group_ended";
// 1 once the group gave up re-forming this round (the pods then exit kGroupAbandoned).
inline constexpr char kGroupAbandoned[] = "ddp_group_abandoned";
// Per rank whose trainer registered (labels kRankLabel, kPodLabel): the incarnation of its
// trainer, 0 for the first; +1 each time its pod's supervisor restarts it in place. The operator
// names the rank of a trainer exit healed inside a pod by it (status.incidents).
inline constexpr char kGroupTrainerIncarnation[] = "ddp_group_trainer_incarnation";
inline constexpr char kRankLabel[] = "rank";
inline constexpr char kPodLabel[] = "pod";
inline constexpr char kUidLabel[] = "uid";
inline constexpr char kNodeRankLabel[] = "node_rank";

}  // namespace ddp::group

#endif  // DDP_COMMON_GROUP_CONTRACT_H_
