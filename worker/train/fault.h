// Fault injection for end-to-end tests: DDP_FAULT=rank:step:exit:CODE | rank:step:kill |
// rank:step:term | rank:step:kill-pod | rank:step:kill-in-checkpoint | rank:0:kill-in-heal, where step may be step@N: only in incarnation N of that rank's trainer (the
// supervisor's DDP_INCARNATION; without @N the fault fires in every incarnation, a deterministic
// crash). `rank` is the rank the trainer process started as: a pod moved into a lost member's
// node rank (authority.h rule 10) does not inherit the fault that took the member down. Pure
// parsing plus one action function that main-loop code calls per step.
#ifndef DDP_WORKER_TRAIN_FAULT_H_
#define DDP_WORKER_TRAIN_FAULT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "worker/train/filesystem.h"

namespace ddp::worker {

// Written by tests (and humans reproducing a failure), read by the trainer.
inline constexpr char kEnvFault[] = "DDP_FAULT";

struct Fault {
  // kKillInCheckpoint: SIGKILL while this rank writes the checkpoint of `step` (its payload is
  // written, its manifest and DONE marker are not: a torn checkpoint).
  // kKillInHeal: SIGKILL when this rank is about to take part in a heal (a broadcast of the
  // training state after the group re-formed with a member behind); `step` is not used.
  // kKillPod: SIGKILL to the pod's main process (its supervisor under in-place recovery, which
  // takes its trainers with it): a pod lost, as to a node failure.
  enum class Kind { kExit, kKill, kTerm, kKillInCheckpoint, kKillInHeal, kKillPod };
  int rank = 0;
  int64_t step = 0;  // fires when this optimizer step is about to start
  Kind kind = Kind::kKill;
  int exit_code = 0;  // kExit only
  int incarnation = -1;  // -1: every incarnation
};

// Empty text -> nullopt. InvalidArgument naming DDP_FAULT for anything malformed.
StatusOr<std::optional<Fault>> ParseFault(const std::string& text);

// If `fault` targets (rank, step): kExit -> _exit(code) (no cleanup, like a crash); kKill ->
// SIGKILL to itself; kTerm -> SIGTERM to the pod's main process (its supervisor under in-place
// recovery, else itself), as an eviction delivers it (exercises the real preemption path).
void MaybeInjectFault(const std::optional<Fault>& fault, int rank, int64_t step);

// For a kKillInHeal fault of `rank`: SIGKILL (the caller is about to heal). Otherwise nothing.
void MaybeInjectHealFault(const std::optional<Fault>& fault, int rank);

// `base`, or for a kKillInCheckpoint fault of `rank` a file system that passes everything to
// `base` except that it kills the process at the fault's point (lives as long as the process).
FileSystem* WithCheckpointFault(FileSystem* base, const std::optional<Fault>& fault, int rank);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_FAULT_H_
