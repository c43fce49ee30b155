// Checkpoint payload (de)serialization with torch archives.
#include "worker/train/train_state.h"

#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "worker/train/checksum.h"

namespace ddp::worker {
namespace {

at::Tensor Scalar(int64_t v) { return at::scalar_tensor(v, at::kLong); }

int64_t ReadInt(torch::serialize::InputArchive& a, const char* key) {
  at::Tensor t;
  a.read(key, t);
  return t.item<int64_t>();
}

// Key of device i's CUDA generator state; "cuda_rng_count" says how many there are.
std::string CudaRngKey(int i) { return "cuda_rng_" + std::to_string(i); }

at::Generator CudaGenerator(int i) {
  const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(i));
  return at::globalContext().defaultGenerator(device);
}

// The default generators' states: the CPU's and every visible CUDA device's (as
// torch.cuda.get_rng_state_all does). Through ATen's device-generic generator API, so this
// compiles and runs against a LibTorch without CUDA (then there are no CUDA generators).
void WriteRngStates(torch::serialize::OutputArchive& root) {
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    root.write("cpu_rng", gen.get_state());
  }
  const int n = VisibleCudaDevices();
  root.write("cuda_rng_count", Scalar(n));
  for (int i = 0; i < n; ++i) {
    auto gen = CudaGenerator(i);
    std::lock_guard<std::mutex> lock(gen.mutex());
    root.write(CudaRngKey(i), gen.get_state());
  }
}

struct RngStates {
  at::Tensor cpu;
  std::vector<at::Tensor> cuda;
};

// Reads what WriteRngStates wrote. A payload written before CUDA generators were saved has no
// "cuda_rng_count": it holds none. FailedPrecondition when the payload holds more CUDA
// generators than this process sees (their states would be lost, so a resumed run would not
// draw what the saved one would have).
StatusOr<RngStates> ReadRngStates(torch::serialize::InputArchive& root) {
  RngStates s;
  root.read("cpu_rng", s.cpu);
  at::Tensor count;
  const int64_t n = root.try_read("cuda_rng_count", count) ? count.item<int64_t>() : 0;
  const int visible = VisibleCudaDevices();
  if (n < 0 || n > visible) {
    return Status::FailedPrecondition(
        "the checkpoint holds the random generator states of " + std::to_string(n) +
        " CUDA device(s) but this process sees " + std::to_string(visible) +
        ". HINT: resume with at least as many GPUs visible to each worker process as the run "
        "that saved it");
  }
  for (int64_t i = 0; i < n; ++i) {
    at::Tensor t;
    root.read(CudaRngKey(static_cast<int>(i)), t);
    s.cuda.push_back(t.cpu());
  }
  return s;
}

void SetRngStates(const RngStates& s) {
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(s.cpu.cpu());
  }
  for (size_t i = 0; i < s.cuda.size(); ++i) {
    auto gen = CudaGenerator(static_cast<int>(i));
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(s.cuda[i]);
  }
}

}  // namespace

int VisibleCudaDevices() {
  return at::hasCUDA() ? static_cast<int>(at::detail::getCUDAHooks().getNumGPUs()) : 0;
}

StatusOr<std::string> SerializeTrainState(torch::nn::Module& model, torch::optim::Optimizer& opt,
                                          const TrainProgress& progress) {
  try {
    torch::serialize::OutputArchive root, model_ar, opt_ar;
    model.save(model_ar);
    opt.save(opt_ar);
    root.write("model", model_ar);
    root.write("optimizer", opt_ar);
    root.write("step", Scalar(progress.step));
    root.write("epoch", Scalar(progress.sampler.epoch));
    root.write("sampler_offset", Scalar(progress.sampler.offset));
    root.write("world_size", Scalar(progress.world_size));
    WriteRngStates(root);
    std::ostringstream out;
    root.save_to(out);
    return out.str();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("serialize checkpoint: ") + e.what());
  }
}

Status RestoreTrainState(const std::string& bytes, const c10::Device& device,
                         torch::nn::Module& model, torch::optim::Optimizer& opt,
                         TrainProgress* progress) {
  try {
    torch::serialize::InputArchive root, model_ar, opt_ar;
    std::istringstream in(bytes);
    root.load_from(in, device);
    // The generators first: a payload this process cannot restore leaves the model untouched.
    StatusOr<RngStates> rng = ReadRngStates(root);
    if (!rng.ok()) return rng.status();
    root.read("model", model_ar);
    root.read("optimizer", opt_ar);
    model.load(model_ar);
    opt.load(opt_ar);
    progress->step = ReadInt(root, "step");
    progress->sampler.epoch = ReadInt(root, "epoch");
    progress->sampler.offset = ReadInt(root, "sampler_offset");
    progress->world_size = ReadInt(root, "world_size");
    SetRngStates(*rng);
    return Status::OK();
  } catch (const std::exception& e) {
    std::string what = e.what();
    return Status::DataLoss("unreadable checkpoint payload: " + what.substr(0, what.find('\n')));
  }
}

std::string ParamChecksum(const torch::nn::Module& model) {
  uint64_t h = kFnvOffset;
  for (const auto& p : model.parameters()) {
    at::Tensor c = p.detach().to(at::kCPU).contiguous();
    h = Fnv1a64(c.data_ptr(), c.numel() * c.element_size(), h);
  }
  return HexU64(h);
}

}  // namespace ddp::worker
