// Where `ddp-operator chaos` acts: a job run by `ddp-operator local` (its run directory) or a
// DDPJob in a cluster (through kubectl, with the user's own credentials and RBAC). A target
// injects one named failure, undoes what a failure leaves behind (a frozen pod thawed, a drained
// node uncordoned), and reads the job's status and step. Not thread-safe.
#ifndef DDP_OPERATOR_CHAOS_TARGET_H_
#define DDP_OPERATOR_CHAOS_TARGET_H_

#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "operator/api/types.h"
#include "operator/chaos/report.h"

namespace ddp::chaos {

class Target {
 public:
  virtual ~Target() = default;
  // The job's status as its operator last wrote it.
  virtual StatusOr<api::DDPJobStatus> ReadStatus() = 0;
  // Injects `f` now; returns one line saying what was done to which process or object.
  // FailedPrecondition when this target cannot inject it (and why); Forbidden when the
  // user's RBAC does not allow it (and which verb on which resource is missing).
  virtual StatusOr<std::string> Inject(const Failure& f) = 0;
  // Undoes what the last injection changed, and only that (freeze-pod: thaws the pod;
  // drain-node: uncordons the node if the injection cordoned it, not one it found cordoned).
  // Returns one line, "" when there was nothing to undo. Also after an injection that failed
  // midway (a node cordoned, then an eviction refused).
  virtual std::string Restore() = 0;
  // Rank 0's step now, for the timeline; nullopt when it cannot be read.
  virtual std::optional<double> ReadStep() = 0;
};

// A local run: `run_dir` holds status.json and pods.json (operator/local/pods_file.h). Local
// mode has no API server: delete-pod sends the pod's processes SIGTERM (what a delete does),
// freeze-pod SIGSTOP then SIGCONT, kill-rendezvous SIGKILL to the rendezvous pod's processes,
// kill-trainer SIGKILL to the trainer (its pid from its supervisor's log, killed only while it
// is in the pod's process group; a supervised pod whose log names no trainer of the rank is
// refused; an unsupervised pod's process is its trainer). drain-node is a
// cluster's (FailedPrecondition: one machine is one node).
StatusOr<std::unique_ptr<Target>> OpenLocal(const std::string& run_dir);

// A DDPJob `ns`/`job` through `kubectl` (`kubeconfig` "" = kubectl's default). It touches only
// the job's pods in `ns` (label ddp.dev/job-name): drain-node refuses a node that holds none of
// them (FailedPrecondition), cordons it unless it was already, and evicts the job's pods on it
// by name (not `kubectl drain`, whose pod selector spans every namespace).
StatusOr<std::unique_ptr<Target>> OpenCluster(const std::string& kubeconfig, const std::string& ns,
                                              const std::string& job);

}  // namespace ddp::chaos

#endif  // DDP_OPERATOR_CHAOS_TARGET_H_
