// RAII bf16 autocast for a CUDA forward pass. The API moved between LibTorch versions, so the
// version checks live here and nowhere else. A no-op on CPU.
#ifndef DDP_WORKER_TRAIN_AUTOCAST_H_
#define DDP_WORKER_TRAIN_AUTOCAST_H_

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace ddp::worker {

// Not thread-safe (autocast state is thread-local): create and destroy on the training thread.
class BF16Autocast {
 public:
  explicit BF16Autocast(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~BF16Autocast() {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  BF16Autocast(const BF16Autocast&) = delete;
  BF16Autocast& operator=(const BF16Autocast&) = delete;

 private:
  bool enabled_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_AUTOCAST_H_
