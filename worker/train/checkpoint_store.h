// Checkpoint files on disk: the atomic write protocol, choosing the newest complete checkpoint,
// and pruning. Payloads are opaque bytes (train_state.h makes them); this module knows no torch.
//
// Layout under the checkpoint dir:
//   step-00000120/state.pt    the payload
//   step-00000120/MANIFEST    "format 1 / step 120 / bytes N / fnv1a64 HEX", one per line
//   step-00000120/DONE        a checkpoint without it never happened
//   step-00000120.1/          another copy of step 120: only when step-00000120 holds a torn
//                             copy (left by an older version of this protocol); readers take
//                             any complete copy of a step
//   .tmp-step-00000120.r3/    a write in progress by writer "r3" (no suffix: rank 0's periodic
//                             save), or a crashed one
//
// Invariants (so that concurrent saves of one step are safe, whoever is killed when):
//   1. a checkpoint directory only ever appears by one atomic rename of a temporary whose
//      payload, MANIFEST and DONE were all written and fsynced before;
//   2. no save writes into, renames or removes a checkpoint directory of the step it saves, nor
//      another writer's temporary of a step that is still kept; only pruning removes them.
// Hence a complete copy is never removed or replaced by another save of its step (the first
// complete copy wins; later writers discard theirs), and a writer killed at any point leaves at
// most its own temporary behind.
#ifndef DDP_WORKER_TRAIN_CHECKPOINT_STORE_H_
#define DDP_WORKER_TRAIN_CHECKPOINT_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/train/filesystem.h"

namespace ddp::worker {

// "step-00000120"; ParseCheckpointName inverts it, for copies ("step-00000120.1") too, and
// returns nullopt for other names (".tmp-...", "step-12a").
std::string CheckpointName(int64_t step);
std::optional<int64_t> ParseCheckpointName(const std::string& name);

// Pure: of the checkpoint steps present, which to delete so that the newest `keep` remain.
std::vector<int64_t> StepsToPrune(std::vector<int64_t> steps, int keep);

// Validates a MANIFEST against payload bytes: OK or DataLoss saying what differs.
Status VerifyManifest(const std::string& manifest, int64_t step, const std::string& payload);
std::string MakeManifest(int64_t step, const std::string& payload);

// A CheckpointStore object is not thread-safe; several stores (threads, processes, pods) may
// save into one directory at once, each with its own `writer` (see Save). `fs` is not owned and
// must outlive this.
class CheckpointStore {
 public:
  CheckpointStore(FileSystem* fs, std::string dir, int keep);

  // 1. when a complete copy of `step` exists, keep it and return OK (first complete copy wins);
  // 2. write payload, MANIFEST and DONE into .tmp-<name>[.<writer>]/ (each file fsynced), fsync
  //    that directory;
  // 3. rename it to <name>, fsync the checkpoint dir. When <name> exists: if complete, another
  //    writer won: remove ours, OK; if torn, try <name>.1, .2, .3 the same way;
  // 4. prune: complete steps beyond the newest `keep` (every copy), and temporaries and torn
  //    copies of steps older than the oldest one kept.
  // A crash before 3 leaves only the temporary. Unavailable on I/O errors (and when every name
  // of the step holds a torn copy). `writer` (e.g. "r3") must differ between concurrent
  // writers: several survivors save the same just-in-time step at once (trainer.cc); rank 0's
  // periodic saves use "".
  Status Save(int64_t step, const std::string& payload, const std::string& writer = "");

  struct Loaded {
    int64_t step = 0;
    std::string payload;
  };
  // Newest checkpoint whose DONE exists, whose MANIFEST matches its payload and that `accept`
  // (when given: e.g. a restore that may find the payload unreadable) returns OK for. Every
  // skipped one is logged as a WARNING with the reason. nullopt when none qualifies (or no dir).
  std::optional<Loaded> LoadLatest(const std::function<Status(const Loaded&)>& accept = nullptr);
  // Exactly `step`, from its first complete copy that verifies: NotFound when no copy is
  // complete, DataLoss when every complete one fails its checksum.
  StatusOr<Loaded> Load(int64_t step);

  // Steps with a checkpoint directory (complete or not), ascending, each once.
  std::vector<int64_t> ListSteps();
  // The newest step with a copy whose DONE marker exists (payloads are not read); nullopt when
  // none.
  std::optional<int64_t> NewestComplete();

 private:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // Directory names of every step's copies (complete or not), the plain name first.
  std::map<int64_t, std::vector<std::string>> Copies();
  bool HasCompleteCopy(int64_t step);
  void Prune();

  FileSystem* fs_;
  std::string dir_;
  int keep_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_CHECKPOINT_STORE_H_
