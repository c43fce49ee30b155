// The pod supervisor of in-place recovery (DESIGN.md "In-place recovery", "Drains, silent nodes
// and the budget", "Hot spares"): the process a pod of an InPlace job runs (`ddp-worker` or
// `ddp-worker launch` with DDP_RECOVERY=InPlace). It trains nothing itself.
//
// Protocol:
//   1. validate the config as the trainers will (exit 2 before anything starts);
//   2. register the pod with the group (group/pod_client.h) and, for a pod that replaces a member
//      lost to a failure (DDP_REPLACES), charge that failure to the budget once; a refused
//      charge ends the pod (exit 75, BudgetSpent);
//   3. wait for a node rank from the group's authority: a worker pod normally gets its own
//      (NODE_RANK), a spare (or a worker whose rank a spare took) waits, its trainers started as
//      warm standbys, until it gets a lost member's; then start (or activate) one trainer per
//      local rank with RANK = node rank * NPROC_PER_NODE + LOCAL_RANK. A worker pod created for
//      a node rank past the group's size (an elastic growth's newcomer) whose node rank is free
//      does not wait idle: it activates its standbys for that node rank at once (prepare/<id>),
//      and they read the config, build the data and the model, warm up and wait outside the
//      group, so that the group grows once they are ready (authority.h rule 9); given another
//      node rank instead, or one of them ends first, the prepared trainers are killed and the
//      pod goes on as any other;
//   4. a trainer that exits is judged by failure_policy.h exactly as the operator judges pods:
//      0 is done; a failure restartPolicy retries is healed in place (a new incarnation, the warm
//      standby when one is ready) once the budget is charged; otherwise the pod ends with the
//      trainer's own exit code (NotRetryable or BudgetSpent);
//   5. SIGTERM: the pod announces it is leaving and waits for the authority's verdict: the whole
//      job stops (the trainers checkpoint together, exit 75, Stopped) or this pod departs (its
//      trainers are killed, its state lives on in the others; exit 75, Departed). With no store
//      to announce it to (the rendezvous pod was lost with it), it announces it to the new store
//      once registered there; with no verdict within the liveness timeout and 5 s, its trainers
//      stop with a checkpoint (a stop agreed in the collectives: the others' trainers stop too),
//      and a pod holding no rank, which has nothing to save, ends at once (Departed);
//   6. the group's other decisions: fenced (exit 75, Fenced), abandoned (the trainers save once
//      and exit; exit 75, GroupAbandoned), a trainer declared stalled (killed, then step 4),
//      every rank finished (a pod holding no rank ends with 0, Released); a pod holding no rank
//      that finds the group stopped or abandoned ends as Stopped or GroupAbandoned (exit 75),
//      never 0: a stop that nobody asked of the job is not its end (the operator resumes it);
//   7. the store lost (the rendezvous pod was replaced): register again, keeping the node rank;
//   8. every trainer exited 0 (each reached the last step): the pod exits 0 and says so,
//      `ddp: Finished: step N of N; R recoveries ...`, the only exit 0 the operator takes as a
//      finish (group_contract.h FinishedReport).
// Why the pod ended goes to DDP_TERMINATION_LOG (group_contract.h), read back by the operator.
#ifndef DDP_WORKER_LAUNCH_SUPERVISOR_H_
#define DDP_WORKER_LAUNCH_SUPERVISOR_H_

#include <string>
#include <vector>

namespace ddp::worker {

// Written by the supervisor for its trainers: the trainer's and its pod's identity in the group.
inline constexpr char kEnvTrainerId[] = "DDP_TRAINER_ID";
inline constexpr char kEnvPodIdentity[] = "DDP_POD_IDENTITY";

// Returns the pod's exit code (0, 2, 75, or a trainer's own code); the caller exits with it.
int SuperviseMain(const char* self, const std::vector<std::string>& args);

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_SUPERVISOR_H_
