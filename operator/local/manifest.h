// The manifest file of `ddp-operator local`: one DDPJob, parsed, defaulted and validated, and a
// watcher that notices when the user saves a new version (apply by editing).
#ifndef DDP_OPERATOR_LOCAL_MANIFEST_H_
#define DDP_OPERATOR_LOCAL_MANIFEST_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"

namespace ddp::controller::local {

// Parses `text` (from `source`, for messages), which must hold exactly one DDPJob, applies the
// defaults and validates. InvalidArgument lists every problem, one per line, prefixed by source.
StatusOr<api::DDPJob> ParseLocalManifest(const std::string& text, const std::string& source);

// The leaf fields that differ between two JSON values, as "spec.replicas: 2 -> 3" (at most
// `limit` entries, then "..."). Pure.
std::vector<std::string> DiffJson(const nlohmann::json& before, const nlohmann::json& after,
                                  size_t limit = 6);

// Notices new versions of a file by polling its mtime and size, then its content's hash. A change
// is reported only once the file has stood still for one poll, so a save in progress is not read
// half-written. Thread-compatible.
class ManifestWatcher {
 public:
  explicit ManifestWatcher(std::string path) : path_(std::move(path)) {}
  // Reads the file and remembers it as the current version.
  StatusOr<std::string> ReadInitial();
  // The new content when the file changed since the last reported version, else nullopt.
  // A file that vanished (an editor's rename in progress) is not a change.
  std::optional<std::string> Poll();

 private:
  struct Stamp {
    int64_t mtime_ns = -1;
    int64_t size = -1;
    ino_t inode = 0;
    bool operator==(const Stamp& o) const {
      return mtime_ns == o.mtime_ns && size == o.size && inode == o.inode;
    }
  };
  bool ReadStamp(Stamp* out) const;

  std::string path_;
  Stamp reported_;   // stamp of the version last reported (or read initially)
  Stamp pending_;    // a differing stamp seen by the previous poll
  size_t content_hash_ = 0;
};

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_MANIFEST_H_
