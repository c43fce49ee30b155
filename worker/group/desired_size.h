// Elastic in place: the size the operator asks the group to run at (docs/in-place-recovery.md
// "Resize in place"). The operator writes it as an annotation of the rendezvous pod
// (ddp.dev/group-size); the kubelet projects that annotation into a file of the pod (a
// downwardAPI volume, DDP_GROUP_SIZE_FILE), which this reads. No network endpoint and no API
// credentials in the pod: only who may patch the job's pods can resize it.
#ifndef DDP_WORKER_GROUP_DESIRED_SIZE_H_
#define DDP_WORKER_GROUP_DESIRED_SIZE_H_

#include <string>

namespace ddp::worker::group {

// The desired node count in `text` (the file's content: a decimal integer, surrounding white
// space allowed), or -1 when it is empty (no size asked: the kubelet writes an absent annotation
// as an empty file), malformed or outside [1, max_nodes]. `*why` says why a non-empty text was
// refused ("" otherwise). Pure.
int ParseDesiredNodes(const std::string& text, int max_nodes, std::string* why);

// Reads `path` (at most 64 bytes) and parses it; -1 when it cannot be read. Logs a refusal once
// per distinct content. Thread-compatible: one reader per object.
class DesiredSizeFile {
 public:
  DesiredSizeFile(std::string path, int max_nodes) : path_(std::move(path)), max_(max_nodes) {}
  int Read();

 private:
  std::string path_;
  int max_;
  std::string last_refused_;
};

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_DESIRED_SIZE_H_
