// POSIX implementation of FileSystem.
#include "worker/train/filesystem.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ddp::worker {
namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::Unavailable(what + " " + path + ": " + std::strerror(errno));
}

// nftw callback, children before their directory (FTW_DEPTH); links are removed, not followed.
int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = type == FTW_DP ? ::rmdir(path) : ::unlink(path);
  return rc == 0 || errno == ENOENT ? 0 : -1;
}

class PosixFs : public FileSystem {
 public:
  Status WriteFile(const std::string& path, const std::string& data) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("open", path);
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Status s = Errno("write", path);
        ::close(fd);
        return s;
      }
      done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
      Status s = Errno("fsync", path);
      ::close(fd);
      return s;
    }
    if (::close(fd) != 0) return Errno("close", path);
    return Status::OK();
  }

  StatusOr<std::string> ReadFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return Errno("open", path);
    }
    std::string out;
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Status s = Errno("read", path);
        ::close(fd);
        return s;
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      if (errno == ENOTEMPTY || errno == EEXIST) {
        return Status::AlreadyExists("rename " + from + ": " + to + " exists and is not empty");
      }
      return Errno("rename " + from + " ->", to);
    }
    return Status::OK();
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno("open dir", dir);
    int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) return Errno("fsync dir", dir);
    return Status::OK();
  }

  Status MakeDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::Unavailable("mkdir -p " + dir + ": " + ec.message());
    return Status::OK();
  }

  StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return Status::NotFound(dir + " does not exist");
      return Errno("opendir", dir);
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    return names;
  }

  // POSIX nftw rather than std::filesystem::remove_all: a PyTorch wheel's libtorch.so defines and
  // exports its own std::filesystem::remove_all, which the dynamic linker may bind in place of
  // libstdc++'s; that copy crashed (a call through a null pointer) in a test on a GPU machine.
  Status RemoveAll(const std::string& path) override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      return errno == ENOENT ? Status::OK() : Errno("stat", path);
    }
    if (::nftw(path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
      return Errno("rm -rf", path);
    }
    return Status::OK();
  }

  bool Exists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }
};

}  // namespace

FileSystem* PosixFileSystem() {
  static PosixFs* fs = new PosixFs();
  return fs;
}

}  // namespace ddp::worker
