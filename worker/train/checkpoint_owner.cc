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
    return text.status().WithContext("read " + path);
  } else {
    CheckpointStore store(fs, dir, 1);
    if (std::optional<int64_t> newest = store.NewestComplete()) {
      DDP_LOG(WARNING) << dir << " holds checkpoints up to step " << *newest << " but no "
                       << kCheckpointOwnerFile << " file (an older ddp-worker wrote them): "
                       << "claiming them for " << (ours.job.empty() ? "this run" : ours.job)
                       << "; their parameter shapes are checked on restore";
    }
  }
  DDP_RETURN_IF_ERROR(fs->MakeDirs(dir));
  const std::string tmp = path + ".tmp";
  DDP_RETURN_IF_ERROR(fs->WriteFile(tmp, FormatOwner(ours)).WithContext("write " + tmp));
  DDP_RETURN_IF_ERROR(fs->Rename(tmp, path).WithContext("rename " + tmp));
  return fs->SyncDir(dir).WithContext("sync " + dir);
}

}  // namespace ddp::worker
