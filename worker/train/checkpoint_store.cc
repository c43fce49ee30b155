// Checkpoint write protocol, selection and pruning.
#include "worker/train/checkpoint_store.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "common/logging.h"
#include "worker/train/checksum.h"

namespace ddp::worker {
namespace {

constexpr char kPayload[] = "state.pt";
constexpr char kManifest[] = "MANIFEST";
constexpr char kDone[] = "DONE";
constexpr char kTmpPrefix[] = ".tmp-";

}  // namespace

std::string HexU64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

std::string CheckpointName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "step-%08" PRId64, step);
  return buf;
}

std::optional<int64_t> ParseCheckpointName(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() <= 5) return std::nullopt;
  int64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::vector<int64_t> StepsToPrune(std::vector<int64_t> steps, int keep) {
  std::sort(steps.begin(), steps.end());
  if (keep < 1) keep = 1;
  if (static_cast<int>(steps.size()) <= keep) return {};
  steps.resize(steps.size() - keep);
  return steps;
}

std::string MakeManifest(int64_t step, const std::string& payload) {
  std::ostringstream m;
  m << "format 1\nstep " << step << "\nbytes " << payload.size() << "\nfnv1a64 "
    << HexU64(Fnv1a64(payload.data(), payload.size())) << "\n";
  return m.str();
}

Status VerifyManifest(const std::string& manifest, int64_t step, const std::string& payload) {
  const std::string want = MakeManifest(step, payload);
  if (manifest == want) return Status::OK();
  return Status::DataLoss("manifest does not match the payload (want \"" + want +
                          "\", found \"" + manifest + "\")");
}

CheckpointStore::CheckpointStore(FileSystem* fs, std::string dir, int keep)
    : fs_(fs), dir_(std::move(dir)), keep_(keep) {}

Status CheckpointStore::Save(int64_t step, const std::string& payload, const std::string& writer) {
  const std::string name = CheckpointName(step);
  const std::string tmp = Path(kTmpPrefix + name + (writer.empty() ? "" : "." + writer));
  const std::string final_dir = Path(name);
  // A just-in-time save by several survivors: the same step with the same state; one is enough.
  if (!writer.empty() && fs_->Exists(final_dir + "/" + kDone)) return Status::OK();
  DDP_RETURN_IF_ERROR(fs_->MakeDirs(dir_));
  DDP_RETURN_IF_ERROR(fs_->RemoveAll(tmp));
  DDP_RETURN_IF_ERROR(fs_->MakeDirs(tmp));
  DDP_RETURN_IF_ERROR(fs_->WriteFile(tmp + "/" + kPayload, payload));
  DDP_RETURN_IF_ERROR(fs_->WriteFile(tmp + "/" + kManifest, MakeManifest(step, payload)));
  DDP_RETURN_IF_ERROR(fs_->SyncDir(tmp));
  // A previous round may have left the same step (torn or complete); ours replaces it.
  DDP_RETURN_IF_ERROR(fs_->RemoveAll(final_dir));
  DDP_RETURN_IF_ERROR(fs_->Rename(tmp, final_dir));
  DDP_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  DDP_RETURN_IF_ERROR(fs_->WriteFile(final_dir + "/" + kDone, "ok\n"));
  DDP_RETURN_IF_ERROR(fs_->SyncDir(final_dir));
  // Prune: old complete ones beyond keep_, and leftovers of crashed writes.
  std::vector<int64_t> complete;
  auto names = fs_->ListDir(dir_);
  if (names.ok()) {
    for (const auto& n : *names) {
      if (n.rfind(kTmpPrefix, 0) == 0) {
        (void)fs_->RemoveAll(Path(n));
      } else if (auto s = ParseCheckpointName(n); s && fs_->Exists(Path(n) + "/" + kDone)) {
        complete.push_back(*s);
      }
    }
  }
  for (int64_t s : StepsToPrune(complete, keep_)) {
    if (Status st = fs_->RemoveAll(Path(CheckpointName(s))); !st.ok()) {
      DDP_LOG(WARNING) << "prune checkpoint: " << st.ToString();
    }
  }
  return Status::OK();
}

std::vector<int64_t> CheckpointStore::ListSteps() {
  std::vector<int64_t> steps;
  auto names = fs_->ListDir(dir_);
  if (!names.ok()) return steps;
  for (const auto& n : *names) {
    if (auto s = ParseCheckpointName(n)) steps.push_back(*s);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::optional<int64_t> CheckpointStore::NewestComplete() {
  std::vector<int64_t> steps = ListSteps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (fs_->Exists(Path(CheckpointName(*it)) + "/" + kDone)) return *it;
  }
  return std::nullopt;
}

StatusOr<CheckpointStore::Loaded> CheckpointStore::Load(int64_t step) {
  const std::string d = Path(CheckpointName(step));
  if (!fs_->Exists(d + "/" + kDone)) {
    return Status::NotFound(d + " has no DONE marker (torn write)");
  }
  auto manifest = fs_->ReadFile(d + "/" + kManifest);
  if (!manifest.ok()) return Status::DataLoss(d + ": " + manifest.status().message());
  auto payload = fs_->ReadFile(d + "/" + kPayload);
  if (!payload.ok()) return Status::DataLoss(d + ": " + payload.status().message());
  if (Status s = VerifyManifest(*manifest, step, *payload); !s.ok()) return s.WithContext(d);
  return Loaded{step, std::move(*payload)};
}

std::optional<CheckpointStore::Loaded> CheckpointStore::LoadLatest(
    const std::function<Status(const Loaded&)>& accept) {
  std::vector<int64_t> steps = ListSteps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    auto loaded = Load(*it);
    Status s = loaded.status();
    if (s.ok() && accept) s = accept(*loaded).WithContext(Path(CheckpointName(*it)));
    if (s.ok()) return std::move(*loaded);
    DDP_LOG(WARNING) << "skipping checkpoint: " << s.message();
  }
  return std::nullopt;
}

}  // namespace ddp::worker
