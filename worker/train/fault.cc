// DDP_FAULT parsing and injection.
#include "worker/train/fault.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <sstream>
#include <vector>

#include "common/logging.h"
#include "worker/contract/env_names.h"
#include "worker/train/checkpoint_store.h"

namespace ddp::worker {
namespace {

bool ToInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

}  // namespace

StatusOr<std::optional<Fault>> ParseFault(const std::string& text) {
  if (text.empty()) return std::optional<Fault>();
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  const Status bad = Status::InvalidArgument(
      std::string(kEnvFault) + "='" + text +
      "': want rank:step:exit:CODE, rank:step:kill, rank:step:term, rank:step:kill-pod, "
      "rank:step:kill-in-checkpoint or rank:0:kill-in-heal (step may be step@incarnation)");
  int64_t rank = 0, step = 0, incarnation = -1;
  if (parts.size() < 3) return bad;
  if (size_t at = parts[1].find('@'); at != std::string::npos) {
    if (!ToInt(parts[1].substr(at + 1), &incarnation) || incarnation < 0) return bad;
    parts[1].resize(at);
  }
  if (!ToInt(parts[0], &rank) || !ToInt(parts[1], &step) || rank < 0 || step < 0) return bad;
  Fault f;
  f.incarnation = static_cast<int>(incarnation);
  f.rank = static_cast<int>(rank);
  f.step = step;
  if (parts[2] == "kill" && parts.size() == 3) {
    f.kind = Fault::Kind::kKill;
  } else if (parts[2] == "kill-in-heal" && parts.size() == 3) {
    f.kind = Fault::Kind::kKillInHeal;
  } else if (parts[2] == "kill-in-checkpoint" && parts.size() == 3) {
    f.kind = Fault::Kind::kKillInCheckpoint;
  } else if (parts[2] == "kill-pod" && parts.size() == 3) {
    f.kind = Fault::Kind::kKillPod;
  } else if (parts[2] == "term" && parts.size() == 3) {
    f.kind = Fault::Kind::kTerm;
  } else if (parts[2] == "exit" && parts.size() == 4) {
    int64_t code = 0;
    if (!ToInt(parts[3], &code) || code < 0 || code > 255) return bad;
    f.kind = Fault::Kind::kExit;
    f.exit_code = static_cast<int>(code);
  } else {
    return bad;
  }
  return std::optional<Fault>(f);
}

void MaybeInjectFault(const std::optional<Fault>& fault, int rank, int64_t step) {
  if (!fault || fault->rank != rank || fault->step != step) return;
  if (fault->kind == Fault::Kind::kKillInCheckpoint || fault->kind == Fault::Kind::kKillInHeal) {
    return;  // WithCheckpointFault's, MaybeInjectHealFault's
  }
  DDP_LOG(WARNING) << kEnvFault << ": injecting fault on rank " << rank << " at step " << step;
  switch (fault->kind) {
    case Fault::Kind::kExit:
      _exit(fault->exit_code);
    case Fault::Kind::kKill:
      kill(getpid(), SIGKILL);
      break;
    case Fault::Kind::kTerm:
    case Fault::Kind::kKillPod: {
      // To the pod's main process, as an eviction (SIGTERM) or a lost node (SIGKILL) would hit
      // it: the supervisor when there is one (a supervised trainer leaves SIGTERM to it), else
      // this process.
      const char* supervised = std::getenv(kEnvSupervised);
      const bool to_pod = supervised != nullptr && std::string(supervised) == "1";
      kill(to_pod ? getppid() : getpid(), fault->kind == Fault::Kind::kTerm ? SIGTERM : SIGKILL);
      break;
    }
    case Fault::Kind::kKillInCheckpoint:
    case Fault::Kind::kKillInHeal:
      break;
  }
}

void MaybeInjectHealFault(const std::optional<Fault>& fault, int rank) {
  if (!fault || fault->kind != Fault::Kind::kKillInHeal || fault->rank != rank) return;
  DDP_LOG(WARNING) << kEnvFault << ": injecting fault on rank " << rank << " while it heals";
  kill(getpid(), SIGKILL);
}

namespace {

// Kills the process when the manifest of checkpoint `name` is about to be written (see
// CheckpointStore::Save: payload, then manifest, then DONE, then the rename).
class CheckpointFaultFs : public FileSystem {
 public:
  CheckpointFaultFs(FileSystem* base, std::string name, int rank, int64_t step)
      : base_(base), name_(std::move(name)), rank_(rank), step_(step) {}
  Status WriteFile(const std::string& path, const std::string& data) override {
    const std::string manifest = "/MANIFEST";
    if (path.find(name_) != std::string::npos && path.size() > manifest.size() &&
        path.compare(path.size() - manifest.size(), manifest.size(), manifest) == 0) {
      DDP_LOG(WARNING) << kEnvFault << ": injecting fault on rank " << rank_
                       << " while writing the checkpoint of step " << step_;
      kill(getpid(), SIGKILL);
    }
    return base_->WriteFile(path, data);
  }
  StatusOr<std::string> ReadFile(const std::string& p) override { return base_->ReadFile(p); }
  Status Rename(const std::string& a, const std::string& b) override { return base_->Rename(a, b); }
  Status SyncDir(const std::string& d) override { return base_->SyncDir(d); }
  Status MakeDirs(const std::string& d) override { return base_->MakeDirs(d); }
  StatusOr<std::vector<std::string>> ListDir(const std::string& d) override { return base_->ListDir(d); }
  Status RemoveAll(const std::string& p) override { return base_->RemoveAll(p); }
  bool Exists(const std::string& p) override { return base_->Exists(p); }

 private:
  FileSystem* base_;
  std::string name_;
  int rank_;
  int64_t step_;
};

}  // namespace

FileSystem* WithCheckpointFault(FileSystem* base, const std::optional<Fault>& fault, int rank) {
  if (!fault || fault->kind != Fault::Kind::kKillInCheckpoint || fault->rank != rank) return base;
  static CheckpointFaultFs* fs = new CheckpointFaultFs(base, CheckpointName(fault->step), rank,
                                                       fault->step);
  return fs;
}

}  // namespace ddp::worker
