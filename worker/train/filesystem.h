// The few filesystem operations checkpoints need, behind an interface so tests can inject a
// crash in the middle of a write (LevelDB's Env, in miniature).
#ifndef DDP_WORKER_TRAIN_FILESYSTEM_H_
#define DDP_WORKER_TRAIN_FILESYSTEM_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::worker {

// Implementations must be thread-compatible. Paths are plain strings joined with '/'.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates or truncates `path`, writes `data`, fsyncs the file. Unavailable on I/O errors.
  virtual Status WriteFile(const std::string& path, const std::string& data) = 0;
  // NotFound when absent; Unavailable on I/O errors.
  virtual StatusOr<std::string> ReadFile(const std::string& path) = 0;
  // Atomic rename(2). AlreadyExists when `to` is a non-empty directory (nothing moved);
  // Unavailable on other errors.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // fsync of a directory, so a rename or a new entry in it is durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  // mkdir -p.
  virtual Status MakeDirs(const std::string& dir) = 0;
  // Names (not paths) of the entries in `dir`; NotFound when `dir` does not exist.
  virtual StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  // rm -rf; OK when absent.
  virtual Status RemoveAll(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
};

// The real POSIX filesystem. Stateless; thread-safe.
FileSystem* PosixFileSystem();

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_FILESYSTEM_H_
