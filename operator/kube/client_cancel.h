// A one-shot cancellation flag that blocking calls (KubeClient::Watch) can subscribe to.
#ifndef DDP_OPERATOR_KUBE_CLIENT_CANCEL_H_
#define DDP_OPERATOR_KUBE_CLIENT_CANCEL_H_

#include <functional>
#include <map>
#include <mutex>

namespace ddp::controller {

// Thread-safe. Cancel() is idempotent and runs every registered callback exactly once, on the
// cancelling thread; a callback added after Cancel() runs at once, inside AddCallback.
class Cancellation {
 public:
  void Cancel();
  bool cancelled() const;
  // Returns an id for RemoveCallback. Callbacks must not call back into this object.
  int AddCallback(std::function<void()> callback);
  // After it returns the callback is not running and will not run.
  void RemoveCallback(int id);

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  int next_id_ = 0;
  std::map<int, std::function<void()>> callbacks_;
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_CLIENT_CANCEL_H_
