// OWNER: the job and model a checkpoint directory belongs to (see checkpoint_owner.h).
#include "worker/train/checkpoint_owner.h"

#include <sstream>

#include "common/logging.h"
#include "worker/train/checkpoint_store.h"

namespace ddp::worker {

std::string ModelFingerprint(const ModelConfig& m, int64_t vocab_size) {
  std::ostringstream s;
  s << "kind=" << m.kind << " vocab=" << vocab_size << " block=" << m.block_size
    << " layers=" << m.n_layer << " heads=" << m.n_head << " embd=" << m.n_embd
    << " mlp=" << m.mlp_hidden << " tie=" << (m.tie_embeddings ? 1 : 0) << " file=" << m.file;
  return s.str();
}

std::string FormatOwner(const CheckpointOwner& o) {
  std::string out = "format 1\n";
  if (!o.job.empty()) out += "job " + o.job + "\n";
  out += "model " + o.model + "\n";
  return out;
}

StatusOr<CheckpointOwner> ParseOwner(const std::string& text) {
  CheckpointOwner o;
  bool format = false, model = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "format") {
      if (value != "1") return Status::InvalidArgument("format " + value + " is not 1");
      format = true;
    } else if (key == "job") {
      o.job = value;
    } else if (key == "model") {
      o.model = value;
      model = true;
    }
  }
  if (!format || !model) return Status::InvalidArgument("no 'format 1' and 'model' lines");
  return o;
}

Status CheckOwner(const CheckpointOwner& recorded, const CheckpointOwner& ours,
                  const std::string& dir) {
  const auto who = [](const std::string& job) {
    return job.empty() ? std::string("a run without a job (--checkpoint-job unset)") : "job " + job;
  };
  if (!recorded.job.empty() && recorded.job != ours.job) {
    return Status::FailedPrecondition(
        "the checkpoints in " + dir + " belong to " + who(recorded.job) + ", not to " +
        who(ours.job) + " (its " + kCheckpointOwnerFile + " file). HINT: give this job a " +
        "checkpoint directory of its own; to take them over, delete " + dir + "/" +
        kCheckpointOwnerFile);
  }
  if (recorded.model != ours.model) {
    return Status::FailedPrecondition(
        "the checkpoints in " + dir + " were written by another model configuration: " +
        recorded.model + "; this run's is " + ours.model + ". HINT: resume with the model " +
        "flags they were written with, or start over in another checkpoint directory");
  }
  return Status::OK();
}

Status ClaimCheckpointDir(FileSystem* fs, const std::string& dir, const CheckpointOwner& ours) {
  const std::string path = dir + "/" + kCheckpointOwnerFile;
  StatusOr<std::string> text = fs->ReadFile(path);
  if (text.ok()) {
    StatusOr<CheckpointOwner> recorded = ParseOwner(*text);
    if (!recorded.ok()) {
      return Status::DataLoss(path + ": " + recorded.status().message() +
                              ". HINT: it is not an OWNER file of ddp-worker; move it away");
    }
    DDP_RETURN_IF_ERROR(CheckOwner(*recorded, ours, dir));
    // A directory a run by hand wrote, adopted by a job: record the job from now on.
    if (recorded->job == ours.job) return Status::OK();
  } else if (text.status().code() != StatusCode::kNotFound) {
    // No directory can be there (a file in the way, no permission): nothing can be resumed from
    // it, and every checkpoint write will fail and say so (the stop's log, the failure counter).
    // Training goes on, as it does when a checkpoint write fails.
    DDP_LOG(WARNING) << "cannot read " << path << ": " << text.status().ToString()
                     << "; checkpoints in " << dir << " will fail";
    return Status::OK();
  } else {
    CheckpointStore store(fs, dir, 1);
    if (std::optional<int64_t> newest = store.NewestComplete()) {
      DDP_LOG(WARNING) << dir << " holds checkpoints up to step " << *newest << " but no "
                       << kCheckpointOwnerFile << " file (an older ddp-worker wrote them): "
                       << "their parameter shapes are checked on restore; the directory is "
                       << "not claimed (a refused restore must not make it another model's)";
      return Status::OK();
    }
  }
  const std::string tmp = path + ".tmp";
  Status s = fs->MakeDirs(dir);
  if (s.ok()) s = fs->WriteFile(tmp, FormatOwner(ours)).WithContext("write " + tmp);
  if (s.ok()) s = fs->Rename(tmp, path).WithContext("rename " + tmp);
  if (s.ok()) s = fs->SyncDir(dir).WithContext("sync " + dir);
  // As for a failed checkpoint write: said, not fatal (the next checkpoint fails and says so).
  if (!s.ok()) DDP_LOG(WARNING) << "cannot record the owner of " << dir << ": " << s.ToString();
  return Status::OK();
}

}  // namespace ddp::worker
