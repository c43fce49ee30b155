// Checkpoint files on disk: the atomic write protocol, choosing the newest complete checkpoint,
// and pruning. Payloads are opaque bytes (train_state.h makes them); this module knows no torch.
//
// Layout under the checkpoint dir:
//   step-00000120/state.pt    the payload
//   step-00000120/MANIFEST    "format 1 / step 120 / bytes N / fnv1a64 HEX", one per line
//   step-00000120/DONE        written last: a checkpoint without it never happened
//   .tmp-step-00000120/       a write in progress (or a crashed one; removed by the next Save)
#ifndef DDP_WORKER_TRAIN_CHECKPOINT_STORE_H_
#define DDP_WORKER_TRAIN_CHECKPOINT_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/train/filesystem.h"

namespace ddp::worker {

// "step-00000120"; ParseCheckpointName inverts it (nullopt for other names, e.g. ".tmp-...").
std::string CheckpointName(int64_t step);
std::optional<int64_t> ParseCheckpointName(const std::string& name);

// Pure: of the checkpoint steps present, which to delete so that the newest `keep` remain.
std::vector<int64_t> StepsToPrune(std::vector<int64_t> steps, int keep);

// Validates a MANIFEST against payload bytes: OK or DataLoss saying what differs.
Status VerifyManifest(const std::string& manifest, int64_t step, const std::string& payload);
std::string MakeManifest(int64_t step, const std::string& payload);

// Not thread-safe; one writer (rank 0) per directory, except just-in-time saves (Save's
// `writer`). `fs` is not owned and must outlive this.
class CheckpointStore {
 public:
  CheckpointStore(FileSystem* fs, std::string dir, int keep);

  // 1. write payload + MANIFEST into .tmp-<name>/ (each file fsynced), fsync the tmp dir;
  // 2. rename .tmp-<name> -> <name>, fsync the checkpoint dir;
  // 3. write <name>/DONE, fsync <name>/;   4. prune to the newest `keep` complete ones.
  // A crash before 3 leaves no DONE, so readers skip it. Unavailable on I/O errors.
  // `writer` (e.g. "r3") names the temporary directory for a just-in-time save, which several
  // survivors may attempt at once with identical state (trainer.cc): each writes its own
  // temporary, and a step already complete is left as it is (OK).
  Status Save(int64_t step, const std::string& payload, const std::string& writer = "");

  struct Loaded {
    int64_t step = 0;
    std::string payload;
  };
  // Newest checkpoint whose DONE exists, whose MANIFEST matches its payload and that `accept`
  // (when given: e.g. a restore that may find the payload unreadable) returns OK for. Every
  // skipped one is logged as a WARNING with the reason. nullopt when none qualifies (or no dir).
  std::optional<Loaded> LoadLatest(const std::function<Status(const Loaded&)>& accept = nullptr);
  // Exactly `step`: NotFound when absent or incomplete, DataLoss when its checksum fails.
  StatusOr<Loaded> Load(int64_t step);

  // Steps with a checkpoint directory (complete or not), ascending.
  std::vector<int64_t> ListSteps();
  // The newest step whose DONE marker exists (payloads are not read); nullopt when none.
  std::optional<int64_t> NewestComplete();

 private:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  FileSystem* fs_;
  std::string dir_;
  int keep_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_CHECKPOINT_STORE_H_
