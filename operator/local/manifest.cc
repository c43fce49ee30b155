// Manifest parsing for local mode and the file watcher behind apply-by-editing.
#include "operator/local/manifest.h"

#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "operator/api/serialize.h"
#include "operator/api/unknown_fields.h"
#include "operator/api/validate.h"

namespace ddp::controller::local {

StatusOr<api::DDPJob> ParseLocalManifest(const std::string& text, const std::string& source) {
  StatusOr<std::vector<api::DDPJob>> jobs = api::ParseDDPJobYaml(text);
  if (!jobs.ok()) return Status::InvalidArgument(source + ": " + jobs.status().message());
  if (jobs.value().size() != 1) {
    return Status::InvalidArgument(source + ": local mode runs exactly one DDPJob; the file has " +
                                   std::to_string(jobs.value().size()));
  }
  api::DDPJob job = std::move(jobs.value()[0]);
  api::ApplyDefaults(&job);
  // A misspelt field must not quietly run with its default (a `recovry: InPlace` running
  // Restart): refused here as the API server refuses it at apply.
  std::vector<std::string> problems = api::UnknownFieldProblems(job.raw);
  for (std::string& p : api::Validate(job)) problems.push_back(std::move(p));
  if (!problems.empty()) {
    std::string msg = source + ": invalid DDPJob:";
    for (const std::string& p : problems) msg += "\n  " + p;
    return Status::InvalidArgument(msg);
  }
  return job;
}

namespace {
void Diff(const nlohmann::json& a, const nlohmann::json& b, const std::string& path,
          std::vector<std::string>* out) {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      std::string p = path.empty() ? it.key() : path + "." + it.key();
      Diff(it.value(), b.contains(it.key()) ? b[it.key()] : nlohmann::json(), p, out);
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) {
        Diff(nlohmann::json(), it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
      }
    }
    return;
  }
  if (a != b) {
    auto show = [](const nlohmann::json& v) { return v.is_null() ? std::string("(unset)") : v.dump(); };
    out->push_back(path + ": " + show(a) + " -> " + show(b));
  }
}
}  // namespace

std::vector<std::string> DiffJson(const nlohmann::json& before, const nlohmann::json& after,
                                  size_t limit) {
  std::vector<std::string> all;
  Diff(before, after, "", &all);
  if (all.size() > limit) {
    all.resize(limit);
    all.push_back("...");
  }
  return all;
}

bool ManifestWatcher::ReadStamp(Stamp* out) const {
  struct stat st;
  if (stat(path_.c_str(), &st) != 0) return false;
  out->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  out->size = st.st_size;
  out->inode = st.st_ino;
  return true;
}

StatusOr<std::string> ManifestWatcher::ReadInitial() {
  ReadStamp(&reported_);
  std::ifstream in(path_, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path_);
  std::stringstream buf;
  buf << in.rdbuf();
  content_hash_ = std::hash<std::string>()(buf.str());
  pending_ = reported_;
  return buf.str();
}

std::optional<std::string> ManifestWatcher::Poll() {
  Stamp now;
  if (!ReadStamp(&now) || now == reported_) return std::nullopt;
  if (!(now == pending_)) {  // still changing (or first sight): look again next poll
    pending_ = now;
    return std::nullopt;
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  reported_ = now;
  size_t hash = std::hash<std::string>()(buf.str());
  if (hash == content_hash_) return std::nullopt;  // touched, not changed
  content_hash_ = hash;
  return buf.str();
}

}  // namespace ddp::controller::local
