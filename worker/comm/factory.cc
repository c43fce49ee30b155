// MakeCommunicator: the one place that knows which backends were compiled in.
#include "worker/comm/factory.h"

#include <cstdlib>

#include "worker/comm/gloo_communicator.h"
#include "worker/comm/nccl_api.h"
#include "worker/comm/nccl_communicator.h"

namespace ddp::worker {

bool HaveNccl() { return DDP_HAVE_NCCL != 0; }

std::optional<int64_t> DeviceMemoryInUse(const c10::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
#if DDP_HAVE_NCCL
  return CudaMemoryInUse(device.has_index() ? device.index() : 0);
#else
  return std::nullopt;
#endif
}

StatusOr<std::unique_ptr<Communicator>> MakeCommunicator(c10::intrusive_ptr<c10d::Store> store,
                                                         int rank, int size,
                                                         const c10::Device& device,
                                                         std::chrono::milliseconds timeout) {
  if (device.is_cpu()) {
    GlooOptions options;
    if (const char* ifname = std::getenv(kEnvGlooSocketIfname); ifname != nullptr && *ifname) {
      options.interface = ifname;
    }
    return GlooCommunicator::Create(std::move(store), rank, size, timeout, options);
  }
  if (device.is_cuda()) {
#if DDP_HAVE_NCCL
    return NcclCommunicator::Create(std::move(store), rank, size,
                                    device.has_index() ? device.index() : 0, timeout, RealNcclApi());
#else
    return Status::FailedPrecondition(
        "device " + device.str() + " needs NCCL, but this ddp-worker was built without it. HINT: "
        "build with CUDA and NCCL installed (CUDA_HOME or NCCL_ROOT), or run on CPU with Gloo");
#endif
  }
  return Status::InvalidArgument("no communicator for device " + device.str() +
                                 " (supported: cpu via Gloo, cuda via NCCL)");
}

}  // namespace ddp::worker
