// Whose checkpoints a directory holds: the file OWNER beside the step-N/ directories records the
// job ("namespace/name") and the model configuration that wrote them, so that a job never
// silently resumes from another job's checkpoints or from another model's parameters. The
// parameters' own shapes are checked when a checkpoint is restored (train_state.h); this is the
// coarser, earlier check, with a message that names both jobs.
//
// OWNER's format, one "key value" per line (unknown keys are ignored, for later versions):
//   format 1
//   job ml/mingpt-kind              (absent for a run by hand: --checkpoint-job unset)
//   model kind=mingpt vocab=65 block=64 layers=2 heads=2 embd=64 mlp=256 tie=0 file=
#ifndef DDP_WORKER_TRAIN_CHECKPOINT_OWNER_H_
#define DDP_WORKER_TRAIN_CHECKPOINT_OWNER_H_

#include <string>

#include "common/status.h"
#include "worker/model/model.h"
#include "worker/train/filesystem.h"

namespace ddp::worker {

inline constexpr char kCheckpointOwnerFile[] = "OWNER";

struct CheckpointOwner {
  std::string job;    // "namespace/name"; empty: not recorded (a run by hand)
  std::string model;  // ModelFingerprint
};

// The model configuration that decides what a checkpoint's parameters mean: kind, vocabulary,
// context, depth, heads, width, MLP width, tied embeddings and a TorchScript file. Not the
// optimizer or the schedule: a job may resume with another learning rate or more steps.
std::string ModelFingerprint(const ModelConfig& model, int64_t vocab_size);

std::string FormatOwner(const CheckpointOwner& owner);
// InvalidArgument for text that is not an OWNER file (no "format 1" line, no model line).
StatusOr<CheckpointOwner> ParseOwner(const std::string& text);

// Pure: OK when `ours` may resume from checkpoints `recorded` wrote. FailedPrecondition (exit 2)
// naming both when the jobs differ (both recorded) or the models differ. A directory claimed by
// a job may not be resumed by a run without one, and vice versa a job may adopt a directory a
// run by hand wrote (its model must match).
Status CheckOwner(const CheckpointOwner& recorded, const CheckpointOwner& ours,
                  const std::string& dir);

// Rank 0 before a resume: reads <dir>/OWNER and checks it (CheckOwner); when absent, writes it
// (temporary, fsync, rename, fsync of dir) so the next run is checked. A directory with
// checkpoints but no OWNER (written by an older ddp-worker) is left unclaimed, with a WARNING:
// the parameter shapes are checked on restore, and a refused restore leaves it as it was. Errors: FailedPrecondition from CheckOwner,
// DataLoss for an OWNER that is not one. An I/O error (no directory can be there, a failed
// write) is a WARNING and OK: nothing can be resumed from there, and every checkpoint write
// will fail and say so, as a failed checkpoint always does.
Status ClaimCheckpointDir(FileSystem* fs, const std::string& dir, const CheckpointOwner& ours);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_CHECKPOINT_OWNER_H_
