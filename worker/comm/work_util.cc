// Shared helpers of the communicators (see work_util.h).
#include "worker/comm/work_util.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>

namespace ddp::worker {
namespace {

class FinishedWork : public Work {
 public:
  explicit FinishedWork(Status s) : status_(std::move(s)) {}
  Status Wait() override { return status_; }
  bool IsCompleted() override { return true; }
  double seconds() const override { return 0; }

 private:
  Status status_;
};

}  // namespace

std::shared_ptr<Work> MakeFinishedWork(Status status) {
  return std::make_shared<FinishedWork>(std::move(status));
}

std::vector<std::vector<size_t>> GroupByDtype(const std::vector<at::Tensor>& ts) {
  std::vector<std::vector<size_t>> groups;
  std::vector<std::pair<at::ScalarType, c10::Device>> keys;
  for (size_t i = 0; i < ts.size(); ++i) {
    std::pair<at::ScalarType, c10::Device> key{ts[i].scalar_type(), ts[i].device()};
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      groups.push_back({i});
    } else {
      groups[static_cast<size_t>(it - keys.begin())].push_back(i);
    }
  }
  return groups;
}

at::Tensor FlattenTensors(const std::vector<at::Tensor>& ts, const std::vector<size_t>& idx) {
  std::vector<at::Tensor> pieces;
  pieces.reserve(idx.size());
  for (size_t i : idx) pieces.push_back(ts[i].reshape({-1}));
  return at::cat(pieces);
}

void UnflattenInto(const at::Tensor& flat, std::vector<at::Tensor>& ts,
                   const std::vector<size_t>& idx) {
  at::NoGradGuard no_grad;
  int64_t offset = 0;
  for (size_t i : idx) {
    const int64_t n = ts[i].numel();
    ts[i].copy_(flat.narrow(0, offset, n).view(ts[i].sizes()));
    offset += n;
  }
}

std::string BackendErrorText(const std::exception& e) {
  if (auto* c10e = dynamic_cast<const c10::Error*>(&e)) return c10e->what_without_backtrace();
  return e.what();
}

Status StatusFromBackendError(const std::string& what, const std::string& full_message) {
  // c10::Error::what() appends a C++ backtrace; the first part is what a reader needs.
  std::string message = full_message.substr(0, full_message.find("Exception raised from"));
  while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back()))) message.pop_back();
  std::string lower = message;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos) {
    return Status::DeadlineExceeded(what + ": " + message);
  }
  return Status::Unavailable(what + ": " + message);
}

std::string GroupSequence(c10d::Store& store, int rank) {
  return std::to_string(store.add("group_seq/" + std::to_string(rank), 1));
}

}  // namespace ddp::worker
