// Checkpoint write protocol, selection and pruning.
#include "worker/train/checkpoint_store.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
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

namespace {

// "step-<digits>" at the start of `name`, then either the end or "." and a non-empty suffix
// that `suffix_ok` accepts.
std::optional<int64_t> ParseStep(const std::string& name, bool (*suffix_ok)(char)) {
  if (name.rfind("step-", 0) != 0) return std::nullopt;
  size_t i = 5;
  int64_t step = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) step = step * 10 + (name[i] - '0');
  if (i == 5) return std::nullopt;
  if (i == name.size()) return step;
  if (name[i] != '.' || i + 1 == name.size()) return std::nullopt;
  for (size_t j = i + 1; j < name.size(); ++j) {
    if (!suffix_ok(name[j])) return std::nullopt;
  }
  return step;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAnyChar(char) { return true; }

// The step of a temporary ".tmp-step-00000120[.writer]"; nullopt for other names.
std::optional<int64_t> ParseTmpName(const std::string& name) {
  if (name.rfind(kTmpPrefix, 0) != 0) return std::nullopt;
  return ParseStep(name.substr(sizeof(kTmpPrefix) - 1), IsAnyChar);
}

// Names of the directory a save publishes to, in order: the plain name, then copies.
constexpr int kCopyNames = 4;

}  // namespace

std::optional<int64_t> ParseCheckpointName(const std::string& name) {
  return ParseStep(name, IsDigit);
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
  // 1. The first complete copy wins: survivors save the same state of the same step.
  if (HasCompleteCopy(step)) return Status::OK();
  // 2. A temporary of our own (a crashed attempt of this writer may have left it), DONE included:
  //    it becomes a checkpoint only by the rename below, complete or not at all.
  DDP_RETURN_IF_ERROR(fs_->MakeDirs(dir_));
  DDP_RETURN_IF_ERROR(fs_->RemoveAll(tmp));
  DDP_RETURN_IF_ERROR(fs_->MakeDirs(tmp));
  DDP_RETURN_IF_ERROR(fs_->WriteFile(tmp + "/" + kPayload, payload));
  DDP_RETURN_IF_ERROR(fs_->WriteFile(tmp + "/" + kManifest, MakeManifest(step, payload)));
  DDP_RETURN_IF_ERROR(fs_->WriteFile(tmp + "/" + kDone, "ok\n"));
  DDP_RETURN_IF_ERROR(fs_->SyncDir(tmp));
  // 3. Published onto a name nobody holds; never into, onto or over another copy.
  for (int k = 0; k < kCopyNames; ++k) {
    const std::string target = Path(k == 0 ? name : name + "." + std::to_string(k));
    Status renamed = fs_->Rename(tmp, target);
    if (renamed.ok()) {
      DDP_RETURN_IF_ERROR(fs_->SyncDir(dir_));
      Prune();
      return Status::OK();
    }
    if (renamed.code() != StatusCode::kAlreadyExists) return renamed;
    if (fs_->Exists(target + "/" + kDone)) {  // another writer's complete copy came first
      (void)fs_->RemoveAll(tmp);
      return Status::OK();
    }
    // A torn copy, left by a writer of an older protocol that wrote DONE after its rename.
  }
  (void)fs_->RemoveAll(tmp);
  return Status::Unavailable(Path(name) + ": torn copies hold all " + std::to_string(kCopyNames) +
                             " names of this step. HINT: remove its directories without a DONE "
                             "file");
}

void CheckpointStore::Prune() {
  std::map<int64_t, std::vector<std::string>> copies = Copies();
  std::vector<int64_t> complete;
  for (const auto& [step, dirs] : copies) {
    for (const std::string& d : dirs) {
      if (fs_->Exists(Path(d) + "/" + kDone)) {
        complete.push_back(step);
        break;
      }
    }
  }
  if (complete.empty()) return;
  // Everything of a step older than the oldest one kept goes: its copies, torn or complete, and
  // its temporaries (no writer is still saving a step that old).
  const size_t pruned = StepsToPrune(complete, keep_).size();
  const int64_t oldest_kept = complete[pruned];
  auto names = fs_->ListDir(dir_);
  if (!names.ok()) return;
  for (const std::string& n : *names) {
    std::optional<int64_t> s = ParseCheckpointName(n);
    if (!s) s = ParseTmpName(n);
    if (!s || *s >= oldest_kept) continue;
    if (Status st = fs_->RemoveAll(Path(n)); !st.ok()) {
      DDP_LOG(WARNING) << "prune checkpoint: " << st.ToString();
    }
  }
}

std::map<int64_t, std::vector<std::string>> CheckpointStore::Copies() {
  std::map<int64_t, std::vector<std::string>> copies;
  auto names = fs_->ListDir(dir_);
  if (!names.ok()) return copies;
  for (const auto& n : *names) {
    if (auto s = ParseCheckpointName(n)) copies[*s].push_back(n);
  }
  for (auto& [step, dirs] : copies) std::sort(dirs.begin(), dirs.end());  // the plain name first
  return copies;
}

bool CheckpointStore::HasCompleteCopy(int64_t step) {
  std::map<int64_t, std::vector<std::string>> copies = Copies();
  for (const std::string& d : copies[step]) {
    if (fs_->Exists(Path(d) + "/" + kDone)) return true;
  }
  return false;
}

std::vector<int64_t> CheckpointStore::ListSteps() {
  std::vector<int64_t> steps;
  for (const auto& [step, dirs] : Copies()) steps.push_back(step);
  return steps;
}

std::optional<int64_t> CheckpointStore::NewestComplete() {
  std::map<int64_t, std::vector<std::string>> copies = Copies();
  for (auto it = copies.rbegin(); it != copies.rend(); ++it) {
    for (const std::string& d : it->second) {
      if (fs_->Exists(Path(d) + "/" + kDone)) return it->first;
    }
  }
  return std::nullopt;
}

StatusOr<CheckpointStore::Loaded> CheckpointStore::Load(int64_t step) {
  Status corrupt;
  std::map<int64_t, std::vector<std::string>> copies = Copies();
  for (const std::string& name : copies[step]) {
    const std::string d = Path(name);
    if (!fs_->Exists(d + "/" + kDone)) continue;
    auto manifest = fs_->ReadFile(d + "/" + kManifest);
    auto payload = manifest.ok() ? fs_->ReadFile(d + "/" + kPayload) : manifest.status();
    Status s = payload.ok() ? VerifyManifest(*manifest, step, *payload).WithContext(d)
                            : Status::DataLoss(d + ": " + payload.status().message());
    if (s.ok()) return Loaded{step, std::move(*payload)};
    if (corrupt.ok()) corrupt = s;
  }
  if (!corrupt.ok()) return corrupt;
  return Status::NotFound(Path(CheckpointName(step)) + " has no DONE marker (torn write)");
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
