// Checkpoint payload (de)serialization with torch archives.
#include "worker/train/train_state.h"

#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
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

}  // namespace

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
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      root.write("cpu_rng", gen.get_state());
    }
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
    root.read("model", model_ar);
    root.read("optimizer", opt_ar);
    model.load(model_ar);
    opt.load(opt_ar);
    progress->step = ReadInt(root, "step");
    progress->sampler.epoch = ReadInt(root, "epoch");
    progress->sampler.offset = ReadInt(root, "sampler_offset");
    progress->world_size = ReadInt(root, "world_size");
    at::Tensor rng;
    root.read("cpu_rng", rng);
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng.cpu());
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
