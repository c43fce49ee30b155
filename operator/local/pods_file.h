// pods.json in a local run's directory: every pod's process, for tools that act on a running
// local job from outside (`ddp-operator chaos --run-dir`): name, uid, role, index, round, the
// process group id, whether it is alive, its metrics port and its log. Written by write-temp +
// rename whenever one of those changes, so a reader never sees half a file.
// Not thread-safe: the run loop's thread only.
#ifndef DDP_OPERATOR_LOCAL_PODS_FILE_H_
#define DDP_OPERATOR_LOCAL_PODS_FILE_H_

#include <map>
#include <string>

#include "operator/local/executor.h"

namespace ddp::controller::local {

class PodsFile {
 public:
  explicit PodsFile(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  // Rewrites pods.json when what it says of `pods` changed since the last call.
  void Update(const std::map<std::string, LocalPod>& pods);

 private:
  std::string run_dir_;
  std::string last_;
};

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_PODS_FILE_H_
